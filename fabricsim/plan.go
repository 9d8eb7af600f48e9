package fabricsim

import (
	"fmt"

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
}

// PlanInput is what a plan is made of.
type PlanInput struct {
	Graph *topology.Graph
	// Router gives routes; nil means the graph's tree routes.
	Router     topology.Router
	Algos      []mapping.Algo
	Batches    []topology.Batch
	ImageBytes float64
	// Failed marks failed boot servers by index (nil: none).
	Failed []bool
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
	for i, algo := range in.Algos {
		if !algo.Balanced {
			if fixed[i], err = mapping.Assign(in.Graph, algo, nil, in.Failed); err != nil {
				return nil, fmt.Errorf("%s: %w", algo.Name, err)
			}
		}
	}
	var rows []PlanRow
	for _, b := range in.Batches {
		first := len(rows)
		for i, algo := range in.Algos {
			a := fixed[i]
			if a == nil {
				if a, err = mapping.Assign(in.Graph, algo, b.Nodes, in.Failed); err != nil {
					return nil, fmt.Errorf("%s: %w", algo.Name, err)
				}
			}
			res, err := an.Analyze(a, b.Nodes, in.ImageBytes)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", b.Label, algo.Name, err)
			}
			row := PlanRow{Batch: b.Label, Algo: algo.Name, Analysis: *res}
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
		for _, r := range rows[first:] {
			if r.Algo != "scda" {
				continue
			}
			for j := first; j < len(rows); j++ {
				if r.BandwidthMbps > 0 {
					rows[j].SpeedupVsSCDA = rows[j].BandwidthMbps / r.BandwidthMbps
				}
			}
		}
	}
	return rows, nil
}
