package simrun

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/routing"
	"github.com/bootfabric/bootfabric/topology"
)

// Job is a simulation of every batch under every algorithm, read and checked by its caller.
type Job struct {
	Graph        *topology.Graph
	Batches      []topology.Batch
	Algos        []mapping.Algo
	Absent, Dead []bool
	Config       fabricsim.FlowConfig
	// Arrival is all, ramp:N, or the name of the arrival file whose times Listed holds
	// (fabricsim.BatchArrivals).
	Arrival string
	Listed  map[int]float64
	// Failures fail servers during the boot, taken over after DetectSeconds (unicast only).
	Failures      []fabricsim.ServerFailure
	DetectSeconds float64
	// Multicast and P2P each add to the unicast run the same boot with that delivery; Hops and
	// Mcast build multicast's trees.
	Multicast, P2P bool
	Mcast          routing.McastAlgorithm
	Hops           *routing.HopTable
	Health         HealthOptions
	// Progress, if not nil, gives the progress callback of the run named label (nil for none);
	// the callback is called with Done < 0 when the run ends.
	Progress func(label string) func(fabricsim.Progress)
	Log      *zap.Logger
}

// HealthOptions ask for the health aggregation of each batch after its boot ("" Algorithm: none).
type HealthOptions struct {
	Algorithm  fabricsim.HealthAlgorithm
	Faults     int
	Stragglers fabricsim.HealthStragglers
	Seed       uint64
}

// Run simulates every batch under every algorithm, batches outermost; each batch's health
// aggregation is simulated once. Its errors are the input's, but for ctx's cancellation.
func (j *Job) Run(ctx context.Context) ([]Run, error) {
	var runs []Run
	for _, b := range j.Batches {
		health, err := j.simulateHealth(b)
		if err != nil {
			return nil, err
		}
		for _, algo := range j.Algos {
			r, err := j.run(ctx, b, algo)
			if err != nil {
				return nil, err
			}
			for i := range r {
				r[i].Health = health
			}
			runs = append(runs, r...)
		}
	}
	return runs, nil
}

// run simulates batch b under algo: one run, or with multicast or p2p delivery the unicast run
// and the other one.
func (j *Job) run(ctx context.Context, b topology.Batch, algo mapping.Algo) ([]Run, error) {
	cfg := j.Config
	var err error
	if cfg.Arrivals, err = fabricsim.BatchArrivals(j.Arrival, j.Listed, b, j.Graph); err != nil {
		return nil, fmt.Errorf("--arrival %s: %w", j.Arrival, err)
	}
	sim := &fabricsim.BootSim{Graph: j.Graph, Algo: algo, Batch: b.Nodes, Absent: j.Absent, Dead: j.Dead, Config: cfg,
		Failures: j.Failures, DetectSeconds: j.DetectSeconds}
	a, err := sim.Assign()
	if err != nil {
		return nil, err
	}
	var progress func(fabricsim.Progress)
	if j.Progress != nil {
		progress = j.Progress("simulate " + algo.Name + " " + b.Label)
	}
	sim.Config.Progress = progress
	res, err := sim.Simulate(ctx, a)
	if progress != nil {
		progress(fabricsim.Progress{Done: -1})
	}
	if err != nil {
		return nil, err
	}
	j.Log.Debug("simulated", zap.String("batch", b.Label), zap.String("algo", algo.Name),
		zap.Int("events", res.Stats.Events), zap.Int("classes", res.Stats.Classes))
	uni := Run{Batch: b.Label, Algo: algo.Name, Result: res}
	if j.P2P {
		return runP2P(ctx, sim, a, uni)
	}
	if !j.Multicast {
		return []Run{uni}, nil
	}
	uni.Delivery = "unicast"
	mres, err := sim.SimulateMulticast(ctx, a, j.Hops, j.Mcast)
	if err != nil {
		return nil, err
	}
	return []Run{uni, {Batch: b.Label, Algo: algo.Name, Delivery: "multicast", Mcast: string(j.Mcast),
		Result: mres, Speedup: res.BatchSeconds / mres.BatchSeconds}}, nil
}

// runP2P adds to the unicast run uni the same boot with peer delivery of the root image.
func runP2P(ctx context.Context, sim *fabricsim.BootSim, a *mapping.Assignment, uni Run) ([]Run, error) {
	sim.Config.Progress = nil
	p, err := sim.SimulateP2P(ctx, a, 0)
	if err != nil {
		return nil, err
	}
	uni.Delivery = "unicast"
	return []Run{uni, {Batch: uni.Batch, Algo: uni.Algo, Delivery: "p2p", P2P: p, Result: p.Result,
		Speedup: uni.Result.BatchSeconds / p.Result.BatchSeconds}}, nil
}

// simulateHealth runs the health aggregation over batch b's nodes, or returns nil without one.
func (j *Job) simulateHealth(b topology.Batch) (*Health, error) {
	o := j.Health
	if o.Algorithm == "" {
		return nil, nil
	}
	cfg := fabricsim.DefaultHealthConfig(o.Algorithm, len(b.Nodes))
	cfg.Faults, cfg.Stragglers, cfg.Seed = o.Faults, o.Stragglers, o.Seed
	res, err := fabricsim.SimulateHealth(cfg)
	if err != nil {
		return nil, fmt.Errorf("--health %s, batch %s: %w", o.Algorithm, b.Label, err)
	}
	return &Health{HealthResult: &res}, nil
}
