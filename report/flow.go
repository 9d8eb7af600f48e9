package report

import (
	"context"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// FlowModelName names the flow model FabricsimFlow runs, for the report's text.
const FlowModelName = "fabricsim max-min flows, one uncapped image file, all nodes at t=0"

// FabricsimFlow returns fabricsim's flow-level simulation set up to stand beside the analytic
// model: each node fetches one file of the image size with no protocol cap, all nodes power on at
// time 0, no DHCP or health-report time. Flows share links max-min fairly and re-share when a flow
// ends, so the batch finishes no later than the analytic model says and nodes finish at
// different times. ctx stops a long simulation.
func FabricsimFlow(ctx context.Context) FlowFunc {
	return func(g *topology.Graph, a *mapping.Assignment, batch []int, imageBytes float64) (*FlowOutcome, error) {
		cfg := fabricsim.FlowConfig{
			Files:      []fabricsim.File{{Name: "image", Bytes: imageBytes, Protocol: fabricsim.Uncapped}},
			MaxSamples: 2,
			TopLinks:   -1,
		}
		res, err := fabricsim.Simulate(ctx, g, nil, a, batch, cfg)
		if err != nil {
			return nil, err
		}
		out := &FlowOutcome{BatchSeconds: res.BatchSeconds, NodeSeconds: make([]float64, len(res.NodeResults))}
		for i, n := range res.NodeResults {
			out.NodeSeconds[i] = n.DoneSeconds
		}
		return out, nil
	}
}
