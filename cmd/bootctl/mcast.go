package main

import (
	"cmp"
	"errors"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/routing"
	"github.com/bootfabric/bootfabric/topology"
)

// mcastCommand builds multicast trees for communicator groups and compares the algorithms.
func mcastCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "mcast",
		Usage: "build multicast trees (fulb, minhop, sssp) and compare link load (EFI), tree height and run time",
		Description: "Groups are generated over the topology's nodes (process i on node i) or read from a file:\n" +
			"  grid2d[:RxC]          one group per row and per column of a 2-D process grid (default: most nearly square)\n" +
			"  grid3d[:AxBxC]        one group per line along each axis of a 3-D grid\n" +
			"  planes[:AxBxC]        one group per plane of a 3-D grid\n" +
			"  leaders[:K]           hierarchical groups of K (default 16), their leaders, and so on up\n" +
			"  random:N:SIZE         N groups of SIZE distinct nodes, drawn from --seed\n" +
			"  servers               one group per boot server: it and its nodes under --mapping (machines only)\n" +
			"  @FILE                 one group per line: [NAME:] ENDPOINT ENDPOINT ... (# starts a comment)\n" +
			"Several comma-separated sets are routed together, in order. EFI (edge forwarding index) is the\n" +
			"number of groups whose tree uses a link, over switch-to-switch links; the mean is over used links.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Required: true, Usage: "topology spec (pgft:..., fat2d:...), ibnetdiscover file, preset or machine YAML"},
			&cli.StringFlag{Name: "groups", Aliases: []string{"g"}, Value: "grid2d", Usage: "group sets, comma-separated: grid2d[:RxC], grid3d[:AxBxC], planes[:AxBxC], leaders[:K], random:N:SIZE, servers, @FILE"},
			withChoices(cli.StringFlag{Name: "algo", Aliases: []string{"a"}, Value: "all", Usage: "fulb, minhop, sssp, a comma-separated list, or all"},
				"fulb", "minhop", "sssp", "all"),
			&cli.BoolFlag{Name: "fixed-root", Usage: "minhop and sssp take the first root of least eccentricity, as OpenSM does (no root rotation)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of random groups"},
			&cli.StringFlag{Name: "mapping", Value: mapping.Default(false), Usage: "mapping of nodes to boot servers for the servers groups"},
			timingsFlag(),
			outputFlag("table", "json", "yaml", "csv"),
		},
		Action: func(c *cli.Context) error { return runMcast(e, c, c.String("output")) },
	}
}

// mcastRow is one algorithm's outcome.
func runMcast(e *env, c *cli.Context, format string) error {
	algos, err := routing.ParseMcastAlgorithms(c.String("algo"))
	if err != nil {
		return badInput("--algo: %v", err)
	}
	spec := c.String("topology")
	fab, err := topology.OpenFabric(spec)
	if err != nil {
		return asBadInput(err)
	}
	groups, sets, err := mcastGroups(fab, c.String("groups"), c.Uint64("seed"), c.String("mapping"))
	if err != nil {
		return err
	}
	sum, err := routeMcast(e, fab.Graph, groups, algos, c.Bool("fixed-root"), c.Bool("timings"))
	if err != nil {
		return err
	}
	sum.Sets, sum.Topology = sets, cmp.Or(sum.Topology, spec)
	if format == "csv" {
		return texttable.WriteCSV(e.stdout, sum.CSV())
	}
	return writeResult(e.stdout, format, sum, sum.WriteTable)
}

// routeMcast routes the groups with each algorithm (routing.CompareMulticast) and logs the times.
func routeMcast(e *env, g *topology.Graph, groups []routing.McastGroup, algos []routing.McastAlgorithm, fixedRoot, timings bool) (*routing.McastComparison, error) {
	sum, err := routing.CompareMulticast(g, groups, algos, routing.CompareOptions{FixedRoot: fixedRoot, Timings: timings,
		Progress: func(alg routing.McastAlgorithm) (func(done, total int), func()) {
			bar := e.progressBar("mcast "+string(alg), 0, "")
			return bar.Func(), bar.Done
		}})
	if err != nil {
		return nil, asBadInput(err)
	}
	e.log.Info("hop tables built", zap.Float64("seconds", sum.HopSeconds), zap.Int("switches", sum.Switches))
	for i, r := range sum.Results {
		e.log.Info("multicast routed", zap.String("algo", r.Algorithm), zap.Float64("seconds", sum.RowSeconds[i]))
	}
	return sum, nil
}

// mcastGroups generates the groups of --groups (routing.ParseGroupSets), the servers set from
// the nodes' boot servers under --mapping, and words its errors after the flags.
func mcastGroups(fab *topology.Fabric, spec string, seed uint64, mapAlgo string) ([]routing.McastGroup, []routing.GroupSet, error) {
	serverOf := func(g *topology.Graph) ([]int32, error) {
		algo, err := mapping.ParseAlgo(mapAlgo, g.Hierarchy())
		if err != nil {
			return nil, badInput("--mapping: %v", err)
		}
		a, err := mapping.Assign(g, algo, nil, nil)
		if err != nil {
			return nil, badInput("--mapping: %v", err)
		}
		return a.Server, nil
	}
	groups, sets, err := routing.ParseGroupSets(fab, spec, routing.GroupSetOptions{Seed: seed, ServerOf: serverOf})
	var se *routing.GroupSetError
	switch {
	case errors.As(err, &se) && se.Set == "":
		return nil, nil, badInput("--groups: %v", se.Err)
	case errors.As(err, &se):
		return nil, nil, badInput("--groups %s: %v", se.Set, se.Err)
	case err != nil:
		return nil, nil, err // --mapping's, already worded
	}
	return groups, sets, nil
}
