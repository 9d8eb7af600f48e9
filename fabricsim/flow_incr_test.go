package fabricsim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/routing"
	"github.com/bootfabric/bootfabric/topology"
)

// incrScenario is one random boot: a machine, a batch, arrivals, files, caps and perhaps failures
// or multicast trees.
type incrScenario struct {
	name  string
	g     *topology.Graph
	a     *mapping.Assignment
	batch []int
	cfg   FlowConfig
	fail  *FailurePlan
	mc    *MulticastTrees
}

// randomScenario draws scenario it from rng: random arrival times (with ties, so that events
// coincide), random file sizes and protocols (TFTP caps leave channels out of the sharing, HTTP
// and no caps keep them), server caps, time steps, server failures.
func randomScenario(t *testing.T, rng *rand.Rand, it int, machines []*topology.Graph) incrScenario {
	t.Helper()
	g := machines[it%len(machines)]
	nn := len(g.Nodes())
	algo := []string{"scda", "bcda", "ncda", "balanced"}[rng.IntN(4)]
	al, err := mapping.ParseAlgo(algo, g.Hierarchy())
	if err != nil {
		t.Fatal(err)
	}
	batch := rng.Perm(nn)[:1+rng.IntN(min(nn, 400))]
	a, err := mapping.Assign(g, al, batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultFlowConfig(Protocol(rng.IntN(3)))
	for f := range cfg.Files {
		cfg.Files[f].Bytes = float64(rng.IntN(4)) * 1e6 * (1 + rng.Float64()*9)
		if rng.IntN(2) == 0 {
			cfg.Files[f].Protocol = Protocol(rng.IntN(3))
		}
	}
	cfg.HTTPWindowBytes = []float64{2000, 64 << 10, DefaultHTTPWindowBytes}[rng.IntN(3)]
	cfg.Arrivals = make([]float64, len(batch))
	spread := []float64{0, 1, 10, 60}[rng.IntN(4)]
	for i := range cfg.Arrivals {
		cfg.Arrivals[i] = math.Round(rng.Float64()*spread*100) / 100 // on a 10 ms grid: ties
	}
	if rng.IntN(4) == 0 {
		cfg.ServerCapMbps = 20 + rng.Float64()*300
	}
	if rng.IntN(5) == 0 {
		cfg.TimeStep = []float64{0.01, 0.1, 0.25}[rng.IntN(3)]
	}
	sc := incrScenario{name: fmt.Sprintf("%d/%s/%s/%d nodes", it, g.Name, algo, len(batch)), g: g, a: a, batch: batch, cfg: cfg}
	if rng.IntN(4) == 0 && len(g.Servers()) > 1 {
		fp := &FailurePlan{DetectSeconds: rng.Float64() * 4}
		for _, s := range rng.Perm(len(g.Servers()))[:1+rng.IntN(2)] {
			fp.Failures = append(fp.Failures, ServerFailure{s, rng.Float64() * 20})
		}
		sc.fail = fp
	} else if rng.IntN(4) == 0 {
		// Trees for some servers only: their nodes share one copy, the others stay unicast.
		if sc.mc, err = BuildMulticastTrees(g, nil, a, batch, []routing.McastAlgorithm{routing.McastFULB, routing.McastMinHop, routing.McastSSSP}[rng.IntN(3)]); err != nil {
			t.Fatal(err)
		}
		for s := range sc.mc.Channels {
			if rng.IntN(2) == 0 {
				sc.mc.Channels[s] = nil
			}
		}
		sc.name += "/multicast"
	}
	return sc
}

func (sc incrScenario) run(t *testing.T, reference bool) *FlowResult {
	t.Helper()
	cfg := sc.cfg
	cfg.reference = reference
	res, err := simulateAll(context.Background(), sc.g, nil, sc.a, sc.batch, cfg, certify, sc.mc, sc.fail)
	if err != nil {
		t.Fatalf("%s (reference %v): %v", sc.name, reference, err)
	}
	return res
}

// TestIncrementalMatchesReference: after random event sequences, the incremental solver (components,
// channels that cannot saturate left out) gives every node the completion time the full re-solve
// over every shared channel gives, to 1e-9 relative, and the same bottleneck; every allocation of
// both passes the max-min certificate over all the flows and their full shared paths.
func TestIncrementalMatchesReference(t *testing.T) {
	var machines []*topology.Graph
	for _, name := range []string{"mini", "sunway"} {
		m, _ := topology.Preset(name)
		g, err := m.Build()
		if err != nil {
			t.Fatal(err)
		}
		machines = append(machines, g)
	}
	rng := rand.New(rand.NewPCG(17, 2026))
	n := 40
	if testing.Short() {
		n = 12
	}
	for it := 0; it < n; it++ {
		sc := randomScenario(t, rng, it, machines)
		inc, ref := sc.run(t, false), sc.run(t, true)
		if inc.Stats.Events != ref.Stats.Events {
			t.Errorf("%s: %d events, reference %d", sc.name, inc.Stats.Events, ref.Stats.Events)
		}
		for i, nr := range inc.NodeResults {
			want := ref.NodeResults[i]
			if d := math.Abs(nr.DoneSeconds - want.DoneSeconds); d > 1e-9*max(1, want.DoneSeconds) {
				t.Fatalf("%s: %s done at %v, reference %v", sc.name, nr.Name, nr.DoneSeconds, want.DoneSeconds)
			}
			if nr.Bottleneck != want.Bottleneck || math.Abs(nr.BoundSeconds-want.BoundSeconds) > 1e-9*max(1, want.BoundSeconds) {
				t.Fatalf("%s: %s bound by %s for %v s, reference %s for %v s", sc.name, nr.Name, nr.Bottleneck, nr.BoundSeconds,
					want.Bottleneck, want.BoundSeconds)
			}
		}
		for k, seg := range inc.Segments {
			if w := ref.Segments[k].PeakMbps; math.Abs(seg.PeakMbps-w) > 1e-9*max(1, w) {
				t.Errorf("%s: %s peak %v Mb/s, reference %v", sc.name, seg.Name, seg.PeakMbps, w)
			}
		}
	}
}

// TestIncrementalLeavesOutIdleChannels: with TFTP caps on the paper's machine only the server NICs
// and the cascade uplinks can saturate, so the groups' paths are those two channels and an event
// re-solves one cascade switch's servers; the reference keeps the board and supernode uplinks.
func TestIncrementalLeavesOutIdleChannels(t *testing.T) {
	g, _ := sunway(t)
	batch := firstNodes(len(g.Nodes()))
	a := sunwayAssign(t, g, "bcda", batch)
	cfg := DefaultFlowConfig(TFTP)
	cfg.Arrivals, _ = RampArrivals(len(batch), 20000)
	for _, tc := range []struct {
		reference bool
		pathLen   int
	}{{false, 2}, {true, 4}} {
		cfg.reference = tc.reference
		s := &sim{cfg: &cfg, simRoutes: simRoutes{g: g, batch: batch, n: len(batch), positions: len(batch)}}
		if err := s.setup(g.TreeRouter(), a); err != nil {
			t.Fatal(err)
		}
		for p, ch := range s.pathCh {
			if len(ch) != tc.pathLen {
				t.Fatalf("reference %v: path %d has %d channels, want %d", tc.reference, p, len(ch), tc.pathLen)
			}
		}
	}
}
