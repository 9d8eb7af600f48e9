package simrun

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/bootfabric/bootfabric/units"
)

// Plan is bootctl plan's result: fabricsim.Plan's rows with the machine and the image they are
// of. Its JSON form is the command's; the fields without a JSON name say which columns the table
// and the CSV have.
type Plan struct {
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

	// KernelBytes and InitrdBytes are the profile's files (with Profile).
	KernelBytes, InitrdBytes int64 `json:"-"`
	// Flow adds the flow model's columns (--model flow).
	Flow bool `json:"-"`
	// P2PServerBytes and P2PRootBytes are what peer delivery takes from the servers and from
	// peers (with Delivery p2p).
	P2PServerBytes, P2PRootBytes float64 `json:"-"`
	// Absent and Dead are the failed servers by index, for the table's line on them.
	Absent, Dead []bool `json:"-"`
}

func (p *Plan) p2p() bool      { return p.Delivery == fabricsim.P2PDelivery }
func (p *Plan) failures() bool { return p.Absent != nil || p.Dead != nil }

// CSV is the plan as CSV records, the header first.
func (p *Plan) CSV() [][]string {
	head := append([]string{"batch", "nodes", "algo"}, p.Segments...)
	head = append(head, "bandwidth_mbps", "bottlenecks", "boot_seconds", "speedup_vs_scda")
	if p.Flow {
		head = append(head, "flow_mbps", "flow_seconds")
	}
	if p.p2p() {
		head = append(head, "p2p_seconds", "p2p_server_seconds", "p2p_root_seconds", "p2p_root_bottlenecks", "p2p_seeding", "p2p_speedup_vs_server")
	}
	if p.failures() {
		head = append(head, "failed", "moved_nodes")
	}
	out := [][]string{head}
	for _, r := range p.Rows {
		rec := []string{r.Batch, strconv.Itoa(r.Nodes), r.Algo}
		for _, s := range p.Segments {
			rec = append(rec, texttable.Float(r.SegmentMin(s), 4))
		}
		// No ratio (no scda row for the batch) is an empty field, as in report's CSV; the
		// table shows "-".
		ratio := ""
		if r.SpeedupVsSCDA > 0 {
			ratio = texttable.Float(r.SpeedupVsSCDA, 4)
		}
		rec = append(rec, texttable.Float(r.BandwidthMbps, 4), strings.Join(r.Bottlenecks, " "), texttable.Float(r.BootSeconds, 4), ratio)
		if p.Flow {
			rec = append(rec, texttable.Float(r.FlowMbps, 4), texttable.Float(r.FlowSeconds, 4))
		}
		if p.p2p() {
			rec = append(rec, p2pCells(r.P2P, 4, " ")...)
		}
		if p.failures() {
			rec = append(rec, r.Failed, strconv.Itoa(r.MovedNodes))
		}
		out = append(out, rec)
	}
	return out
}

// WriteTable writes the plan's header lines and its rows as a table.
func (p *Plan) WriteTable(w io.Writer) error {
	image := units.FormatBytes(p.ImageBytes)
	if p.Profile != "" {
		image += fmt.Sprintf(" (profile %s: kernel %s MB, initrd %s MB)", p.Profile,
			texttable.Float(float64(p.KernelBytes)/1e6, 1), texttable.Float(float64(p.InitrdBytes)/1e6, 1))
	}
	fmt.Fprintf(w, "%s: %d nodes, %d boot servers; image %s; bandwidth in Mb/s per node (minimum per segment)\n",
		p.Topology, p.Nodes, p.Servers, image)
	if p.failures() {
		fmt.Fprintln(w, failureHeader(p.Absent, p.Dead))
	}
	if p.p2p() {
		fmt.Fprintln(w, p2pHeader(p.P2PServerBytes, p.P2PRootBytes))
	}
	t := texttable.New(w)
	head := []any{"batch", "nodes", "algo"}
	for _, s := range p.Segments {
		head = append(head, s)
	}
	head = append(head, "Mb/s", "bottleneck", "boot s", "x scda")
	if p.Flow {
		head = append(head, "flow s", "flow/analytic")
	}
	if p.p2p() {
		head = append(head, "p2p s", "kernel s", "root s", "root bound", "servers send", "x server")
	}
	if p.failures() {
		head = append(head, "failed")
	}
	t.Row(head...)
	for _, r := range p.Rows {
		t.Row(p.tableRow(r)...)
	}
	return t.Flush()
}

func (p *Plan) tableRow(r fabricsim.PlanRow) []any {
	cells := []any{r.Batch, r.Nodes, r.Algo}
	for _, s := range p.Segments {
		cells = append(cells, texttable.Float(r.SegmentMin(s), 2))
	}
	ratio := "-"
	if r.SpeedupVsSCDA > 0 {
		ratio = texttable.Float(r.SpeedupVsSCDA, 2)
	}
	cells = append(cells, texttable.Float(r.BandwidthMbps, 2), strings.Join(r.Bottlenecks, ","), texttable.Float(r.BootSeconds, 1), ratio)
	if p.Flow {
		cells = append(cells, texttable.Float(r.FlowSeconds, 1), texttable.Float(r.FlowSeconds/r.BootSeconds, 3))
	}
	if p.p2p() {
		for _, v := range p2pCells(r.P2P, 2, ",") {
			cells = append(cells, v)
		}
	}
	if p.failures() {
		cells = append(cells, r.Failed)
	}
	return cells
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

// p2pHeader is the line that says what peer delivery's column is of.
func p2pHeader(server, root float64) string {
	return fmt.Sprintf("delivery p2p: %s from the servers, then the root image (%s) by peers (own board first) in %d KiB pieces",
		units.FormatBytes(server), units.FormatBytes(root), fabricsim.DefaultPieceBytes>>10)
}

// p2pCells are a plan row's peer delivery cells: boot seconds, of which the kernel from the
// servers and the root stage (prec decimals), the root stage's bottlenecks joined by sep, the
// servers' seeding (in CSV the schedule and the copies the servers send), the ratio to server
// delivery; "-" for an empty batch.
func p2pCells(p *fabricsim.P2PPlan, prec int, sep string) []string {
	if p == nil {
		return []string{"-", "-", "-", "-", "-", "-"}
	}
	return []string{texttable.Float(p.BootSeconds, prec), texttable.Float(p.ServerSeconds, prec), texttable.Float(p.Root.Seconds, prec),
		strings.Join(p.Root.Bottlenecks, sep), p.Root.Seeding(), texttable.Float(p.SpeedupVsServer, prec)}
}
