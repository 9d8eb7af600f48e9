package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/bootfabric/bootfabric/units"
	"github.com/urfave/cli/v2"
)

// machineFlags are the topology, algorithm and batch flags that plan, simulate and report share.
func machineFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Value: "sunway", Usage: "machine: a preset (" + strings.Join(topology.Presets(), ", ") + ") or a YAML machine description file"},
		&cli.StringFlag{Name: "algo", Aliases: []string{"a"}, Value: "all", Usage: "mapping: scda, bcda, ncda, balanced, cyclic:LEVEL, a comma-separated list, or all"},
		&cli.StringFlag{Name: "batch", Aliases: []string{"b"}, Usage: "batches, comma-separated: COUNT[UNIT] from the machine's start, FIRST-LAST[UNIT], all, or @FILE of node names (default: the paper's ladder)"},
		&cli.StringFlag{Name: "unit", Aliases: []string{"u"}, Value: "board", Usage: "unit of batch counts without one: node or a level name (board, supernode, cabinet, ...)"},
		&cli.StringFlag{Name: "image-size", Value: "50MB", Usage: "boot image size with a unit (MB = 10^6 bytes, MiB = 2^20)"},
		&cli.StringFlag{Name: "failed-servers", Usage: "boot servers to treat as failed: comma-separated indices (0-based) or names like bs3"},
	}
}

// machineInput is what the shared flags describe.
type machineInput struct {
	Machine    *topology.Machine
	Graph      *topology.Graph
	Algos      []mapping.Algo
	Batches    []topology.Batch
	ImageBytes float64
	Failed     []bool
}

// readMachineInput loads and checks everything the shared flags name; every error is bad input.
func readMachineInput(c *cli.Context) (*machineInput, error) {
	m, err := topology.Load(c.String("topology"))
	if err != nil {
		return nil, asBadInput(err)
	}
	g, err := m.Build()
	if err != nil {
		return nil, asBadInput(fmt.Errorf("%s: %w", c.String("topology"), err))
	}
	in := &machineInput{Machine: m, Graph: g}
	h := g.Hierarchy()
	if in.Algos, err = parseAlgos(c.String("algo"), h); err != nil {
		return nil, err
	}
	if _, err := h.UnitLevel(c.String("unit")); err != nil {
		return nil, badInput("--unit: %w", err)
	}
	if c.IsSet("batch") {
		if in.Batches, err = h.ParseBatches(c.String("batch"), c.String("unit")); err != nil {
			return nil, badInput("--batch: %w", err)
		}
	} else {
		in.Batches = h.DefaultBatches()
	}
	if in.ImageBytes, err = units.ParseSize(c.String("image-size")); err != nil {
		return nil, badInput("--image-size: %w", err)
	}
	if in.Failed, err = parseFailed(c.String("failed-servers"), len(g.Servers())); err != nil {
		return nil, err
	}
	return in, nil
}

func parseAlgos(s string, h *topology.Hierarchy) ([]mapping.Algo, error) {
	names := strings.Split(s, ",")
	if s == "all" {
		names = nil
		for _, n := range mapping.Names() {
			if _, err := mapping.ParseAlgo(n, h); err == nil {
				names = append(names, n)
			}
		}
	}
	var out []mapping.Algo
	for _, n := range names {
		a, err := mapping.ParseAlgo(strings.TrimSpace(n), h)
		if err != nil {
			return nil, badInput("--algo: %w", err)
		}
		out = append(out, a)
	}
	return out, nil
}

func parseFailed(s string, servers int) ([]bool, error) {
	if s == "" {
		return nil, nil
	}
	failed := make([]bool, servers)
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		i, err := strconv.Atoi(strings.TrimPrefix(item, "bs"))
		if err != nil || i < 0 || i >= servers {
			return nil, badInput("--failed-servers: %q is not a server (0-%d or bs0-bs%d)", item, servers-1, servers-1)
		}
		failed[i] = true
	}
	return failed, nil
}
