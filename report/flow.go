package report

import (
	"context"
	"fmt"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// FlowModelName names the flow model FabricsimFlow runs, for the report's text.
const FlowModelName = "end-to-end flow model (bootctl simulate's defaults: DHCP, the NBP and the image over TFTP under its per-flow cap, the health report; flows share links max-min fairly; all nodes power on at t=0)"

// FabricsimFlow returns fabricsim's flow-level simulation of the whole boot, set up exactly as
// `bootctl simulate` runs it by default (fabricsim.BootFlowConfig with TFTP): DHCP, the network
// boot program, the image (kernel and initrd for the default 50 MB) under the TFTP cap of
// blksize/RTT, then the health report, all nodes powered on at time 0. It is the report's headline
// because it is what a planner waits for: the per-segment bandwidth model leaves out the protocol
// caps and the fixed times, and says 3.2 s for a board that boots in 8.09 s. ctx stops a long
// simulation.
func FabricsimFlow(ctx context.Context) FlowFunc {
	return func(g *topology.Graph, a *mapping.Assignment, batch []int, imageBytes float64) (*FlowOutcome, error) {
		res, err := fabricsim.Simulate(ctx, g, nil, a, batch, flowConfig(imageBytes))
		if err != nil {
			return nil, fmt.Errorf("flow model: %w", err)
		}
		out := &FlowOutcome{BatchSeconds: res.BatchSeconds, NodeSeconds: make([]float64, len(res.NodeResults)), Limit: mainLimit(res)}
		for i, n := range res.NodeResults {
			out.NodeSeconds[i] = n.DoneSeconds
		}
		return out, nil
	}
}

// flowConfig is the simulation FabricsimFlow runs, without the per-segment series and link lists
// that the report does not show (they cost time, not results).
func flowConfig(imageBytes float64) fabricsim.FlowConfig {
	cfg := fabricsim.BootFlowConfig(imageBytes, fabricsim.TFTP)
	cfg.MaxSamples, cfg.TopLinks = 2, -1
	return cfg
}

// mainLimit names the limit that bounded most nodes longest: a segment, or a cap named as
// `bootctl simulate` names it ("tftp cap"); ties go to the first listed, so the choice is
// deterministic.
func mainLimit(res *fabricsim.FlowResult) string {
	best := fabricsim.BottleneckShare{}
	for _, b := range res.Bottlenecks {
		if b.Nodes > best.Nodes {
			best = b
		}
	}
	switch best.Limit {
	case "tftp", "http", "server":
		return best.Limit + " cap"
	}
	return best.Limit
}
