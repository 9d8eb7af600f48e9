package fabricsim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// PlanRow is the analytic prediction for one batch under one algorithm.
type PlanRow struct {
	Batch string `json:"batch"`
	Algo  string `json:"algo"`
	Analysis
	// SpeedupVsSCDA is this row's bandwidth over scda's for the same batch (0 without an scda row).
	SpeedupVsSCDA float64 `json:"speedup_vs_scda,omitempty"`
	// FlowSeconds is the flow model's batch time for the same boot (PlanInput.Flow), and
	// FlowMbps the image over it.
	FlowSeconds float64 `json:"flow_seconds,omitempty"`
	FlowMbps    float64 `json:"flow_mbps,omitempty"`
	// Failed says which failed servers the row's mapping deals around (absent) and whose blocks it
	// moves (dead), e.g. "absent bs0; dead bs3-bs4"; empty without failures (see FailureRule).
	Failed string `json:"failed,omitempty"`
	// MovedNodes is the number of nodes moved off dead servers.
	MovedNodes int `json:"moved_nodes,omitempty"`
	// P2P is the same boot with peer delivery (PlanInput.Delivery p2p), beside this row's
	// server delivery.
	P2P *P2PPlan `json:"p2p,omitempty"`
}

// P2PPlan is a plan row's boot with peer delivery: the kernel and agent from the servers (the
// analytic model's bandwidth, as the row), then the root image by peers (AnalyzeP2P).
type P2PPlan struct {
	ServerBytes   float64      `json:"server_bytes"`
	RootBytes     float64      `json:"root_bytes"`
	ServerSeconds float64      `json:"server_seconds"`
	Root          *P2PAnalysis `json:"root"`
	BootSeconds   float64      `json:"boot_seconds"`
	// SpeedupVsServer is the row's server-delivery boot time over this one.
	SpeedupVsServer float64 `json:"speedup_vs_server"`
}

// PlanInput is what a plan is made of.
type PlanInput struct {
	Graph *topology.Graph
	// Router gives routes; nil means the graph's tree routes.
	Router     topology.Router
	Algos      []mapping.Algo
	Batches    []topology.Batch
	ImageBytes float64
	// Absent marks the boot servers never up, by index (nil: none): the block-cyclic deal runs
	// over the others. Dead marks the servers that fail during the boot: only their blocks move,
	// to the least-loaded survivors. Both as mapping.Owners, the rule of every boot server.
	Absent []bool
	Dead   []bool
	// Flow also runs the flow-level simulation of each row (everything starting together, no
	// protocol caps), to show beside the analytic model.
	Flow bool
	// Delivery p2p adds each row's boot with peer delivery: ServerBytes of the image from the
	// servers, the rest by peers in pieces of PieceBytes (0: DefaultPieceBytes).
	Delivery    Delivery
	ServerBytes float64
	PieceBytes  float64
	// Progress, when set, is called after each row.
	Progress func(done, total int)
}

// Plan runs the analytic model for every batch and algorithm, batches outermost, and fills in the
// ratio to scda when scda is among the algorithms.
func Plan(in PlanInput) ([]PlanRow, error) {
	an, err := NewAnalyzer(in.Graph, in.Router)
	if err != nil {
		return nil, err
	}
	// Block-cyclic assignments do not depend on the batch: make them once.
	fixed := make([]*mapping.Assignment, len(in.Algos))
	fixedMoved := make([]int, len(in.Algos))
	for i, algo := range in.Algos {
		if !algo.Balanced {
			if fixed[i], fixedMoved[i], err = in.AssignServers(algo, nil); err != nil {
				return nil, err
			}
		}
	}
	var rows []PlanRow
	for _, b := range in.Batches {
		first := len(rows)
		for i, algo := range in.Algos {
			a, moved := fixed[i], fixedMoved[i]
			if a == nil {
				if a, moved, err = in.AssignServers(algo, b.Nodes); err != nil {
					return nil, err
				}
			}
			row, err := in.row(an, b, algo, a)
			if err != nil {
				return nil, err
			}
			row.MovedNodes = moved
			rows = append(rows, row)
			if in.Progress != nil {
				in.Progress(len(rows), len(in.Batches)*len(in.Algos))
			}
		}
		setSpeedups(rows[first:])
	}
	return rows, nil
}

// row is batch b's row under algo's assignment a: the analytic model, and the flow model and
// peer delivery when asked for.
func (in *PlanInput) row(an *Analyzer, b topology.Batch, algo mapping.Algo, a *mapping.Assignment) (PlanRow, error) {
	res, err := an.Analyze(a, b.Nodes, in.ImageBytes)
	if err != nil {
		return PlanRow{}, fmt.Errorf("%s, %s: %w", b.Label, algo.Name, err)
	}
	row := PlanRow{Batch: b.Label, Algo: algo.Name, Analysis: *res, Failed: FailureRule(algo, in.Absent, in.Dead)}
	if in.Flow && len(b.Nodes) > 0 {
		if row.FlowSeconds, err = FlowBatchSeconds(in.Graph, in.Router, a, b.Nodes, in.ImageBytes); err != nil {
			return PlanRow{}, fmt.Errorf("%s, %s: flow model: %w", b.Label, algo.Name, err)
		}
		row.FlowMbps = in.ImageBytes * 8 / 1e6 / row.FlowSeconds
	}
	if in.Delivery == P2PDelivery && len(b.Nodes) > 0 {
		if row.P2P, err = in.p2pRow(&row, a, b.Nodes); err != nil {
			return PlanRow{}, fmt.Errorf("%s, %s: %w", b.Label, algo.Name, err)
		}
	}
	return row, nil
}

// p2pRow is row's boot with peer delivery under assignment a.
func (in *PlanInput) p2pRow(row *PlanRow, a *mapping.Assignment, batch []int) (*P2PPlan, error) {
	return PlanP2P(in.Graph, in.Router, a, batch, &row.Analysis, in.ImageBytes, in.ServerBytes, in.PieceBytes)
}

// PlanP2P is the boot of batch under a with peer delivery, beside res, the analytic model's for
// the same boot by server: serverBytes of the image of imageBytes from the servers at res's
// bandwidth, then the rest by peers in pieces of pieceBytes (0: DefaultPieceBytes).
func PlanP2P(g *topology.Graph, r topology.Router, a *mapping.Assignment, batch []int, res *Analysis, imageBytes, serverBytes, pieceBytes float64) (*P2PPlan, error) {
	root := imageBytes - serverBytes
	if !(serverBytes >= 0) || !(root > 0) {
		return nil, fmt.Errorf("peer delivery: %v bytes from the server leave no root image of the %v-byte image", serverBytes, imageBytes)
	}
	an, err := AnalyzeP2P(P2PInput{Graph: g, Router: r, Assign: a, Batch: batch, RootBytes: root, PieceBytes: pieceBytes})
	if err != nil {
		return nil, err
	}
	p := &P2PPlan{ServerBytes: serverBytes, RootBytes: root, Root: an}
	if serverBytes > 0 {
		p.ServerSeconds = serverBytes * 8 / (res.BandwidthMbps * 1e6)
	}
	p.BootSeconds = p.ServerSeconds + an.Seconds
	p.SpeedupVsServer = res.BootSeconds / p.BootSeconds
	return p, nil
}

// P2PSplit is what peer delivery takes from the servers and from peers of an image of
// imageBytes, by the files of BootFiles: the default image is a 10 MB kernel from the server and
// a 40 MB root image from peers; any other size is one image file, all of it from peers.
func P2PSplit(imageBytes float64) (serverBytes, rootBytes float64) {
	files := BootFiles(imageBytes, Uncapped)
	root, err := RootFile(files)
	if err != nil {
		return imageBytes, 0
	}
	return imageBytes - files[root].Bytes, files[root].Bytes
}

// setSpeedups sets each row's bandwidth over scda's, if scda is among the rows (one batch's).
func setSpeedups(rows []PlanRow) {
	for _, r := range rows {
		if r.Algo != "scda" {
			continue
		}
		for j := range rows {
			if r.BandwidthMbps > 0 {
				rows[j].SpeedupVsSCDA = rows[j].BandwidthMbps / r.BandwidthMbps
			}
		}
	}
}

// AssignServers is the mapping of every plan row for algo and batch: mapping.AssignOwners with the
// input's absent and dead servers, which for the block-cyclic algorithms is mapping.Owners, the
// function every boot server uses (bootconfig.AssignServers). moved is the number of nodes moved
// off dead servers.
func (in *PlanInput) AssignServers(algo mapping.Algo, batch []int) (a *mapping.Assignment, moved int, err error) {
	if a, moved, err = mapping.AssignOwners(in.Graph, algo, batch, in.Absent, in.Dead); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", algo.Name, err)
	}
	return a, moved, nil
}

// FailureRule says how a row's mapping treats the failed servers: "absent LIST" are dealt around,
// "dead LIST" have their blocks moved; balanced, being batch-aware, balances over the non-absent
// servers and then moves the dead servers' nodes ("dead LIST after balancing"). Empty when no
// server failed. Lists are ascending bsN names with runs as bsA-bsB.
func FailureRule(algo mapping.Algo, absent, dead []bool) string {
	var parts []string
	if l := ServerList(absent); l != "" {
		parts = append(parts, "absent "+l)
	}
	if l := ServerList(dead); l != "" {
		if algo.Balanced {
			l += " after balancing"
		}
		parts = append(parts, "dead "+l)
	}
	return strings.Join(parts, "; ")
}

// ServerNames names the marked servers bsN, ascending (nil when none is marked).
func ServerNames(marked []bool) []string {
	var out []string
	for s, m := range marked {
		if m {
			out = append(out, "bs"+strconv.Itoa(s))
		}
	}
	return out
}

// SegmentMin is the row's least bandwidth per node on the segment named name, 0 if it has none.
func (r PlanRow) SegmentMin(name string) float64 {
	for _, s := range r.Segments {
		if s.Name == name {
			return s.MinMbps
		}
	}
	return 0
}

// ServerList names the marked servers in ascending order, runs of three or more as bsA-bsB:
// "bs0,bs3-bs5". Empty when none is marked.
func ServerList(marked []bool) string {
	var parts []string
	for s := 0; s < len(marked); s++ {
		if !marked[s] {
			continue
		}
		e := s
		for e+1 < len(marked) && marked[e+1] {
			e++
		}
		switch {
		case e == s:
			parts = append(parts, "bs"+strconv.Itoa(s))
		case e == s+1:
			parts = append(parts, "bs"+strconv.Itoa(s), "bs"+strconv.Itoa(e))
		default:
			parts = append(parts, "bs"+strconv.Itoa(s)+"-bs"+strconv.Itoa(e))
		}
		s = e
	}
	return strings.Join(parts, ",")
}
