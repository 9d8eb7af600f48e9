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
			res, err := an.Analyze(a, b.Nodes, in.ImageBytes)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", b.Label, algo.Name, err)
			}
			row := PlanRow{Batch: b.Label, Algo: algo.Name, Analysis: *res, Failed: FailureRule(algo, in.Absent, in.Dead), MovedNodes: moved}
			if in.Flow && len(b.Nodes) > 0 {
				if row.FlowSeconds, err = FlowBatchSeconds(in.Graph, in.Router, a, b.Nodes, in.ImageBytes); err != nil {
					return nil, fmt.Errorf("%s, %s: flow model: %w", b.Label, algo.Name, err)
				}
				row.FlowMbps = in.ImageBytes * 8 / 1e6 / row.FlowSeconds
			}
			rows = append(rows, row)
			if in.Progress != nil {
				in.Progress(len(rows), len(in.Batches)*len(in.Algos))
			}
		}
		setSpeedups(rows[first:])
	}
	return rows, nil
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
