package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/bootfabric/bootfabric/routing"
	"github.com/bootfabric/bootfabric/topology"
)

// routeCommand computes and checks unicast forwarding tables.
func routeCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "route",
		Usage: "compute and check fat-tree forwarding tables (dmodk, dmodc, updn, minhop, vtftr)",
		Description: "The topology is a spec (pgft:3;8,8,8;1,8,8;1,1,1 or fat2d:16), an ibnetdiscover file,\n" +
			"a preset or a machine YAML file. Faults (lines 'switch NAME|0xGUID' or 'link A B') are removed\n" +
			"before routing. The summary always checks that every healthy pair is routed; --check adds\n" +
			"up*/down* order, deadlock freedom per virtual channel and congestion.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Required: true, Usage: "topology spec or file"},
			withChoices(cli.StringFlag{Name: "engine", Aliases: []string{"e"}, Value: "dmodc", Usage: "routing engine: " + strings.Join(routing.Engines(), ", ")},
				routing.Engines()...),
			&cli.StringFlag{Name: "faults", Usage: "file of links and switches to remove"},
			&cli.StringFlag{Name: "roots", Usage: "updn root switches, comma-separated names or GUIDs (default: the top level)"},
			&cli.BoolFlag{Name: "check", Usage: "also check up*/down* order and deadlock freedom and measure congestion"},
			&cli.IntFlag{Name: "shifts", Usage: "shift permutations measured by --check (0: all up to 2048 endpoints, else 1024 evenly spaced; N >= endpoints: all)"},
			&cli.StringFlag{Name: "dump", Usage: "write the tables to this file in OpenSM's LFT dump layout (load with opensm -R file -U FILE); needs the fabric's GUIDs and LIDs"},
			&cli.StringFlag{Name: "load", Usage: "check tables read from an LFT dump (OpenSM's opensm-lfts.dump, or --dump's) instead of computing them"},
			&cli.StringFlag{Name: "net", Usage: "also write the fabric (after --faults) as an ibsim net file, to simulate it"},
			&cli.StringFlag{Name: "lids", Usage: "the fabric's port GUIDs and LIDs for --dump: OpenSM's guid2lid file, or an ibnetdiscover or saquery output"},
			timingsFlag(),
			outputFlag("table", "json", "yaml"),
		},
		Action: func(c *cli.Context) error { return runRoute(e, c, c.String("output")) },
	}
}

func runRoute(e *env, c *cli.Context, format string) error {
	spec := c.String("topology")
	fab, nfaults, err := routeFabric(c, spec)
	if err != nil {
		return err
	}
	r, err := computeRoute(e, c, fab)
	if err != nil {
		return err
	}
	tb := r.tables
	rep := checkRoute(e, c, tb)
	// Loaded tables that miss pairs are a result to print (valid false, exit 1), not bad input.
	if rep.Unreachable > 0 && tb.Engine() != "file" {
		return unrouted(e, fab, tb, r.engine.Name(), r.opt, rep, nfaults)
	}
	dumpFiles, dumpCheck, err := dumpRoute(e, c, fab, tb)
	if err != nil {
		return err
	}
	sum := &routing.Summary{Topology: cmp.Or(fab.Name, spec), Engine: tb.Engine(), Faults: nfaults,
		TableBytes: tb.Bytes(), BytesPerEntry: tb.BytesPerEntry(), Report: rep, DumpFiles: dumpFiles, DumpCheck: dumpCheck}
	if c.Bool("timings") {
		sum.ComputeSeconds, sum.Took = r.took.Seconds(), r.took
	}
	if err := writeResult(e.stdout, format, sum, sum.WriteTable); err != nil {
		return err
	}
	return routing.Verdict(rep, dumpCheck)
}

// routeRun is one engine's run: the engine, its options, its tables and the time they took.
type routeRun struct {
	engine routing.Engine
	opt    routing.Options
	tables *routing.Tables
	took   time.Duration
}

// computeRoute sets the engine up from the flags and computes (or with --load reads) the tables.
func computeRoute(e *env, c *cli.Context, fab *topology.Fabric) (*routeRun, error) {
	var opt routing.Options
	var err error
	if opt.Roots, err = fab.LookupSwitches(c.String("roots")); err != nil {
		return nil, badInput("--roots: %w", err)
	}
	bar := e.progressBar("route "+c.String("engine"), 0, "")
	opt.Progress = bar.Func()
	eng, err := routing.New(c.String("engine"), opt)
	if err != nil {
		return nil, badInput("--engine: %v", err)
	}
	start := time.Now()
	tb, err := computeOrLoad(e, c, fab, eng, opt)
	bar.Done()
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	e.log.Info("routed", zap.String("engine", tb.Engine()), zap.Duration("took", took),
		zap.Int("switches", len(tb.Switches())), zap.Int("endpoints", len(tb.Dests())))
	return &routeRun{engine: eng, opt: opt, tables: tb, took: took}, nil
}

// checkRoute checks the tables: up*/down* order for the fat-tree engines and congestion with
// --check.
func checkRoute(e *env, c *cli.Context, tb *routing.Tables) *routing.Report {
	fatTree := slices.Contains([]string{"dmodk", "dmodc", "updn"}, tb.Engine())
	bar := e.progressBar("route check", 0, "")
	rep := routing.Check(tb, routing.CheckOptions{
		UpDown:     c.Bool("check") && fatTree,
		Congestion: c.Bool("check"),
		MaxShifts:  c.Int("shifts"),
		Progress:   bar.Func(),
	})
	bar.Done()
	if rep.Healthy < rep.Endpoints {
		e.log.Warn("endpoints without a route (cut off by faults, or on failed leaves)", zap.Int("count", rep.Endpoints-rep.Healthy))
	}
	return rep
}

// unrouted is the error for pairs left unreachable: the engine's restriction when the fabric
// connects them (with the engines that route it), else the fabric or its faults.
func unrouted(e *env, fab *topology.Fabric, tb *routing.Tables, engine string, opt routing.Options, rep *routing.Report, nfaults int) error {
	var pairs []string
	for _, p := range rep.FirstUnreachable {
		pairs = append(pairs, p.Src+"->"+p.Dst)
	}
	if routing.Connected(fab.Graph, tb) {
		return badInput("%s", routing.MismatchCause(fab, engine, opt, rep.Unreachable, pairs)+routing.Advice(fab, engine, opt))
	}
	what := "the fabric is disconnected"
	if nfaults > 0 {
		what = "the faults disconnect the fabric"
	}
	return badInput("%s for %s: %d unreachable pairs, first: %s", what, engine, rep.Unreachable, strings.Join(pairs, ", "))
}

// dumpRoute writes --dump (with the lanes of tables on several virtual channels) and, with
// --check, reads it back.
func dumpRoute(e *env, c *cli.Context, fab *topology.Fabric, tb *routing.Tables) (files []string, dc *routing.DumpCheck, err error) {
	if path := c.String("dump"); path != "" {
		var fe *routing.DumpFileError
		if files, err = routing.WriteDumpFiles(path, fab, tb); errors.As(err, &fe) {
			return nil, nil, fmt.Errorf("--dump %w", err)
		} else if err != nil {
			return nil, nil, fmt.Errorf("--dump: %w", err)
		}
		if c.Bool("check") {
			if dc, err = routing.CheckDumpFiles(fab, files); err != nil {
				return nil, nil, fmt.Errorf("--check: reading back the dump: %w", err)
			}
		}
	} else if tb.NumVCs() > 1 {
		e.log.Warn("the tables use several virtual channels: --dump also writes the path SLs and the SL-to-VL tables that deploy them", zap.Int("vcs", tb.NumVCs()))
	}
	return files, dc, nil
}

// routeFabric opens the topology of route and applies --faults and --lids; it refuses early a
// --dump that OpenSM would misapply, and writes --net.
func routeFabric(c *cli.Context, spec string) (*topology.Fabric, int, error) {
	fab, err := topology.OpenFabric(spec)
	if err != nil {
		return nil, 0, asBadInput(err)
	}
	nfaults := 0
	if path := c.String("faults"); path != "" {
		fh, err := os.Open(path)
		if err != nil {
			return nil, 0, badInput("--faults: %v", err)
		}
		ft, err := topology.ParseFaults(fh, path, fab)
		fh.Close()
		if err != nil {
			return nil, 0, asBadInput(err)
		}
		nfaults = len(ft.Links) + len(ft.Switches)
		if fab, err = fab.ApplyFaults(ft); err != nil {
			return nil, 0, asBadInput(err)
		}
	}
	// After the faults: failed switches are not in the running fabric.
	if path := c.String("lids"); path != "" {
		if fab, err = fab.WithLIDsFile(path); err != nil {
			return nil, 0, badInput("--lids: %v", err)
		}
	}
	// Refuse before routing (which can take minutes) a dump that OpenSM would misapply.
	if c.String("dump") != "" {
		if why := fab.MissingIdentity(); why != "" {
			return nil, 0, badInput("--dump: %s has %s, and OpenSM's file engine applies each entry to the port whose GUID it names: "+
				"give --lids with the fabric's identities (OpenSM's guid2lid file, or the output of ibnetdiscover or saquery), "+
				"or route the fabric's ibnetdiscover output (-t FILE)", spec, why)
		}
	}
	if path := c.String("net"); path != "" {
		if err := topology.WriteIBSimNetFile(path, fab); err != nil {
			return nil, 0, badInput("--net: %v", err)
		}
	}
	return fab, nfaults, nil
}

// computeOrLoad computes the tables with eng, or reads them from --load.
func computeOrLoad(e *env, c *cli.Context, fab *topology.Fabric, eng routing.Engine, opt routing.Options) (*routing.Tables, error) {
	if path := c.String("load"); path != "" {
		return loadLFT(fab, path)
	}
	tb, err := eng.Compute(fab.Graph)
	if err != nil {
		// An engine that refuses the fabric's shape (dmodk off an intact PGFT, dmodc or updn
		// without a tree order): say which engines take it.
		return nil, badInput("%v%s", err, routing.Advice(fab, eng.Name(), opt))
	}
	return tb, nil
}

// loadLFT reads the tables of an LFT dump onto fab (--load).
func loadLFT(fab *topology.Fabric, path string) (*routing.Tables, error) {
	if why := fab.MissingIdentity(); why != "" {
		return nil, badInput("--load: %s has %s: the dump's entries are found by LID; route the fabric's ibnetdiscover output, or give --lids", fab.Name, why)
	}
	tb, err := routing.ReadLFTFile(fab, path)
	if err != nil {
		return nil, badInput("--load: %v", err)
	}
	return tb, nil
}

// timingsFlag is --timings of the commands that measure how long their work took (route, mcast).
// Wall-clock times differ from run to run, so they are logged (info) and only printed with the
// result on request: without it the same input gives the same output, byte for byte.
func timingsFlag() cli.Flag {
	return &cli.BoolFlag{Name: "timings", Usage: "also put the wall-clock times in the result (they are always logged at info level)"}
}
