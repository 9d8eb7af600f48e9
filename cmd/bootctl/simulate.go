package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootrun"
	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/fabricsim/simrun"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/routing"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/urfave/cli/v2"
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
			format := c.String("output")
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
			sf.Value = map[string]string{"algo": mapping.Default(false), "batch": "all"}[sf.Name]
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
		&cli.DurationFlag{Name: "dhcp-time", Value: time.Duration(fabricsim.DefaultDHCPSeconds * 1e9), Usage: "duration of the DHCP exchange before the first file (as bootctl boot's --dhcp-time)"},
		// The old name, kept working for scripts: boot and simulate now share --dhcp-time.
		&cli.DurationFlag{Name: "dhcp", Hidden: true, Usage: "old name of --dhcp-time"},
		&cli.StringSliceFlag{Name: "calibrate", TakesFile: true, Usage: "fit the DHCP and health times from past `bootctl boot` runs' journals (`JOURNAL`, repeat); a flag given still wins"},
		&cli.StringFlag{Name: "health", Value: defHealth, Usage: "duration of the health report after the last file, or binomial|task: also simulate the health aggregation over the batch's nodes after the boot"},
		&cli.DurationFlag{Name: "health-time", Usage: "duration of the health report after the last file when --health names an aggregation (default " + defHealth + ")"},
		&cli.IntFlag{Name: "faults", Usage: "health aggregation: nodes (other than the root) that die at random times during it"},
		&cli.StringFlag{Name: "stragglers", Usage: "health aggregation: slow nodes, FRACTION:SLOWDOWN or FRACTION:MIN-MAX, optionally :net (e.g. 0.1:1-20)"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "health aggregation: seed of faults, stragglers and failed health checks"},
		&cli.BoolFlag{Name: "health-nodes", Usage: "health aggregation: include every node's status in --output json"},
		withChoices(cli.StringFlag{Name: "delivery", Value: "unicast", Usage: "image delivery: unicast or server (a flow per node from its boot server), multicast (a tree per boot server) or p2p (the root image by peers, own board first), the last two shown beside unicast"},
			simDeliveries()...),
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
	arrival string               // --arrival
	listed  map[int]float64      // an arrival file's times by node (nil without one)
	fails   *simFails            // nil without --fail
	cal     *bootrun.Calibration // what --calibrate fitted (nil without it)
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
	if job.cal, err = simCalibrate(c, &job.cfg); err != nil {
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
	if job.opt.p2p && job.fails != nil {
		return badInput("--fail: server failures are simulated with unicast delivery only, not with --delivery p2p")
	}
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

// runAll simulates every batch under every algorithm (simrun.Job); every error but the
// cancellation is the input's.
func (job *simJob) runAll(c *cli.Context, e *env) ([]simrun.Run, error) {
	in, o := job.in, job.opt
	sj := &simrun.Job{Graph: in.Graph, Batches: in.Batches, Algos: in.Algos, Absent: in.Absent, Dead: in.Dead, Config: job.cfg,
		Arrival: job.arrival, Listed: job.listed, Multicast: o.multicast, P2P: o.p2p, Mcast: o.mcast, Hops: o.hops,
		Health:   simrun.HealthOptions{Algorithm: o.health, Faults: o.faults, Stragglers: o.stragglers, Seed: o.seed},
		Progress: func(label string) func(fabricsim.Progress) { return simProgress(e, label) }, Log: e.log}
	if job.fails != nil {
		sj.Failures, sj.DetectSeconds = job.fails.failures, job.fails.detect
	}
	runs, err := sj.Run(c.Context)
	if err != nil {
		return nil, simError(c.Context, err)
	}
	return runs, nil
}

// simError is a simulation's error: the cancellation as it is, anything else bad input.
func simError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	return asBadInput(err)
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

// simDeliveries are the values of simulate's --delivery; server is unicast's other name, the
// one plan, report and boot use.
func simDeliveries() []string { return []string{"unicast", "server", "multicast", "p2p"} }

// simOpts are simulate's delivery and health-aggregation options.
type simOpts struct {
	multicast   bool
	p2p         bool // --delivery p2p
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
	d, err := choiceValue(c, "delivery", simDeliveries()...)
	if err != nil {
		return nil, err
	}
	o.multicast, o.p2p = d == "multicast", d == "p2p"
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
