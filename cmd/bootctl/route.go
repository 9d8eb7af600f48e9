package main

import (
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
			&cli.StringFlag{Name: "engine", Aliases: []string{"e"}, Value: "dmodc", Usage: "routing engine: " + strings.Join(routing.Engines(), ", ")},
			&cli.StringFlag{Name: "faults", Usage: "file of links and switches to remove"},
			&cli.StringFlag{Name: "roots", Usage: "updn root switches, comma-separated names or GUIDs (default: the top level)"},
			&cli.BoolFlag{Name: "check", Usage: "also check up*/down* order and deadlock freedom and measure congestion"},
			&cli.IntFlag{Name: "shifts", Usage: "shift permutations measured by --check (0: all up to 2048 endpoints, else 1024 evenly spaced; N >= endpoints: all)"},
			&cli.StringFlag{Name: "dump", Usage: "write the tables to this file in the OpenSM/ibroute LFT dump layout"},
			outputFlag("table", "json", "yaml"),
		},
		Action: func(c *cli.Context) error {
			format, err := outputFormat(c, "table", "json", "yaml")
			if err != nil {
				return err
			}
			return runRoute(e, c, format)
		},
	}
}

// routeSummary is the result of bootctl route.
type routeSummary struct {
	Topology       string          `json:"topology"`
	Engine         string          `json:"engine"`
	Faults         int             `json:"faults"`
	ComputeSeconds float64         `json:"compute_seconds"`
	TableBytes     int             `json:"table_bytes"`
	BytesPerEntry  float64         `json:"bytes_per_entry"`
	Report         *routing.Report `json:"report"`
}

func runRoute(e *env, c *cli.Context, format string) error {
	spec := c.String("topology")
	fab, err := topology.OpenFabric(spec)
	if err != nil {
		return asBadInput(err)
	}
	nfaults := 0
	if path := c.String("faults"); path != "" {
		fh, err := os.Open(path)
		if err != nil {
			return badInput("--faults: %v", err)
		}
		ft, err := topology.ParseFaults(fh, path, fab)
		fh.Close()
		if err != nil {
			return asBadInput(err)
		}
		nfaults = len(ft.Links) + len(ft.Switches)
		if fab, err = fab.ApplyFaults(ft); err != nil {
			return asBadInput(err)
		}
	}
	var opt routing.Options
	if r := c.String("roots"); r != "" {
		for _, name := range strings.Split(r, ",") {
			v, ok := fab.Lookup(strings.TrimSpace(name))
			if !ok || fab.Kind(v) != topology.Switch {
				return badInput("--roots: no switch %q", name)
			}
			opt.Roots = append(opt.Roots, v)
		}
	}
	bar := e.progressBar("route "+c.String("engine"), 0, "")
	opt.Progress = bar.Func()
	eng, err := routing.New(c.String("engine"), opt)
	if err != nil {
		return badInput("--engine: %v", err)
	}
	start := time.Now()
	tb, err := eng.Compute(fab.Graph)
	bar.Done()
	if err != nil {
		return asBadInput(err)
	}
	took := time.Since(start)
	e.log.Info("routed", zap.String("engine", eng.Name()), zap.Duration("took", took),
		zap.Int("switches", len(tb.Switches())), zap.Int("endpoints", len(tb.Dests())))
	fatTree := slices.Contains([]string{"dmodk", "dmodc", "updn"}, eng.Name())
	bar = e.progressBar("route check", 0, "")
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
	if rep.Unreachable > 0 {
		var pairs []string
		for _, p := range rep.FirstUnreachable {
			pairs = append(pairs, p.Src+"->"+p.Dst)
		}
		what := "the fabric is disconnected"
		if nfaults > 0 {
			what = "the faults disconnect the fabric"
		}
		return badInput("%s for %s: %d unreachable pairs, first: %s", what, eng.Name(), rep.Unreachable, strings.Join(pairs, ", "))
	}
	if path := c.String("dump"); path != "" {
		fh, err := os.Create(path)
		if err != nil {
			return badInput("--dump: %v", err)
		}
		err = routing.WriteLFT(fh, fab, tb)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--dump %s: %w", path, err)
		}
	}
	sum := routeSummary{Topology: fab.Name, Engine: eng.Name(), Faults: nfaults, ComputeSeconds: took.Seconds(),
		TableBytes: tb.Bytes(), BytesPerEntry: tb.BytesPerEntry(), Report: rep}
	if sum.Topology == "" {
		sum.Topology = spec
	}
	if format != "table" {
		return writeData(e.stdout, format, sum)
	}
	t := newTable(e.stdout)
	t.row("topology", sum.Topology)
	t.row("engine", sum.Engine)
	t.row("faults", nfaults)
	t.row("switches", rep.Switches)
	t.row("endpoints", fmt.Sprintf("%d (%d healthy)", rep.Endpoints, rep.Healthy))
	t.row("compute", took.Round(time.Microsecond))
	t.row("table bytes", fmt.Sprintf("%d (%.2f per entry)", sum.TableBytes, sum.BytesPerEntry))
	t.row("valid", rep.Valid)
	t.row("unreachable pairs", rep.Unreachable)
	t.row("loops", rep.Loops)
	if rep.UpDownChecked {
		t.row("up*/down* violations", rep.UpDownViolations)
	}
	t.row("virtual channels", rep.VCs)
	t.row("deadlock free", rep.DeadlockFree)
	if rep.AllToAll != nil {
		t.row("all-to-all routes/channel", fmt.Sprintf("max %d, mean %.1f", rep.AllToAll.Max, rep.AllToAll.Mean))
	}
	if rep.Shift != nil {
		t.row("shift routes/channel", fmt.Sprintf("max %d, mean of max %.2f over %d shifts", rep.Shift.Max, rep.Shift.MeanMax, rep.Shift.Shifts))
	}
	return t.flush()
}
