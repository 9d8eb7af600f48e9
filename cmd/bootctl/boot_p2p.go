package main

import (
	"context"
	"fmt"
	"io"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/urfave/cli/v2"
)

// bootP2P is the dry run's boot with peer delivery beside the same boot by the servers: the whole
// batch powered at once (after POST), with no admission, as bootctl boot's admission does not
// count peers as sources; the dry run's schedule above it is the servers' alone.
type bootP2P struct {
	Delivery fabricsim.Delivery `json:"delivery"`
	// ServerSeconds and P2PSeconds are the batch times by server and by peers, POST included.
	ServerSeconds float64 `json:"server_seconds"`
	P2PSeconds    float64 `json:"p2p_seconds"`
	// RootFile is the file the peers deliver and Root its stage (fabricsim.P2PAnalysis).
	RootFile string                 `json:"root_file"`
	Root     *fabricsim.P2PAnalysis `json:"root"`
}

// bootP2PPlan is --delivery p2p's figures for the dry run, nil with server delivery.
func bootP2PPlan(ctx context.Context, c *cli.Context, s *bootSetup) (*bootP2P, error) {
	d, err := readDelivery(c)
	if err != nil || d != fabricsim.P2PDelivery {
		return nil, err
	}
	if !c.Bool("dry-run") {
		return nil, badInput("--delivery p2p: only with --dry-run; a live boot fetches every byte from its boot server")
	}
	cfg := s.flow
	cfg.Admit, cfg.Arrivals, cfg.Progress = nil, nil, nil
	sim := &fabricsim.BootSim{Graph: s.g, Batch: s.batch, Config: cfg}
	uni, err := sim.Simulate(ctx, s.a)
	if err != nil {
		return nil, simError(ctx, err)
	}
	p, err := sim.SimulateP2P(ctx, s.a, 0)
	if err != nil {
		return nil, simError(ctx, err)
	}
	return &bootP2P{Delivery: d, ServerSeconds: round3(s.post + uni.BatchSeconds), P2PSeconds: round3(s.post + p.Result.BatchSeconds),
		RootFile: p.RootFile, Root: p.Root}, nil
}

// write prints the peer delivery line of the dry run's table.
func (p *bootP2P) write(w io.Writer) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "delivery p2p, the whole batch at once without admission: %.1f s by the servers, %.1f s with %s by peers (root stage %.1f s, bound by %v; the servers send %s)\n",
		p.ServerSeconds, p.P2PSeconds, p.RootFile, p.Root.Seconds, p.Root.Bottlenecks, p.Root.Seeding())
}
