package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/bootfabric/bootfabric/units"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

func planCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "plan",
		Usage: "predict boot bandwidth, bottleneck segments and boot time per batch and mapping (the paper's model)",
		Description: "With no flags: the paper's machine (sunway), all algorithms side by side with the ratio to\n" +
			"scda, and the paper's ladder of batches (1, 20, 21, 32 boards; 1 to 40 cabinets).",
		Flags: append(machineFlags(), outputFlag("table", "json", "yaml", "csv"),
			withChoices(cli.StringFlag{Name: "model", Value: "analytic", Usage: "analytic (the paper's per-segment model), flow (also the flow-level simulation of the same boot, side by side)"},
				"analytic", "flow"), deliveryFlag()),
		Action: func(c *cli.Context) error { return runPlan(e, c) },
	}
}

// planned is a plan's result with what its writers need to lay it out.
type planned struct {
	in       *machineInput
	rows     []fabricsim.PlanRow
	segs     []string
	flow     bool // --model flow: the flow columns
	p2p      bool // --delivery p2p: the peer delivery columns
	failures bool // failed servers: the failure columns
}

func runPlan(e *env, c *cli.Context) error {
	format, err := outputFormat(c, "table", "json", "yaml", "csv")
	if err != nil {
		return err
	}
	model := c.String("model")
	if model != "analytic" && model != "flow" {
		return badInput("--model: %q is not one of analytic, flow", model)
	}
	delivery, err := readDelivery(c)
	if err != nil {
		return err
	}
	in, err := readMachineInput(c)
	if err != nil {
		return err
	}
	if err := in.checkP2P(delivery); err != nil {
		return err
	}
	pin := fabricsim.PlanInput{Graph: in.Graph, Algos: in.Algos, Batches: in.Batches, ImageBytes: in.ImageBytes, Absent: in.Absent, Dead: in.Dead, Flow: model == "flow", Delivery: delivery}
	pin.ServerBytes, _ = in.p2pSplit()
	if pin.Flow {
		bar := e.progressBar("plan", 0, "rows")
		defer bar.Done()
		pin.Progress = bar.Func()
	}
	rows, err := fabricsim.Plan(pin)
	if err != nil {
		return err
	}
	e.log.Debug("planned", zap.Int("rows", len(rows)))
	p := planned{in: in, rows: rows, segs: fabricsim.SegmentNames(in.Graph), flow: pin.Flow, p2p: delivery == fabricsim.P2PDelivery, failures: in.Absent != nil || in.Dead != nil}
	switch format {
	case "json", "yaml":
		return writeData(e.stdout, format, planJSON{Topology: in.Graph.Name, Nodes: len(in.Graph.Nodes()), Servers: len(in.Graph.Servers()),
			ImageBytes: in.ImageBytes, Profile: in.Profile, Delivery: delivery, Segments: p.segs, AbsentServers: fabricsim.ServerNames(in.Absent), DeadServers: fabricsim.ServerNames(in.Dead), Rows: rows})
	case "csv":
		return writeCSV(e.stdout, p.csv())
	}
	return p.writeTable(e)
}

func (p planned) csv() [][]string {
	head := append([]string{"batch", "nodes", "algo"}, p.segs...)
	head = append(head, "bandwidth_mbps", "bottlenecks", "boot_seconds", "speedup_vs_scda")
	if p.flow {
		head = append(head, "flow_mbps", "flow_seconds")
	}
	if p.p2p {
		head = append(head, "p2p_seconds", "p2p_server_seconds", "p2p_root_seconds", "p2p_root_bottlenecks", "p2p_seeding", "p2p_speedup_vs_server")
	}
	if p.failures {
		head = append(head, "failed", "moved_nodes")
	}
	out := [][]string{head}
	for _, r := range p.rows {
		rec := []string{r.Batch, strconv.Itoa(r.Nodes), r.Algo}
		for _, s := range p.segs {
			rec = append(rec, fmtFloat(r.SegmentMin(s), 4))
		}
		// No ratio (no scda row for the batch) is an empty field, as in report's CSV; the
		// table shows "-".
		ratio := ""
		if r.SpeedupVsSCDA > 0 {
			ratio = fmtFloat(r.SpeedupVsSCDA, 4)
		}
		rec = append(rec, fmtFloat(r.BandwidthMbps, 4), strings.Join(r.Bottlenecks, " "), fmtFloat(r.BootSeconds, 4), ratio)
		if p.flow {
			rec = append(rec, fmtFloat(r.FlowMbps, 4), fmtFloat(r.FlowSeconds, 4))
		}
		if p.p2p {
			rec = append(rec, p2pCells(r.P2P, 4, " ")...)
		}
		if p.failures {
			rec = append(rec, r.Failed, strconv.Itoa(r.MovedNodes))
		}
		out = append(out, rec)
	}
	return out
}

func (p planned) writeTable(e *env) error {
	g := p.in.Graph
	image := units.FormatBytes(p.in.ImageBytes)
	if p.in.Profile != "" {
		image += fmt.Sprintf(" (profile %s: kernel %s MB, initrd %s MB)", p.in.Profile,
			fmtFloat(float64(p.in.KernelBytes)/1e6, 1), fmtFloat(float64(p.in.InitrdBytes)/1e6, 1))
	}
	fmt.Fprintf(e.stdout, "%s: %d nodes, %d boot servers; image %s; bandwidth in Mb/s per node (minimum per segment)\n",
		g.Name, len(g.Nodes()), len(g.Servers()), image)
	if p.failures {
		fmt.Fprintln(e.stdout, failureHeader(p.in.Absent, p.in.Dead))
	}
	if p.p2p {
		fmt.Fprintln(e.stdout, p2pHeader(p.in.p2pSplit()))
	}
	t := newTable(e.stdout)
	head := []any{"batch", "nodes", "algo"}
	for _, s := range p.segs {
		head = append(head, s)
	}
	head = append(head, "Mb/s", "bottleneck", "boot s", "x scda")
	if p.flow {
		head = append(head, "flow s", "flow/analytic")
	}
	if p.p2p {
		head = append(head, "p2p s", "kernel s", "root s", "root bound", "servers send", "x server")
	}
	if p.failures {
		head = append(head, "failed")
	}
	t.row(head...)
	for _, r := range p.rows {
		t.row(p.tableRow(r)...)
	}
	return t.flush()
}

func (p planned) tableRow(r fabricsim.PlanRow) []any {
	cells := []any{r.Batch, r.Nodes, r.Algo}
	for _, s := range p.segs {
		cells = append(cells, fmtFloat(r.SegmentMin(s), 2))
	}
	ratio := "-"
	if r.SpeedupVsSCDA > 0 {
		ratio = fmtFloat(r.SpeedupVsSCDA, 2)
	}
	cells = append(cells, fmtFloat(r.BandwidthMbps, 2), strings.Join(r.Bottlenecks, ","), fmtFloat(r.BootSeconds, 1), ratio)
	if p.flow {
		cells = append(cells, fmtFloat(r.FlowSeconds, 1), fmtFloat(r.FlowSeconds/r.BootSeconds, 3))
	}
	if p.p2p {
		for _, v := range p2pCells(r.P2P, 2, ",") {
			cells = append(cells, v)
		}
	}
	if p.failures {
		cells = append(cells, r.Failed)
	}
	return cells
}

type planJSON struct {
	Topology   string  `json:"topology"`
	Nodes      int     `json:"nodes"`
	Servers    int     `json:"servers"`
	ImageBytes float64 `json:"image_bytes"`
	Profile    string  `json:"profile,omitempty"` // --profile whose kernel and initrd ImageBytes is
	// Delivery is --delivery; with p2p each row has its boot by peers ("p2p").
	Delivery fabricsim.Delivery `json:"delivery"`
	Segments []string           `json:"segments"`
	// AbsentServers (--failed-servers) and DeadServers (--failed-during-boot) name the failed
	// servers; each row's "failed" says which rule its mapping applied to them.
	AbsentServers []string            `json:"absent_servers,omitempty"`
	DeadServers   []string            `json:"dead_servers,omitempty"`
	Rows          []fabricsim.PlanRow `json:"rows"`
}

// failureHeader is the table's line on failed servers: which are absent, which dead, and what
// each rule does (mapping.Owners), so that the "failed" column reads on its own.
func failureHeader(absent, dead []bool) string {
	var parts []string
	if l := fabricsim.ServerList(absent); l != "" {
		parts = append(parts, "absent "+l+" (never up: blocks dealt over the live servers)")
	}
	if l := fabricsim.ServerList(dead); l != "" {
		parts = append(parts, "dead "+l+" (failed during the boot: only their blocks move, to the least-loaded survivors)")
	}
	return "failed servers: " + strings.Join(parts, "; ")
}

// fmtFloat is texttable.Float, bootctl's one way of printing a float with prec decimals.
func fmtFloat(v float64, prec int) string { return texttable.Float(v, prec) }
