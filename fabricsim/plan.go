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
			rows = append(rows, PlanRow{Batch: b.Label, Algo: algo.Name, Analysis: *res})
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
