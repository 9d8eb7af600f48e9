package fabricsim

import (
	"context"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/routing"
	"github.com/bootfabric/bootfabric/topology"
)

// BootSim is one simulated boot of a batch as `bootctl simulate` runs it: the mapping by the
// fleet's ownership rule, then the flow simulation, with server failures or over multicast trees.
// The CLI and the test clusters' predictions both run it, so they cannot drift apart.
type BootSim struct {
	Graph *topology.Graph
	Algo  mapping.Algo
	Batch []int
	// Absent and Dead are the servers down from the start: never up, and dead during the boot
	// (the two kinds of mapping.Owners; nil: none).
	Absent, Dead []bool
	Config       FlowConfig
	// Failures are servers that fail during the run, detected DetectSeconds later; nil: a run
	// without failures (non-nil and empty: SimulateFailures, its summary saying no effect).
	Failures      []ServerFailure
	DetectSeconds float64
}

// Assign returns the batch's mapping: mapping.AssignOwners with the absent and dead servers.
func (b *BootSim) Assign() (*mapping.Assignment, error) {
	a, _, err := mapping.AssignOwners(b.Graph, b.Algo, b.Batch, b.Absent, b.Dead)
	return a, err
}

// Simulate runs the unicast boot under assignment a, with the failures when there are any.
func (b *BootSim) Simulate(ctx context.Context, a *mapping.Assignment) (*FlowResult, error) {
	if b.Failures == nil {
		return Simulate(ctx, b.Graph, nil, a, b.Batch, b.Config)
	}
	return SimulateFailures(ctx, b.Graph, nil, a, b.Batch, b.Config, b.FailurePlan())
}

// SimulateMulticast runs the boot under assignment a over the multicast trees alg builds on hops.
func (b *BootSim) SimulateMulticast(ctx context.Context, a *mapping.Assignment, hops *routing.HopTable, alg routing.McastAlgorithm) (*FlowResult, error) {
	mc, err := BuildMulticastTrees(b.Graph, hops, a, b.Batch, alg)
	if err != nil {
		return nil, err
	}
	return SimulateMulticast(ctx, b.Graph, nil, a, b.Batch, b.Config, mc)
}

// FailurePlan is the run's failures with the new owners from the fleet's rule
// (mapping.AssignOwners): the failed servers dead besides those dead from the start.
func (b *BootSim) FailurePlan() FailurePlan {
	servers := len(b.Graph.Servers())
	down := make([]bool, servers)
	for s := range down {
		down[s] = isSet(b.Absent, s) || isSet(b.Dead, s)
	}
	return FailurePlan{Failures: b.Failures, DetectSeconds: b.DetectSeconds, Absent: down,
		Owners: func(dead []bool) (*mapping.Assignment, error) {
			d := make([]bool, servers)
			for s := range d {
				d[s] = isSet(dead, s) || isSet(b.Dead, s)
			}
			a, _, err := mapping.AssignOwners(b.Graph, b.Algo, b.Batch, b.Absent, d)
			return a, err
		}}
}

func isSet(v []bool, s int) bool { return s < len(v) && v[s] }
