package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/routing"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/bootfabric/bootfabric/units"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

// simDefaultFiles is the default --files: undionly.kpxe over TFTP (PXE firmware speaks nothing
// else), then kernel and initrd (together the paper's 50 MB image) over --protocol.
const simDefaultFiles = "nbp=70KB:tftp,kernel=10MB,initrd=40MB"

func simulateCommand(e *env) *cli.Command {
	formats := []string{"table", "json", "yaml", "csv"}
	return &cli.Command{
		Name:  "simulate",
		Usage: "simulate boots flow by flow: max-min sharing, protocol caps, per-node completion times",
		Description: "Every (node, file) is a flow from the node's boot server; flows share links by max-min\n" +
			"fairness and are re-shared whenever one starts or ends. Without --algo: bcda; without --batch:\n" +
			"the whole machine. Several algorithms or batches give one summary row each.",
		Flags: append(simMachineFlags(), simFlags(formats)...),
		Action: func(c *cli.Context) error {
			format, err := outputFormat(c, formats...)
			if err != nil {
				return err
			}
			job, err := readSimJob(c)
			if err != nil {
				return err
			}
			runs, err := job.runAll(c, e)
			if err != nil {
				return err
			}
			return simWrite(e.stdout, format, job, runs)
		},
	}
}

// simMachineFlags are plan's machine flags with simulate's defaults: one mapping (bcda), the
// whole machine.
func simMachineFlags() []cli.Flag {
	shared := machineFlags()
	for _, f := range shared {
		sf, ok := f.(*cli.StringFlag)
		if cf, isChoice := f.(*choiceFlag); isChoice {
			sf, ok = &cf.StringFlag, true
		}
		if ok && (sf.Name == "algo" || sf.Name == "batch") {
			sf.Value = map[string]string{"algo": "bcda", "batch": "all"}[sf.Name]
			sf.Usage = strings.Replace(sf.Usage, " (default: the paper's ladder)", "", 1)
		}
	}
	return shared
}

// simFlags are simulate's own flags: the boot, the health aggregation, delivery and failures.
func simFlags(formats []string) []cli.Flag {
	defHealth := (time.Duration(fabricsim.DefaultHealthSeconds * 1e9)).String()
	return []cli.Flag{
		&cli.StringFlag{Name: "arrival", Value: "all", Usage: "power-on times: all (at 0), ramp:N (N nodes per second in batch order), or a FILE of lines 'NODE SECONDS'"},
		&cli.StringFlag{Name: "files", Value: simDefaultFiles, Usage: "files each node fetches in order: NAME=SIZE[:tftp|http|none],... (without a protocol: --protocol); --image-size alone means nbp + one image of that size"},
		withChoices(cli.StringFlag{Name: "protocol", Value: "tftp", Usage: "delivery of files without their own protocol: tftp, http (or none: no protocol cap)"},
			"tftp", "http", "none"),
		&cli.IntFlag{Name: "blksize", Value: fabricsim.DefaultTFTPBlockSize, Usage: "TFTP block size in bytes (RFC 2348)"},
		&cli.IntFlag{Name: "windowsize", Value: fabricsim.DefaultTFTPWindowSize, Usage: "TFTP window size in blocks (RFC 7440)"},
		&cli.StringFlag{Name: "http-window", Value: "256KiB", Usage: "HTTP (TCP) receive window"},
		&cli.DurationFlag{Name: "rtt", Usage: "round-trip time for every node (default: 2 x the route's latencies + --server-time)"},
		&cli.DurationFlag{Name: "server-time", Value: time.Duration(fabricsim.DefaultServerSeconds * 1e9), Usage: "server processing time per exchange, added to the round trip"},
		&cli.DurationFlag{Name: "dhcp", Value: time.Duration(fabricsim.DefaultDHCPSeconds * 1e9), Usage: "duration of the DHCP exchange before the first file"},
		&cli.StringFlag{Name: "health", Value: defHealth, Usage: "duration of the health report after the last file, or binomial|task: also simulate the health aggregation over the batch's nodes after the boot"},
		&cli.DurationFlag{Name: "health-time", Usage: "duration of the health report after the last file when --health names an aggregation (default " + defHealth + ")"},
		&cli.IntFlag{Name: "faults", Usage: "health aggregation: nodes (other than the root) that die at random times during it"},
		&cli.StringFlag{Name: "stragglers", Usage: "health aggregation: slow nodes, FRACTION:SLOWDOWN or FRACTION:MIN-MAX, optionally :net (e.g. 0.1:1-20)"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "health aggregation: seed of faults, stragglers and failed health checks"},
		&cli.BoolFlag{Name: "health-nodes", Usage: "health aggregation: include every node's status in --output json"},
		withChoices(cli.StringFlag{Name: "delivery", Value: "unicast", Usage: "image delivery: unicast (a flow per node), or multicast (a tree per boot server, shown beside unicast)"},
			"unicast", "multicast"),
		withChoices(cli.StringFlag{Name: "mcast", Value: "fulb", Usage: "multicast tree algorithm with --delivery multicast: fulb, minhop, sssp"},
			"fulb", "minhop", "sssp"),
		&cli.StringFlag{Name: "time-step", Value: "0", Usage: "round events up to multiples of this duration so that nearby ones share one re-allocation, an optional coarsening (0: exact; auto, its old default, is now 0 too)"},
		&cli.Float64Flag{Name: "server-cap", Usage: "limit on each boot server's total rate in Mb/s, e.g. its disk (0: none)"},
		&cli.StringSliceFlag{Name: "fail", Usage: "a boot server fails during the boot: SERVER@TIME (bs3@12s, 3@12; repeatable or comma-separated); its unfinished nodes boot again from DHCP on their new owners after --detect, beside the run without failures"},
		&cli.DurationFlag{Name: "detect", Value: time.Duration(fabricsim.DefaultDetectSeconds * 1e9), Usage: "with --fail: time from a failure to the takeover of the server's nodes (the fleet's etcd lease TTL)"},
		outputFlag(formats...),
	}
}

// simJob is what simulate's flags ask for, read and checked before anything runs.
type simJob struct {
	in      *machineInput
	cfg     fabricsim.FlowConfig
	opt     *simOpts
	arrival string          // --arrival
	listed  map[int]float64 // an arrival file's times by node (nil without one)
	fails   *simFails       // nil without --fail
}

// readSimJob reads and checks every flag, in the order their errors are reported.
func readSimJob(c *cli.Context) (*simJob, error) {
	job := &simJob{arrival: c.String("arrival")}
	arrivalFile := job.arrival != "all" && !strings.HasPrefix(job.arrival, "ramp:")
	// readMachineInput takes an unset --batch for plan's ladder.
	if !c.IsSet("batch") && !arrivalFile {
		if err := c.Set("batch", "all"); err != nil {
			return nil, err
		}
	}
	var err error
	if job.in, err = readMachineInput(c); err != nil {
		return nil, err
	}
	if job.cfg, err = simConfig(c, job.in); err != nil {
		return nil, err
	}
	if job.opt, err = simOptions(c); err != nil {
		return nil, err
	}
	if arrivalFile {
		if err := job.readArrivalFile(c.IsSet("batch")); err != nil {
			return nil, err
		}
	}
	if err := job.opt.checkBatches(job.in.Batches); err != nil {
		return nil, err
	}
	if job.fails, err = simFailures(c, job.in.Graph, job.in); err != nil {
		return nil, err
	}
	return job, job.prepareMulticast()
}

// prepareMulticast refuses failures with multicast delivery and builds the hop table the
// multicast trees are built from.
func (job *simJob) prepareMulticast() error {
	if !job.opt.multicast {
		return nil
	}
	if job.fails != nil {
		return badInput("--fail: server failures are simulated with unicast delivery only, not with --delivery multicast")
	}
	var err error
	if job.opt.hops, err = routing.NewHopTable(job.in.Graph, 0); err != nil {
		return asBadInput(err)
	}
	return nil
}

// readArrivalFile reads the --arrival file; without --batch (batchSet) its nodes are the batch,
// else the batch must be one.
func (job *simJob) readArrivalFile(batchSet bool) error {
	var err error
	if job.listed, err = simReadArrivals(job.arrival, job.in.Graph.Hierarchy()); err != nil {
		return asBadInput(err)
	}
	if batchSet {
		if len(job.in.Batches) != 1 {
			return badInput("--arrival %s: a list of arrivals needs exactly one batch, got %d", job.arrival, len(job.in.Batches))
		}
		return nil
	}
	nodes := make([]int, 0, len(job.listed))
	for n := range job.listed {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	job.in.Batches = []topology.Batch{{Label: "nodes of " + job.arrival, Nodes: nodes}}
	return nil
}

// runAll simulates every batch under every algorithm, batches outermost; each batch's health
// aggregation is simulated once.
func (job *simJob) runAll(c *cli.Context, e *env) ([]simRun, error) {
	var runs []simRun
	for _, b := range job.in.Batches {
		health, err := job.opt.simulateHealth(b)
		if err != nil {
			return nil, err
		}
		for _, algo := range job.in.Algos {
			r, err := job.run(c.Context, e, b, algo)
			if err != nil {
				return nil, err
			}
			for i := range r {
				r[i].Health = health
			}
			runs = append(runs, r...)
		}
	}
	return runs, nil
}

// run simulates batch b under algo: one run, or with --delivery multicast the unicast run and
// the multicast one.
func (job *simJob) run(ctx context.Context, e *env, b topology.Batch, algo mapping.Algo) ([]simRun, error) {
	g, in := job.in.Graph, job.in
	cfg := job.cfg
	var err error
	if cfg.Arrivals, err = simArrivals(job.arrival, job.listed, b, g); err != nil {
		return nil, err
	}
	sim := &fabricsim.BootSim{Graph: g, Algo: algo, Batch: b.Nodes, Absent: in.Absent, Dead: in.Dead, Config: cfg}
	if job.fails != nil {
		sim.Failures, sim.DetectSeconds = job.fails.failures, job.fails.detect
	}
	a, err := sim.Assign()
	if err != nil {
		return nil, asBadInput(err)
	}
	progress := simProgress(e, "simulate "+algo.Name+" "+b.Label)
	sim.Config.Progress = progress
	res, err := sim.Simulate(ctx, a)
	if progress != nil {
		progress(fabricsim.Progress{Done: -1})
	}
	if err != nil {
		return nil, simError(ctx, err)
	}
	e.log.Debug("simulated", zap.String("batch", b.Label), zap.String("algo", algo.Name),
		zap.Int("events", res.Stats.Events), zap.Int("classes", res.Stats.Classes))
	uni := simRun{Batch: b.Label, Algo: algo.Name, Result: res}
	if !job.opt.multicast {
		return []simRun{uni}, nil
	}
	uni.Delivery = "unicast"
	mres, err := sim.SimulateMulticast(ctx, a, job.opt.hops, job.opt.mcast)
	if err != nil {
		return nil, simError(ctx, err)
	}
	return []simRun{uni, {Batch: b.Label, Algo: algo.Name, Delivery: "multicast", Mcast: string(job.opt.mcast),
		Result: mres, Speedup: res.BatchSeconds / mres.BatchSeconds}}, nil
}

// simError is a simulation's error: the cancellation as it is, anything else bad input.
func simError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	return asBadInput(err)
}

// simWrite prints the runs in format.
func simWrite(w io.Writer, format string, job *simJob, runs []simRun) error {
	g := job.in.Graph
	switch format {
	case "json", "yaml":
		for i := range runs {
			if runs[i].Health != nil {
				runs[i].Health = runs[i].Health.forJSON(job.opt.healthNodes)
			}
		}
		return writeData(w, format, simJSON{Topology: g.Name, Nodes: len(g.Nodes()), Servers: len(g.Servers()), Runs: runs})
	case "csv":
		return simWriteCSV(w, runs)
	}
	if err := simWriteTable(w, g, runs); err != nil {
		return err
	}
	if err := simWriteFailures(w, runs); err != nil {
		return err
	}
	return simWriteHealth(w, runs)
}

type simRun struct {
	Batch string `json:"batch"`
	Algo  string `json:"algo"`
	// Delivery is unicast or multicast when --delivery multicast shows both; Mcast the tree
	// algorithm and Speedup the unicast batch time over this one's (multicast runs).
	Delivery string                `json:"delivery,omitempty"`
	Mcast    string                `json:"mcast,omitempty"`
	Speedup  float64               `json:"speedup_vs_unicast,omitempty"`
	Result   *fabricsim.FlowResult `json:"result"`
	Health   *simHealth            `json:"health,omitempty"`
}

type simJSON struct {
	Topology string   `json:"topology"`
	Nodes    int      `json:"nodes"`
	Servers  int      `json:"servers"`
	Runs     []simRun `json:"runs"`
}

// simConfig reads the protocol, file and timing flags; with --profile the image is the profile's
// kernel and initrd at their stored sizes.
func simConfig(c *cli.Context, in *machineInput) (fabricsim.FlowConfig, error) {
	proto, err := fabricsim.ParseProtocol(c.String("protocol"))
	if err != nil {
		return fabricsim.FlowConfig{}, badInput("--protocol: %w", err)
	}
	cfg := fabricsim.DefaultFlowConfig(proto)
	spec := c.String("files")
	if c.IsSet("image-size") && !c.IsSet("files") {
		spec = "nbp=70KB:tftp,image=" + c.String("image-size")
	}
	if in.Profile != "" {
		// The profile's kernel and initrd count as one image, as --image-size does, so that
		// simulate and report predict the same boot.
		if c.IsSet("files") {
			return cfg, badInput("--profile %s and --files both give the files fetched; give one", in.Profile)
		}
		spec = fmt.Sprintf("nbp=70KB:tftp,image=%dB", in.KernelBytes+in.InitrdBytes)
	}
	if cfg.Files, err = fabricsim.ParseFiles(spec, proto); err != nil {
		return cfg, badInput("--files: %w", err)
	}
	cfg.TFTPBlockSize, cfg.TFTPWindowSize = c.Int("blksize"), c.Int("windowsize")
	if cfg.HTTPWindowBytes, err = units.ParseSize(c.String("http-window")); err != nil {
		return cfg, badInput("--http-window: %w", err)
	}
	if err := simDurations(c, &cfg); err != nil {
		return cfg, err
	}
	if cfg.TimeStep, err = simTimeStep(c.String("time-step")); err != nil {
		return cfg, err
	}
	cfg.ServerCapMbps = c.Float64("server-cap")
	if !(cfg.ServerCapMbps >= 0) {
		return cfg, badInput("--server-cap: %v must be 0 (none) or a positive rate in Mb/s", cfg.ServerCapMbps)
	}
	return cfg, simCheckTFTP(&cfg)
}

// simCheckTFTP checks the TFTP parameters when a file uses TFTP, so that they are reported as
// flags rather than by the simulator.
func simCheckTFTP(cfg *fabricsim.FlowConfig) error {
	for _, f := range cfg.Files {
		if f.Protocol == fabricsim.TFTP && (cfg.TFTPBlockSize < 8 || cfg.TFTPBlockSize > 65464) {
			return badInput("--blksize: %d is not 8..65464 bytes", cfg.TFTPBlockSize)
		}
		if f.Protocol == fabricsim.TFTP && (cfg.TFTPWindowSize < 1 || cfg.TFTPWindowSize > 65535) {
			return badInput("--windowsize: %d is not 1..65535 blocks", cfg.TFTPWindowSize)
		}
	}
	return nil
}

// simDurations reads --rtt, --server-time, --dhcp and the health report time: --health-time, or
// --health when it is a duration rather than the name of an aggregation (see simOptions).
func simDurations(c *cli.Context, cfg *fabricsim.FlowConfig) error {
	for _, d := range []struct {
		flag string
		dst  *float64
	}{{"rtt", &cfg.RTTSeconds}, {"server-time", &cfg.ServerSeconds}, {"dhcp", &cfg.DHCPSeconds}, {"health-time", &cfg.HealthSeconds}} {
		if d.flag == "health-time" && !c.IsSet("health-time") {
			hv := c.String("health")
			if _, err := fabricsim.ParseHealthAlgorithm(hv); err == nil {
				continue
			}
			v, err := time.ParseDuration(hv)
			if err != nil || v < 0 {
				return badInput("--health: %q is not binomial, task or a non-negative duration like 100ms", hv)
			}
			*d.dst = v.Seconds()
			continue
		}
		v := c.Duration(d.flag)
		if v < 0 {
			return badInput("--%s: %v must not be negative", d.flag, v)
		}
		*d.dst = v.Seconds()
	}
	return nil
}

// simTimeStep reads --time-step in seconds.
func simTimeStep(step string) (float64, error) {
	switch step {
	case "auto", "0":
		// Exact: the incremental solver makes an exact ramp cheap, so the 10 ms grid that auto
		// meant for spread arrivals is no longer needed.
		return 0, nil
	}
	d, err := time.ParseDuration(step)
	if err != nil || d < 0 {
		return 0, badInput("--time-step: %q is not auto, 0 or a non-negative duration like 10ms", step)
	}
	return d.Seconds(), nil
}

// simArrivals returns the arrival times of batch b's nodes for the --arrival value.
func simArrivals(arrival string, listed map[int]float64, b topology.Batch, g *topology.Graph) ([]float64, error) {
	switch {
	case arrival == "all":
		return nil, nil
	case strings.HasPrefix(arrival, "ramp:"):
		rate, err := strconv.ParseFloat(strings.TrimPrefix(arrival, "ramp:"), 64)
		if err != nil {
			return nil, badInput("--arrival %s: want ramp:N with N nodes per second", arrival)
		}
		arr, err := fabricsim.RampArrivals(len(b.Nodes), rate)
		if err != nil {
			return nil, badInput("--arrival %s: %w", arrival, err)
		}
		return arr, nil
	}
	arr := make([]float64, len(b.Nodes))
	in := make(map[int]bool, len(b.Nodes))
	for i, n := range b.Nodes {
		t, ok := listed[n]
		if !ok {
			return nil, badInput("--arrival %s: node %s of batch %q has no arrival time", arrival, g.VertexName(g.Nodes()[n]), b.Label)
		}
		arr[i] = t
		in[n] = true
	}
	for n := range listed {
		if !in[n] {
			return nil, badInput("--arrival %s: node %s is not in batch %q", arrival, g.VertexName(g.Nodes()[n]), b.Label)
		}
	}
	return arr, nil
}

// simReadArrivals reads the --arrival file (see fabricsim.ReadArrivals).
func simReadArrivals(path string, h *topology.Hierarchy) (map[int]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--arrival %q: not all, ramp:N or an existing file", path)
		}
		return nil, fmt.Errorf("--arrival: %w", err)
	}
	defer f.Close()
	return fabricsim.ReadArrivals(f, path, h)
}

// simProgress returns the simulator's progress callback, drawing a bar of the megabytes the nodes
// have fetched (nodes booted come in a burst at the end, data from the start) on stderr (see
// progressBar); a call with Done < 0 clears it. It returns nil when there is no bar.
func simProgress(e *env, label string) func(fabricsim.Progress) {
	bar := e.progressBar(label, 0, "MB fetched")
	if bar == nil {
		return nil
	}
	set := bar.Func()
	return func(p fabricsim.Progress) {
		if p.Done < 0 {
			bar.Done()
			return
		}
		set(int(p.Mb/8), int(p.TotalMb/8))
	}
}

func simWriteCSV(w io.Writer, runs []simRun) error {
	rows := [][]string{{"batch", "algo", "node", "server", "arrival_seconds", "done_seconds", "bottleneck", "bound_seconds"}}
	delivery := len(runs) > 0 && runs[0].Delivery != ""
	if delivery {
		rows[0] = append(rows[0], "delivery")
	}
	failures := len(runs) > 0 && runs[0].Result.Failure != nil
	if failures {
		rows[0] = append(rows[0], "restarted", "servers")
	}
	for _, r := range runs {
		var takeovers []fabricsim.NodeTakeover
		if f := r.Result.Failure; f != nil {
			takeovers = f.Nodes
		}
		for i, n := range r.Result.NodeResults {
			row := []string{r.Batch, r.Algo, n.Name, n.Server, simFloat(n.ArrivalSeconds), simFloat(n.DoneSeconds),
				n.Bottleneck, simFloat(n.BoundSeconds)}
			if delivery {
				row = append(row, r.Delivery)
			}
			if failures {
				// Without an effect there are no takeovers: every node kept its server.
				var nt fabricsim.NodeTakeover
				if takeovers != nil {
					nt = takeovers[i]
				}
				servers := n.Server
				if len(nt.Servers) > 0 {
					servers = strings.Join(nt.Servers, " ")
				}
				row = append(row, strconv.FormatBool(nt.Restarted), servers)
			}
			rows = append(rows, row)
		}
	}
	return writeCSV(w, rows)
}

func simFloat(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }

// simMainBottleneck names the limit that bounded most nodes.
func simMainBottleneck(r *fabricsim.FlowResult) string {
	best := fabricsim.BottleneckShare{}
	for _, b := range r.Bottlenecks {
		if b.Nodes > best.Nodes {
			best = b
		}
	}
	if best.Nodes == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%d)", best.Limit, best.Nodes)
}

// simWriteTable prints one summary row per run, or a single run in full.
func simWriteTable(w io.Writer, g *topology.Graph, runs []simRun) error {
	if len(runs) != 1 {
		return simWriteSummary(w, g, runs)
	}
	r := runs[0]
	res := r.Result
	var files []string
	for _, f := range res.Files {
		files = append(files, fmt.Sprintf("%s %s %s", f.Name, units.FormatBytes(f.Bytes), f.Protocol))
	}
	fmt.Fprintf(w, "%s: batch %s (%d nodes, %d servers used), %s; files: %s\n", g.Name, r.Batch, res.Nodes, res.ServersUsed, r.Algo,
		strings.Join(files, ", "))
	fmt.Fprintf(w, "batch time %s s\n\n", fmtFloat(res.BatchSeconds, 3))
	t := newTable(w)
	t.row("seconds", "min", "p50", "p90", "p99", "max", "mean")
	for _, d := range []struct {
		name string
		d    fabricsim.Distribution
	}{{"completion", res.Completion}, {"boot duration", res.Duration}} {
		t.row(d.name, fmtFloat(d.d.Min, 3), fmtFloat(d.d.P50, 3), fmtFloat(d.d.P90, 3), fmtFloat(d.d.P99, 3), fmtFloat(d.d.Max, 3), fmtFloat(d.d.Mean, 3))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := simWriteSegments(w, res); err != nil {
		return err
	}
	if len(res.TopLinks) > 0 {
		fmt.Fprintln(w, "\nbusiest links (server to node direction):")
		t = newTable(w)
		t.row("from", "to", "segment", "capacity Mb/s", "traffic")
		for _, l := range res.TopLinks {
			t.row(l.From, l.To, l.Segment, fmtFloat(l.CapacityMbps, 0), units.FormatBytes(l.Bytes))
		}
		return t.flush()
	}
	return nil
}

// simWriteSummary prints one row per run: its completion distribution and main bottleneck (and
// with --delivery multicast, the delivery and the speedup over unicast).
func simWriteSummary(w io.Writer, g *topology.Graph, runs []simRun) error {
	fmt.Fprintf(w, "%s: %d nodes, %d boot servers; completion times in seconds\n", g.Name, len(g.Nodes()), len(g.Servers()))
	t := newTable(w)
	if runs[0].Delivery != "" {
		t.row("batch", "nodes", "algo", "delivery", "min", "p50", "p90", "p99", "max", "speedup", "bottleneck (nodes)")
		for _, r := range runs {
			d := r.Result.Completion
			del, speed := r.Delivery, "-"
			if r.Mcast != "" {
				del += " (" + r.Mcast + ")"
				speed = "x" + fmtFloat(r.Speedup, 2)
			}
			t.row(r.Batch, r.Result.Nodes, r.Algo, del, fmtFloat(d.Min, 3), fmtFloat(d.P50, 3), fmtFloat(d.P90, 3), fmtFloat(d.P99, 3),
				fmtFloat(d.Max, 3), speed, simMainBottleneck(r.Result))
		}
		return t.flush()
	}
	t.row("batch", "nodes", "algo", "min", "p50", "p90", "p99", "max", "bottleneck (nodes)")
	for _, r := range runs {
		d := r.Result.Completion
		t.row(r.Batch, r.Result.Nodes, r.Algo, fmtFloat(d.Min, 3), fmtFloat(d.P50, 3), fmtFloat(d.P90, 3), fmtFloat(d.P99, 3),
			fmtFloat(d.Max, 3), simMainBottleneck(r.Result))
	}
	return t.flush()
}

// simWriteSegments prints each segment's load and the nodes it bounded, then the caps that
// bounded nodes.
func simWriteSegments(w io.Writer, res *fabricsim.FlowResult) error {
	t := newTable(w)
	t.row("segment", "channels", "capacity Mb/s", "traffic", "peak Mb/s", "peak util", "bottleneck of")
	for _, s := range res.Segments {
		t.row(s.Name, s.Channels, fmtFloat(s.CapacityMbps, 0), units.FormatBytes(s.Bytes), fmtFloat(s.PeakMbps, 1),
			fmtFloat(100*s.PeakUtilisation, 1)+"%", s.BottleneckNodes)
	}
	for _, b := range res.Bottlenecks {
		if !slices.ContainsFunc(res.Segments, func(s fabricsim.SegmentUsage) bool { return s.Name == b.Limit }) {
			t.row(b.Limit+" cap", "-", "-", "-", "-", "-", b.Nodes)
		}
	}
	return t.flush()
}

// simOpts are simulate's delivery and health-aggregation options.
type simOpts struct {
	multicast   bool
	mcast       routing.McastAlgorithm
	hops        *routing.HopTable
	health      fabricsim.HealthAlgorithm // "": no aggregation
	faults      int
	stragglers  fabricsim.HealthStragglers
	seed        uint64
	healthNodes bool
}

// simOptions reads --delivery, --mcast and the health-aggregation flags.
func simOptions(c *cli.Context) (*simOpts, error) {
	o := &simOpts{seed: c.Uint64("seed"), healthNodes: c.Bool("health-nodes"), faults: c.Int("faults")}
	switch d := c.String("delivery"); d {
	case "unicast":
	case "multicast":
		o.multicast = true
	default:
		return nil, badInput("--delivery: %q is not unicast or multicast", d)
	}
	var err error
	if o.mcast, err = routing.ParseMcastAlgorithm(c.String("mcast")); err != nil {
		return nil, badInput("--mcast: %v", err)
	}
	if c.IsSet("mcast") && !o.multicast {
		return nil, badInput("--mcast %s needs --delivery multicast", o.mcast)
	}
	if a, err := fabricsim.ParseHealthAlgorithm(c.String("health")); err == nil {
		o.health = a
	}
	if o.health == "" {
		for _, f := range []string{"faults", "stragglers", "seed", "health-nodes", "health-time"} {
			if c.IsSet(f) {
				return nil, badInput("--%s needs --health binomial or --health task", f)
			}
		}
		return o, nil
	}
	if o.faults < 0 {
		return nil, badInput("--faults: %d must not be negative", o.faults)
	}
	if o.stragglers, err = fabricsim.ParseHealthStragglers(c.String("stragglers")); err != nil {
		return nil, badInput("--stragglers: %v", err)
	}
	return o, nil
}

// checkBatches rejects fault counts a batch cannot hold before anything is simulated.
func (o *simOpts) checkBatches(batches []topology.Batch) error {
	if o.health == "" {
		return nil
	}
	for _, b := range batches {
		if o.faults > len(b.Nodes)-1 {
			return badInput("--faults: %d faults for batch %s of %d nodes: at most %d can fail (the root never does)",
				o.faults, b.Label, len(b.Nodes), max(0, len(b.Nodes)-1))
		}
	}
	return nil
}

// simHealth is a run's health aggregation; the per-node map is left out of JSON unless asked for.
type simHealth struct {
	*fabricsim.HealthResult
	Summary any `json:"summary"`
}

// forJSON returns h with the summary reduced to its counts unless nodes is set.
func (h *simHealth) forJSON(nodes bool) *simHealth {
	out := *h
	if nodes {
		out.Summary = h.HealthResult.Summary
	} else {
		out.Summary = h.HealthResult.Summary.Counts()
	}
	return &out
}

// simulateHealth runs the health aggregation over batch b's nodes, or returns nil without --health.
func (o *simOpts) simulateHealth(b topology.Batch) (*simHealth, error) {
	if o.health == "" {
		return nil, nil
	}
	cfg := fabricsim.DefaultHealthConfig(o.health, len(b.Nodes))
	cfg.Faults, cfg.Stragglers, cfg.Seed = o.faults, o.stragglers, o.seed
	res, err := fabricsim.SimulateHealth(cfg)
	if err != nil {
		return nil, asBadInput(fmt.Errorf("--health %s, batch %s: %w", o.health, b.Label, err))
	}
	return &simHealth{HealthResult: &res}, nil
}

// simWriteHealth prints the health aggregation of each batch once.
func simWriteHealth(w io.Writer, runs []simRun) error {
	var last *simHealth
	for _, r := range runs {
		h := r.Health
		if h == nil || h == last {
			continue
		}
		last = h
		res := h.HealthResult
		yes := map[bool]string{true: "yes", false: "no"}
		fmt.Fprintf(w, "\nhealth aggregation of batch %s (%s, %d nodes): %s (paper formula %s)\n", r.Batch, res.Algorithm, res.Nodes,
			simDur(res.CompletionSeconds), simDur(res.ReferenceSeconds))
		cnt := res.Summary.Counts()
		fmt.Fprintf(w, "  healthy %d, failed %d, unreachable %d; complete %s, every node accounted %s\n",
			cnt.Healthy, cnt.Failed, cnt.Unreachable, yes[res.Complete], yes[res.Accounted])
		if len(res.Stragglers) > 0 {
			fmt.Fprintf(w, "  stragglers %d\n", len(res.Stragglers))
		}
		if len(res.Faults) > 0 {
			fmt.Fprintf(w, "  faults %d, recovered %d:\n", len(res.Faults), res.RecoveredFaults)
			for _, f := range res.Faults {
				what := "recovered"
				if !f.Recovered {
					what = fmt.Sprintf("%d records lost", len(f.Lost))
				}
				fmt.Fprintf(w, "    node %d died at %s, detected at %s, %s\n", f.Node, simDur(f.AtSeconds), simDur(f.DetectedSeconds), what)
			}
		}
		fmt.Fprintf(w, "  messages %d (%s moved), tasks %d, recovery messages %d\n", res.Messages, units.FormatBytes(res.Bytes), res.Tasks,
			res.RecoveryMessages)
	}
	return nil
}

// simDur prints seconds as a rounded duration (health aggregations take micro- to milliseconds).
func simDur(s float64) string {
	return time.Duration(s * 1e9).Round(time.Microsecond / 10).String()
}

// simFails is --fail and --detect, checked against the machine and the servers down from the start.
type simFails struct {
	failures []fabricsim.ServerFailure
	detect   float64
}

// simFailures reads --fail and --detect (nil without --fail). A failed server must be up at the
// start (not in --failed-servers or --failed-during-boot), fail once, and leave one server up.
func simFailures(c *cli.Context, g *topology.Graph, in *machineInput) (*simFails, error) {
	items := c.StringSlice("fail")
	if len(items) == 0 {
		if c.IsSet("detect") {
			return nil, badInput("--detect needs --fail")
		}
		return nil, nil
	}
	d := c.Duration("detect")
	if d < 0 {
		return nil, badInput("--detect: %v must not be negative", d)
	}
	servers := len(g.Servers())
	out := &simFails{detect: d.Seconds()}
	down := 0
	for s := 0; s < servers; s++ {
		if simIsSet(in.Absent, s) || simIsSet(in.Dead, s) {
			down++
		}
	}
	seen := make([]bool, servers)
	for _, item := range items {
		item = strings.TrimSpace(item)
		f, err := simParseFailure(g, in, item, seen)
		if err != nil {
			return nil, err
		}
		seen[f.Server] = true
		down++
		out.failures = append(out.failures, f)
	}
	if down == servers {
		return nil, badInput("--fail: all %d boot servers would be down (%d fail, %d down from the start); at least one must stay up",
			servers, len(out.failures), servers-len(out.failures))
	}
	return out, nil
}

func simIsSet(v []bool, s int) bool { return s < len(v) && v[s] }

// simParseFailure parses one --fail item, SERVER@TIME, of a server up from the start that has not
// failed yet (seen).
func simParseFailure(g *topology.Graph, in *machineInput, item string, seen []bool) (fabricsim.ServerFailure, error) {
	name, at, ok := strings.Cut(item, "@")
	if !ok {
		return fabricsim.ServerFailure{}, badInput("--fail %q: want SERVER@TIME, e.g. bs3@12s", item)
	}
	srv, err := simServer(g, strings.TrimSpace(name))
	if err != nil {
		return fabricsim.ServerFailure{}, badInput("--fail %q: %w", item, err)
	}
	t, err := simSeconds(strings.TrimSpace(at))
	if err != nil {
		return fabricsim.ServerFailure{}, badInput("--fail %q: %w", item, err)
	}
	sname := g.VertexName(g.Servers()[srv])
	switch {
	case seen[srv]:
		return fabricsim.ServerFailure{}, badInput("--fail %q: %s fails twice", item, sname)
	case simIsSet(in.Absent, srv):
		return fabricsim.ServerFailure{}, badInput("--fail %q: %s is down from the start (--failed-servers)", item, sname)
	case simIsSet(in.Dead, srv):
		return fabricsim.ServerFailure{}, badInput("--fail %q: %s is down from the start (--failed-during-boot)", item, sname)
	}
	return fabricsim.ServerFailure{Server: srv, Seconds: t}, nil
}

// simServer parses a boot server: its name (bs3), or its index (3).
func simServer(g *topology.Graph, s string) (int, error) {
	for i, v := range g.Servers() {
		if g.VertexName(v) == s {
			return i, nil
		}
	}
	n := len(g.Servers())
	i, err := strconv.Atoi(strings.TrimPrefix(s, "bs"))
	if err != nil || i < 0 || i >= n {
		return 0, fmt.Errorf("%q is not a boot server (0-%d or bs0-bs%d)", s, n-1, n-1)
	}
	return i, nil
}

// simSeconds parses a time from the start of the boot: a duration (12s, 1m30s) or seconds (12.5).
func simSeconds(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d, derr := time.ParseDuration(s)
		if derr != nil {
			return 0, fmt.Errorf("time %q: want a duration like 12s or a number of seconds", s)
		}
		v = d.Seconds()
	}
	if v < 0 {
		return 0, fmt.Errorf("time %q must not be negative", s)
	}
	return v, nil
}

// simTopOwners is how many new owners a failure's table row names.
const simTopOwners = 4

// simWriteFailures prints each run's takeover: per failed server its time, detection, the nodes
// taken over and their new owners, and the batch time beside the run without failures.
func simWriteFailures(w io.Writer, runs []simRun) error {
	for _, r := range runs {
		f := r.Result.Failure
		if f == nil {
			continue
		}
		fmt.Fprint(w, "\nserver failures")
		if len(runs) > 1 {
			fmt.Fprintf(w, " (batch %s, %s)", r.Batch, r.Algo)
		}
		fmt.Fprintf(w, ", detected after %s s: batch time %s s with them, %s s without (+%s s); nodes taken over %d, restarted %d\n",
			fmtFloat(f.DetectSeconds, 3), fmtFloat(f.BatchSeconds, 3), fmtFloat(f.BaselineBatchSeconds, 3), fmtFloat(f.ExtraSeconds, 3),
			f.TakenOver, f.Restarted)
		if !f.Effect {
			fmt.Fprintln(w, "no effect: no failure met an unfinished node; the run is the one without failures")
		}
		t := newTable(w)
		t.row("server", "fails s", "detected s", "mid-boot", "not started", "done", "new owners (nodes)")
		for _, st := range f.Servers {
			var owners []string
			for i, o := range st.NewOwners {
				if i == simTopOwners {
					owners = append(owners, fmt.Sprintf("+%d more", len(st.NewOwners)-i))
					break
				}
				owners = append(owners, fmt.Sprintf("%s (%d)", o.Server, o.Nodes))
			}
			what := strings.Join(owners, ", ")
			if st.Note != "" {
				what = st.Note
			}
			t.row(st.Server, fmtFloat(st.FailSeconds, 3), fmtFloat(st.DetectedSeconds, 3), st.MidBoot, st.NotStarted, st.Done, what)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}
