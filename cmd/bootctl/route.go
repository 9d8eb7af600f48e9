package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
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
	ComputeSeconds float64         `json:"compute_seconds,omitempty"` // with --timings only
	TableBytes     int             `json:"table_bytes"`
	BytesPerEntry  float64         `json:"bytes_per_entry"`
	Report         *routing.Report `json:"report"`
	// DumpFiles are the files --dump wrote: the LFTs, and for tables on several virtual channels
	// the path SLs (.sl) and the SL-to-VL tables (.sl2vl).
	DumpFiles []string `json:"dump_files,omitempty"`
	// DumpCheck is --check's reading of the dumped files (--dump and --check).
	DumpCheck *routing.DumpCheck `json:"dump_check,omitempty"`
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
	sum := routeSummary{Topology: fab.Name, Engine: tb.Engine(), Faults: nfaults,
		TableBytes: tb.Bytes(), BytesPerEntry: tb.BytesPerEntry(), Report: rep, DumpFiles: dumpFiles, DumpCheck: dumpCheck}
	if c.Bool("timings") {
		sum.ComputeSeconds = r.took.Seconds()
	}
	if sum.Topology == "" {
		sum.Topology = spec
	}
	if format != "table" {
		err = writeData(e.stdout, format, sum)
	} else {
		err = printRoute(e, sum, c.Bool("timings"), r.took)
	}
	if err != nil {
		return err
	}
	return invalid(rep, dumpCheck)
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
	if opt.Roots, err = routeRoots(fab, c.String("roots")); err != nil {
		return nil, err
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

// writeDump writes the LFT dump to path and, for tables on several virtual channels, the lanes
// that deploy them to path.sl and path.sl2vl. It returns the files written.
func writeDump(path string, fab *topology.Fabric, tb *routing.Tables) ([]string, error) {
	if err := createFile(path, func(fh *os.File) error { return routing.WriteLFT(fh, fab, tb) }); err != nil {
		return nil, fmt.Errorf("--dump %s: %w", path, err)
	}
	if tb.NumVCs() <= 1 {
		return []string{path}, nil
	}
	lanes, err := routing.AssignLanes(fab, tb)
	if err != nil {
		return nil, fmt.Errorf("--dump: %w", err)
	}
	if err := createFile(path+".sl", func(fh *os.File) error { return lanes.WriteSL(fh) }); err != nil {
		return nil, fmt.Errorf("--dump %s.sl: %w", path, err)
	}
	if err := createFile(path+".sl2vl", func(fh *os.File) error { return lanes.WriteSL2VL(fh) }); err != nil {
		return nil, fmt.Errorf("--dump %s.sl2vl: %w", path, err)
	}
	return []string{path, path + ".sl", path + ".sl2vl"}, nil
}

// checkDump reads back the files writeDump wrote and follows every pair through them.
func checkDump(fab *topology.Fabric, files []string) (*routing.DumpCheck, error) {
	var df routing.DumpFiles
	var open []*os.File
	defer func() {
		for _, fh := range open {
			fh.Close()
		}
	}()
	for i, name := range files {
		fh, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--check: reading back the dump: %w", err)
		}
		open = append(open, fh)
		switch i {
		case 0:
			df.LFT, df.LFTName = fh, name
		case 1:
			df.SL, df.SLName = fh, name
		case 2:
			df.SL2VL, df.SL2VLName = fh, name
		}
	}
	dc, err := routing.CheckDump(fab, df)
	if err != nil {
		return nil, fmt.Errorf("--check: reading back the dump: %w", err)
	}
	return dc, nil
}

// createFile creates path and writes it with write.
func createFile(path string, write func(*os.File) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(fh)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

// routeRoots finds the switches of --roots.
func routeRoots(fab *topology.Fabric, list string) ([]topology.VertexID, error) {
	if list == "" {
		return nil, nil
	}
	var roots []topology.VertexID
	for _, name := range strings.Split(list, ",") {
		v, ok := fab.Lookup(strings.TrimSpace(name))
		if !ok || fab.Kind(v) != topology.Switch {
			return nil, badInput("--roots: no switch %q", name)
		}
		roots = append(roots, v)
	}
	return roots, nil
}

// unrouted is the error for pairs left unreachable: the engine's restriction when the fabric
// connects them (with the engines that route it), else the fabric or its faults.
func unrouted(e *env, fab *topology.Fabric, tb *routing.Tables, engine string, opt routing.Options, rep *routing.Report, nfaults int) error {
	var pairs []string
	for _, p := range rep.FirstUnreachable {
		pairs = append(pairs, p.Src+"->"+p.Dst)
	}
	if connected(fab.Graph, tb) {
		return badInput("%s", engineMismatch(e, fab, engine, opt, rep.Unreachable, pairs))
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
		if files, err = writeDump(path, fab, tb); err != nil {
			return nil, nil, err
		}
		if c.Bool("check") {
			if dc, err = checkDump(fab, files); err != nil {
				return nil, nil, err
			}
		}
	} else if tb.NumVCs() > 1 {
		e.log.Warn("the tables use several virtual channels: --dump also writes the path SLs and the SL-to-VL tables that deploy them", zap.Int("vcs", tb.NumVCs()))
	}
	return files, dc, nil
}

// printRoute prints the summary of route as a table.
func printRoute(e *env, sum routeSummary, timings bool, took time.Duration) error {
	rep := sum.Report
	t := newTable(e.stdout)
	t.row("topology", sum.Topology)
	t.row("engine", sum.Engine)
	t.row("faults", sum.Faults)
	t.row("switches", rep.Switches)
	t.row("endpoints", fmt.Sprintf("%d (%d healthy)", rep.Endpoints, rep.Healthy))
	if timings {
		t.row("compute", took.Round(time.Microsecond))
	}
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
	if len(sum.DumpFiles) > 0 {
		t.row("dump", strings.Join(sum.DumpFiles, ", "))
	}
	if d := sum.DumpCheck; d != nil {
		t.row("dump read back", fmt.Sprintf("%d pairs, %d unreachable, %d loops, %d SLs, %d VLs", d.Paths, d.Unreachable, d.Loops, d.SLs, d.VLs))
		t.row("dump deadlock free", d.DeadlockFree)
	}
	return t.flush()
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
	if fab, err = withLIDs(fab, c.String("lids")); err != nil {
		return nil, 0, err
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
		if err := createFile(path, func(fh *os.File) error { return topology.WriteIBSimNet(fh, fab) }); err != nil {
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
		return nil, badInput("%v%s", err, engineAdvice(e, fab, eng.Name(), opt, enginesFor(fab)))
	}
	return tb, nil
}

// loadLFT reads the tables of an LFT dump onto fab (--load).
func loadLFT(fab *topology.Fabric, path string) (*routing.Tables, error) {
	if why := fab.MissingIdentity(); why != "" {
		return nil, badInput("--load: %s has %s: the dump's entries are found by LID; route the fabric's ibnetdiscover output, or give --lids", fab.Name, why)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, badInput("--load: %v", err)
	}
	defer fh.Close()
	tb, err := routing.ReadLFT(fab, fh, path)
	if err != nil {
		return nil, badInput("--load: %v", err)
	}
	return tb, nil
}

// withLIDs gives fab the identities of the --lids file, if one is named.
func withLIDs(fab *topology.Fabric, path string) (*topology.Fabric, error) {
	if path == "" {
		return fab, nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, badInput("--lids: %v", err)
	}
	defer fh.Close()
	m, err := topology.ParseLIDs(fh, path)
	if err != nil {
		return nil, badInput("--lids: %v", err)
	}
	nf, err := fab.WithLIDs(m)
	if err != nil {
		return nil, badInput("--lids: %v", err)
	}
	return nf, nil
}

// timingsFlag is --timings of the commands that measure how long their work took (route, mcast).
// Wall-clock times differ from run to run, so they are logged (info) and only printed with the
// result on request: without it the same input gives the same output, byte for byte.
func timingsFlag() cli.Flag {
	return &cli.BoolFlag{Name: "timings", Usage: "also put the wall-clock times in the result (they are always logged at info level)"}
}

// invalid returns the error that makes route exit 1 after printing a result whose check failed,
// naming what failed: a table printed with "valid false" and exit 0 reads as a success to scripts.
func invalid(rep *routing.Report, dump *routing.DumpCheck) error {
	var why []string
	if d := dump; d != nil {
		if d.Unreachable > 0 || d.Loops > 0 {
			why = append(why, fmt.Sprintf("the dump read back leaves %d pairs unreachable and %d in loops", d.Unreachable, d.Loops))
		}
		if !d.DeadlockFree {
			why = append(why, fmt.Sprintf("the dump read back is not deadlock-free: the lane dependencies of VL %s form a cycle", joinInts(d.CyclicVLs)))
		}
	}
	if rep.Valid && len(why) == 0 {
		return nil
	}
	if rep.Unreachable > 0 {
		why = append(why, fmt.Sprintf("%d unreachable pairs", rep.Unreachable))
	}
	if rep.Loops > 0 {
		why = append(why, fmt.Sprintf("%d destinations reached through a forwarding loop", rep.Loops))
	}
	if rep.UpDownChecked && rep.UpDownViolations > 0 {
		why = append(why, fmt.Sprintf("%d up*/down* violations", rep.UpDownViolations))
	}
	if !rep.DeadlockFree {
		why = append(why, fmt.Sprintf("not deadlock-free: the channel dependencies of virtual channel %s form a cycle", joinInts(rep.CyclicVCs)))
	}
	return fmt.Errorf("routing invalid: %s", strings.Join(why, "; "))
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// connected reports whether every healthy endpoint of the tables can reach every other over the
// graph's links, whatever the engine: when it can, pairs the engine left unreachable are the
// engine's doing, not the fabric's.
func connected(g *topology.Graph, tb *routing.Tables) bool {
	seen := make([]bool, g.NumVertices())
	var queue []topology.VertexID
	for d, v := range tb.Dests() {
		if tb.Healthy(d) {
			queue, seen[v] = append(queue, v), true
			break
		}
	}
	for i := 0; i < len(queue); i++ {
		v := queue[i]
		for _, l := range g.Links(v) {
			if w := g.Other(l, v); !seen[w] {
				seen[w] = true
				// Endpoints do not forward: reach them, but do not walk through them.
				if g.Kind(w) == topology.Switch {
					queue = append(queue, w)
				}
			}
		}
	}
	for d, v := range tb.Dests() {
		if tb.Healthy(d) && !seen[v] {
			return false
		}
	}
	return true
}

// engineMismatch explains pairs that an engine left unreachable on a connected fabric: the cause
// is the engine's restriction on this kind of fabric, and the fix another engine. The engines that
// suit it are found by routing the fabric with each of them (a check without congestion is cheap
// next to what the user just ran), so the advice holds for any fabric, not only the known kinds.
func engineMismatch(e *env, fab *topology.Fabric, engine string, opt routing.Options, unreachable int64, pairs []string) string {
	cause := fmt.Sprintf("%s leaves %d pairs unreachable (first: %s) though the fabric connects them", engine, unreachable, strings.Join(pairs, ", "))
	engines := enginesFor(fab)
	if _, fat2d := topology.Fat2DOf(fab.Graph); fat2d {
		cause += fmt.Sprintf(": %s routes up*/down* only (up to the top level, then down), and on a 2-D fat-tree a leaf in another row and column is reached only by going down and up again", engine)
	} else if engine == "updn" && len(opt.Roots) > 0 {
		cause += ": updn routes up*/down* only (up towards its roots, then down), and from the roots given some pairs would have to go up again after going down"
	} else if engine == "dmodc" || engine == "dmodk" || engine == "updn" {
		cause += fmt.Sprintf(": %s routes up*/down* only (up towards the top level, then down), which this fabric does not allow between every pair", engine)
	}
	return cause + engineAdvice(e, fab, engine, opt, engines)
}

// enginesFor lists the engines in the order to suggest them for fab: vtftr, the engine made for
// 2-D fat-trees, first on those.
func enginesFor(fab *topology.Fabric) []string {
	engines := routing.Engines()
	if _, fat2d := topology.Fat2DOf(fab.Graph); fat2d {
		engines = append([]string{"vtftr"}, slices.DeleteFunc(engines, func(n string) bool { return n == "vtftr" })...)
	}
	return engines
}

// engineAdvice names the engines that route every pair of fab, deadlock-free ones first, as
// "; engines that route it: -e X, or ...", or returns "" when none does.
func engineAdvice(e *env, fab *topology.Fabric, engine string, opt routing.Options, engines []string) string {
	type suited struct {
		label        string
		deadlockFree bool
	}
	var suit []suited
	for _, name := range engines {
		if name == engine && (name != "updn" || len(opt.Roots) == 1) {
			continue
		}
		for _, try := range engineTrials(fab, name, engine, opt) {
			eng, err := routing.New(name, routing.Options{Roots: try.roots})
			if err != nil {
				continue
			}
			tb, err := eng.Compute(fab.Graph)
			if err != nil {
				e.log.Debug("engine does not take this fabric", zap.String("engine", name), zap.Error(err))
				continue
			}
			rep := routing.Check(tb, routing.CheckOptions{})
			if rep.Unreachable > 0 {
				continue
			}
			if !rep.DeadlockFree {
				try.label += " (every pair, but not deadlock-free)"
			}
			suit = append(suit, suited{try.label, rep.DeadlockFree})
			break
		}
	}
	if len(suit) == 0 {
		return ""
	}
	// Deadlock-free engines first: those are the ones to use.
	slices.SortStableFunc(suit, func(a, b suited) int {
		switch {
		case a.deadlockFree == b.deadlockFree:
			return 0
		case a.deadlockFree:
			return -1
		}
		return 1
	})
	labels := make([]string, len(suit))
	for i, su := range suit {
		labels[i] = su.label
	}
	return "; engines that route it: " + strings.Join(labels, ", or ")
}

// engineTrial is one way to run an engine when looking for one that suits a fabric.
type engineTrial struct {
	label string
	roots []topology.VertexID
}

// engineTrials lists the ways to try engine name: updn first with its default roots (unless those
// just failed: it was run without --roots) and then with one root, the first switch of the top level, since up*/down* from a
// single root reaches every pair of a connected fabric.
func engineTrials(fab *topology.Fabric, name, failed string, opt routing.Options) []engineTrial {
	if name != "updn" {
		return []engineTrial{{label: "-e " + name}}
	}
	var trials []engineTrial
	if failed != "updn" || len(opt.Roots) > 0 {
		trials = append(trials, engineTrial{label: "-e updn"})
	}
	g := fab.Graph
	root, top := topology.VertexID(-1), -1
	for v := range topology.VertexID(g.NumVertices()) {
		if g.Kind(v) == topology.Switch && g.Level(v) > top {
			root, top = v, g.Level(v)
		}
	}
	if root >= 0 {
		trials = append(trials, engineTrial{label: "-e updn --roots " + fab.VertexName(root), roots: []topology.VertexID{root}})
	}
	return trials
}
