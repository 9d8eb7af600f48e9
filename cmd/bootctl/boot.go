package main

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootrun"
	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/bootfabric/bootfabric/units"
	"github.com/urfave/cli/v2"
)

// bootCommand is `bootctl boot NODES`: a planned batch boot of real machines, run as a closed
// loop, or predicted with --dry-run by the same controller.
func bootCommand(e *env) *cli.Command {
	journalFlag := &cli.StringFlag{Name: "journal", Aliases: []string{"j"}, Required: true, Usage: "the run's journal file"}
	control := func(word, usage string) *cli.Command {
		return &cli.Command{Name: word, Usage: usage, Flags: []cli.Flag{journalFlag},
			Action: func(c *cli.Context) error { return bootControl(e, c, word) }}
	}
	return &cli.Command{
		Name: "boot", Usage: "power nodes on through their BMCs and boot them as capacity frees (--dry-run: predict it)",
		ArgsUsage: "NODES...",
		Description: "NODES: names with ranges (node[001-128], s0-b[0-3]-n[0-7]), comma-separated, @FILE, or all;\n" +
			"--group NAME keeps the nodes of a group.\n" +
			"Nodes are admitted as capacity frees: at most as many in flight (powered, files not yet in)\n" +
			"behind each boot server link and bottleneck segment as keeps each above --floor-mbps. A node\n" +
			"late in a phase (factor x prediction + margin) is power cycled, up to --max-attempts. Each link's\n" +
			"limit then follows what the servers measure: halved when a node behind it falls under the\n" +
			"firmware's patience (learned from the transfers it sees), raised by one a round while none does.\n" +
			"When too many fail the run backs off (--on-failure pause: waits for resume). Nodes already\n" +
			"healthy are skipped (--reboot-healthy: power cycled and booted again). The journal keeps the run:\n" +
			"rerun with --resume after an interruption.",
		Flags:  bootRunFlags(),
		Action: func(c *cli.Context) error { return bootAction(e, c) },
		Subcommands: []*cli.Command{
			{Name: "status", Usage: "show a run from its journal", Flags: []cli.Flag{journalFlag, outputFlag("table", "json", "yaml")},
				Action: func(c *cli.Context) error { return bootStatus(e, c) }},
			control("pause", "stop admitting nodes (nodes in flight go on)"),
			control("resume", "admit nodes again (also after the circuit breaker paused the run)"),
			control("abort", "give up every node not yet powered; nodes in flight finish"),
		},
	}
}

func bootRunFlags() []cli.Flag {
	return append(powerFlags(),
		&cli.StringSliceFlag{Name: "server", Aliases: []string{"s"}, EnvVars: []string{"BOOTCTL_SERVER"},
			Usage: "boot server HTTP URL whose status API shows the nodes' boots (repeat for a fleet)"},
		&cli.StringSliceFlag{Name: "token-file", EnvVars: []string{"BOOTCTL_TOKEN_FILE"},
			Usage: "operator token file (a server's http.operator_token_file), with which the run arms each node's reboot: one for all servers, or one per --server in order"},
		&cli.StringFlag{Name: "journal", Aliases: []string{"j"}, Usage: "the run's journal file (required unless --dry-run)"},
		&cli.BoolFlag{Name: "resume", Usage: "continue the run of --journal: healthy nodes are not powered again"},
		&cli.BoolFlag{Name: "reboot-healthy", Usage: "boot the nodes healthy now too (a re-image, a new kernel): armed on their servers and power cycled with PXE next; by default they are skipped"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print the schedule and the predicted timeline; power nothing"},
		&cli.IntFlag{Name: "max-in-flight", Usage: "cap on the nodes in flight in all (0: only the per-link caps)"},
		&cli.Float64Flag{Name: "floor-mbps", Usage: "per-node bandwidth floor the caps keep (0: the rate at which the boot files take 60 s)"},
		&cli.StringFlag{Name: "image-size", Usage: "kernel + initrd size the prediction and the transfer deadline use (default: the nodes' profiles in the configuration's image store)"},
		&cli.StringFlag{Name: "protocol", Value: "http", Usage: "protocol of the kernel and initrd: http or tftp"},
		&cli.StringSliceFlag{Name: "calibrate", TakesFile: true, Usage: "fit the model from these past runs' journals (`JOURNAL`, repeat): their POST, DHCP and health times replace the defaults of --post, --dhcp-time and --health-time (a flag given still wins)"},
		&cli.DurationFlag{Name: "post", Value: 60 * time.Second, Usage: "firmware time from power-on to the first DHCP request"},
		&cli.DurationFlag{Name: "dhcp-time", Value: time.Second, Usage: "the prediction's time of the firmware's DHCP exchange, before its first file"},
		&cli.DurationFlag{Name: "health-time", Value: 120 * time.Second, Usage: "time from the last boot file to the health report"},
		&cli.Float64Flag{Name: "deadline-factor", Value: 3, Usage: "a phase's deadline: this times its expected time, plus --deadline-margin"},
		&cli.DurationFlag{Name: "deadline-margin", Value: 30 * time.Second, Usage: "added to every phase deadline"},
		&cli.IntFlag{Name: "max-attempts", Value: 3, Usage: "power-ons of one node before it is given up (a node the run powers off to relieve a congested link is not counted)"},
		&cli.StringFlag{Name: "on-failure", Value: "backoff", Usage: "when too many attempts fail: backoff (halve every link's limit, wait, go on) or pause (wait for `bootctl boot resume`)"},
		&cli.DurationFlag{Name: "patience", Usage: "the firmware's patience with one boot file until the run learns it from the transfers it sees (0: the transfer time at the floor)"},
		&cli.DurationFlag{Name: "poll", Value: time.Second, Usage: "how often the boot servers are read"},
		deliveryFlag(),
	)
}

// bootSetup is what a run or its prediction is made of.
type bootSetup struct {
	inv    *bootconfig.Inventory
	nodes  []*bootconfig.InventoryNode
	g      *topology.Graph
	a      *mapping.Assignment
	batch  []int
	flow   fabricsim.FlowConfig
	limits *bootrun.Limits
	cfg    bootrun.Config
	post   float64
	server []string // each node's boot server name
	failed []int    // the configuration's failed_servers
	// store and profile are the configuration's image store and default profile; imageBytes is
	// the kernel + initrd size the model uses and imageFrom says where it came from.
	store, profile string
	imageBytes     float64
	imageFrom      string
	// health is the expected time from the last file to the health report; cal what
	// --calibrate fitted (nil without it).
	health float64
	cal    *bootrun.Calibration
	// assumed names the model's times that are defaults, neither measured nor given; notCal
	// says why a dry run's --journal did not calibrate it ("" when it did or was not asked).
	assumed []string
	notCal  string
}

func bootAction(e *env, c *cli.Context) error {
	format := c.String("output")
	s, err := loadBootSetup(c)
	if err != nil {
		return err
	}
	in := bootrun.PredictInput{Graph: s.g, Assign: s.a, Batch: s.batch, Flow: s.flow, Limits: s.limits, Config: s.cfg, PostSeconds: s.post}
	var pred *bootrun.Prediction
	if s.cal != nil && s.cal.NodeNames != nil && slices.Equal(s.cal.NodeNames, nodeNames(s.nodes)) {
		// The same nodes as the runs: the links' share of capacity is fitted to what they took.
		s.cal.LinkEfficiency, pred, err = bootrun.FitEfficiency(c.Context, in, s.cal.MakespanSeconds)
	} else {
		pred, err = bootrun.Predict(c.Context, in)
	}
	if err != nil {
		return err
	}
	p2p, err := bootP2PPlan(c.Context, c, s)
	if err != nil {
		return err
	}
	if c.Bool("dry-run") {
		return writeBootPlan(e, format, s, pred, p2p)
	}
	return bootLive(e, c, format, s, pred)
}

// loadBootSetup reads the configuration and NODES, and makes the limits and the controller's
// configuration; nothing is asked of a BMC or a server.
func loadBootSetup(c *cli.Context) (*bootSetup, error) {
	sel, err := parseSelection(c)
	if err != nil {
		return nil, err
	}
	if sel.all() {
		return nil, badInput("boot: give the NODES (ranges, comma lists, @FILE or all) or --group")
	}
	s := &bootSetup{}
	algo, servers, err := bootMachine(c, s)
	if err != nil {
		return nil, err
	}
	if s.nodes, err = sel.pick(s.inv); err != nil {
		return nil, err
	}
	// The servers' own rule: failed_servers' nodes are dealt to the others, as every server deals them.
	if s.a, err = bootconfig.AssignServers(s.g.Hierarchy(), algo, len(servers), s.failed, nil); err != nil {
		return nil, badInput("--config: mapping: %w", err)
	}
	for _, n := range s.nodes {
		s.batch = append(s.batch, n.Index)
		s.server = append(s.server, servers[s.a.Server[n.Index]])
	}
	if err := bootFlow(c, s); err != nil {
		return nil, err
	}
	if s.limits, err = bootrun.ComputeLimits(s.g, nil, s.a, s.batch, s.flow, c.Float64("floor-mbps")); err != nil {
		return nil, badInput("--floor-mbps: %w", err)
	}
	return s, bootConfig(c, s)
}

// bootMachine loads the configuration's machine and inventory; it returns the mapping and the
// servers' names.
func bootMachine(c *cli.Context, s *bootSetup) (string, []string, error) {
	path := c.String("config")
	if c.IsSet("inventory") || c.IsSet("topology") {
		return "", nil, badInput("boot: --config gives the machine and the inventory; drop --inventory and --topology")
	}
	if path == "" {
		return "", nil, badInput("--config: required: the boot servers' configuration (its topology, mapping, servers and inventory)")
	}
	cfg, err := bootconfig.LoadConfig(path)
	if err != nil {
		return "", nil, configError(err)
	}
	// As every server reads it: the mapping's default applied, failed_servers checked.
	if err := cfg.ValidateOwnership(); err != nil {
		return "", nil, configError(err)
	}
	algo := cfg.Mapping
	s.failed, s.store, s.profile = cfg.FailedServers, cfg.Images, cmp.Or(cfg.Profile, "default")
	m, err := cfg.LoadMachine()
	if err != nil {
		return "", nil, badInput("%s: %w", path, err)
	}
	s.g, s.inv = m.Graph, m.Inventory
	if len(cfg.Servers) == 0 || len(cfg.Servers) > len(s.g.Servers()) {
		// The model places server i at the machine's boot server i: there must be one.
		return "", nil, badInput("%s: %d servers for a machine of %d boot servers", path, len(cfg.Servers), len(s.g.Servers()))
	}
	names := make([]string, len(cfg.Servers))
	for i, sv := range cfg.Servers {
		names[i] = cmp.Or(sv.Name, fmt.Sprintf("bs%d", i))
	}
	return algo, names, nil
}

func bootFlow(c *cli.Context, s *bootSetup) error {
	size, from, err := bootImageSize(c, s)
	if err != nil {
		return err
	}
	s.imageBytes, s.imageFrom = size, from
	proto, err := fabricsim.ParseProtocol(c.String("protocol"))
	if err != nil || proto == fabricsim.Uncapped {
		return badInput("--protocol: %q: want http or tftp", c.String("protocol"))
	}
	s.flow = fabricsim.BootFlowConfig(size, proto)
	s.flow.DHCPSeconds = c.Duration("dhcp-time").Seconds()
	s.post, s.health = c.Duration("post").Seconds(), c.Duration("health-time").Seconds()
	if s.post < 0 || s.health < 0 || s.flow.DHCPSeconds < 0 {
		return badInput("--post, --dhcp-time and --health-time must not be negative")
	}
	return bootCalibrate(c, s)
}

// bootCalibrate fits the plant from --calibrate's journals and puts what was fitted in place of
// every model parameter not given by its flag: the prediction of a plant that has run is what
// it did, not a default. A dry run with the --journal of a past run and no --calibrate is
// calibrated by that journal: the run it repeats is the best measure of it there is.
func bootCalibrate(c *cli.Context, s *bootSetup) error {
	paths := c.StringSlice("calibrate")
	fromJournal := len(paths) == 0 && c.Bool("dry-run") && c.String("journal") != "" && fileExists(c.String("journal"))
	if fromJournal {
		paths = []string{c.String("journal")}
	}
	if c.IsSet("health-time") {
		s.flow.HealthSeconds = s.health // a time given is the prediction's, not only a deadline
	}
	defer func() { s.assumed = bootAssumed(c, s.cal) }()
	if len(paths) == 0 {
		return nil
	}
	cal, err := bootrun.CalibrateJournals(paths, s.imageBytes)
	switch {
	case err != nil && fromJournal:
		s.notCal = err.Error() // it names the journal and why
		return nil
	case err != nil:
		return badInput("--calibrate: %w", err)
	}
	s.applyCalibration(c, cal)
	return nil
}

// applyCalibration puts what cal fitted in place of each model time its flag does not give.
func (s *bootSetup) applyCalibration(c *cli.Context, cal *bootrun.Calibration) {
	s.cal = cal
	if !c.IsSet("post") && cal.Post.Samples > 0 {
		s.post = cal.Post.Median
	}
	if !c.IsSet("dhcp-time") && cal.DHCP.Samples > 0 {
		s.flow.DHCPSeconds = cal.DHCP.Median
	}
	if !c.IsSet("health-time") && cal.Health.Samples > 0 {
		s.health = cal.Health.Median
	}
	// Calibrated, the prediction and the deadline both take the measured health time.
	s.flow.HealthSeconds = s.health
}

// bootAssumed names the model's times that neither a flag nor a calibration (cal, nil for
// none) gave: the defaults a dry run says it assumed.
func bootAssumed(c *cli.Context, cal *bootrun.Calibration) []string {
	var out []string
	for _, p := range []struct {
		name, flag string
		fitted     func(*bootrun.Calibration) bool
	}{
		{"post", "post", func(cal *bootrun.Calibration) bool { return cal.Post.Samples > 0 }},
		{"dhcp", "dhcp-time", func(cal *bootrun.Calibration) bool { return cal.DHCP.Samples > 0 }},
		{"health", "health-time", func(cal *bootrun.Calibration) bool { return cal.Health.Samples > 0 }},
	} {
		if !c.IsSet(p.flag) && (cal == nil || !p.fitted(cal)) {
			out = append(out, p.name)
		}
	}
	return out
}

// fileExists reports whether path names something that exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// bootImageSize is the kernel + initrd size of the run: --image-size, else the largest of the
// batch's profiles in the configuration's image store (what the servers will serve them). A
// guessed size put the dry run off by minutes, so a store named that cannot tell is an error;
// with no store named it is the default 50 MB, said as such.
func bootImageSize(c *cli.Context, s *bootSetup) (float64, string, error) {
	if c.IsSet("image-size") {
		size, err := units.ParseSize(c.String("image-size"))
		if err != nil {
			return 0, "", badInput("--image-size: %w", err)
		}
		return size, "--image-size", nil
	}
	if s.store == "" {
		// An admin's configuration may name no store (only the servers' must); the model then
		// falls back to the paper's image, and says so.
		return fabricsim.DefaultKernelBytes + fabricsim.DefaultInitrdBytes, "the default: the configuration names no image store (images) to read the profiles from; give --image-size", nil
	}
	st, err := images.Open(s.store)
	if err != nil {
		return 0, "", badInput("--config: %w (or give --image-size)", err)
	}
	names, profiles := make([]string, len(s.nodes)), make([]string, len(s.nodes))
	for i, n := range s.nodes {
		names[i], profiles[i] = n.Name, cmp.Or(n.Profile, s.profile)
	}
	best, size, count, err := st.Largest(names, profiles)
	if err != nil {
		return 0, "", badInput("%w (or give --image-size)", err)
	}
	from := fmt.Sprintf("profile %s in the image store %s", best, s.store)
	if count > 1 {
		from = fmt.Sprintf("the largest of the batch's %d profiles, %s, in the image store %s", count, best, s.store)
	}
	if !(size > 0) {
		return 0, "", badInput("%s: kernel and initrd are empty; give --image-size", from)
	}
	return size, from, nil
}

// bootConfig makes the controller's configuration: caps from the limits, deadlines from the
// expected phase times.
func bootConfig(c *cli.Context, s *bootSetup) error {
	f := c.Float64("deadline-factor")
	if !(f > 0) || math.IsInf(f, 0) {
		return badInput("--deadline-factor: %v: want a positive number", f)
	}
	if c.Int("max-attempts") < 1 || c.Int("max-in-flight") < 0 || c.Duration("deadline-margin") < 0 || c.Duration("patience") < 0 {
		return badInput("--max-attempts must be at least 1, --max-in-flight, --deadline-margin and --patience not negative")
	}
	onFailure := c.String("on-failure")
	if onFailure != "backoff" && onFailure != "pause" {
		return badInput("--on-failure: %q: want backoff or pause", onFailure)
	}
	mb := 0.0
	for _, file := range s.flow.Files {
		mb += file.Bytes * 8 / 1e6
	}
	s.cfg = bootrun.Config{Caps: s.limits.Caps, CapacityMbps: s.limits.CapacityMbps, FilesMb: mb, MaxInFlight: c.Int("max-in-flight"),
		Expect: bootrun.Expect{Power: c.Duration("timeout").Seconds(), Firmware: s.post,
			Transfer: mb / s.limits.FloorMbps, Health: s.health},
		Factor: f, Margin: max(c.Duration("deadline-margin").Seconds(), 1e-3), MaxAttempts: c.Int("max-attempts"),
		Patience: c.Duration("patience").Seconds(), Breaker: bootrun.BreakerConfig{Pause: onFailure == "pause"}}
	if _, err := bootrun.New(s.cfg, nil); err != nil {
		return badInput("%w", err)
	}
	return nil
}

func (s *bootSetup) controller() (*bootrun.Controller, error) {
	nodes := make([]bootrun.Node, len(s.nodes))
	for i, n := range s.nodes {
		nodes[i] = bootrun.Node{Name: n.Name, Resources: s.limits.Nodes[i]}
	}
	return bootrun.New(s.cfg, nodes)
}
