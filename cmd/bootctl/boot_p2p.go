package main

import (
	"context"

	"github.com/bootfabric/bootfabric/bootrun"
	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/urfave/cli/v2"
)

// bootP2PPlan is --delivery p2p's figures for the dry run, nil with server delivery.
func bootP2PPlan(ctx context.Context, c *cli.Context, s *bootSetup) (*bootrun.P2PPlan, error) {
	d, err := readDelivery(c)
	if err != nil || d != fabricsim.P2PDelivery {
		return nil, err
	}
	if !c.Bool("dry-run") {
		return nil, badInput("--delivery p2p: only with --dry-run; a live boot fetches every byte from its boot server")
	}
	p, err := bootrun.PlanP2P(ctx, s.g, s.a, s.batch, s.flow, s.post)
	return p, simError(ctx, err)
}
