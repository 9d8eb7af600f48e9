package bootrun

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// machine builds a preset with every node in the batch under algo.
func machine(tb testing.TB, preset, algo string) (*topology.Graph, *mapping.Assignment, []int) {
	tb.Helper()
	m, ok := topology.Preset(preset)
	if !ok {
		tb.Fatalf("no preset %s", preset)
	}
	g, err := m.Build()
	if err != nil {
		tb.Fatal(err)
	}
	batch := make([]int, len(g.Nodes()))
	for i := range batch {
		batch[i] = i
	}
	al, err := mapping.ParseAlgo(algo, g.Hierarchy())
	if err != nil {
		tb.Fatal(err)
	}
	a, err := mapping.Assign(g, al, batch, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return g, a, batch
}

func predict(tb testing.TB, g *topology.Graph, a *mapping.Assignment, batch []int, flow fabricsim.FlowConfig, floor float64) (*Limits, *Prediction) {
	tb.Helper()
	lim, err := ComputeLimits(g, nil, a, batch, flow, floor)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := Predict(context.Background(), PredictInput{Graph: g, Assign: a, Batch: batch, Flow: flow, Limits: lim, PostSeconds: 2})
	if err != nil {
		tb.Fatal(err)
	}
	return lim, p
}

// The predicted run boots every node, never has more in flight than the caps allow, keeps the
// bottleneck full (within a few percent of everything at once, where the fluid model has no
// timeouts to punish the crowd), and is the same twice.
func TestPredictMini(t *testing.T) {
	g, a, batch := machine(t, "mini", "bcda")
	flow := fabricsim.BootFlowConfig(200e6, fabricsim.HTTP)
	lim, p := predict(t, g, a, batch, flow, 0)
	if len(lim.Caps) == 0 {
		t.Fatal("no bottleneck at the default floor")
	}
	sum := 0
	for _, c := range lim.Caps {
		sum += c
	}
	if p.PeakInFlight > sum || p.PeakInFlight >= len(batch) {
		t.Errorf("peak in flight %d: caps %v, %d nodes", p.PeakInFlight, lim.Caps, len(batch))
	}
	for _, r := range p.Records {
		if r.Phase != Healthy || r.Attempts != 1 {
			t.Fatalf("node %+v", r)
		}
	}
	all := flow
	all.Arrivals = make([]float64, len(batch))
	for i := range all.Arrivals {
		all.Arrivals[i] = 2
	}
	res, err := fabricsim.Simulate(context.Background(), g, nil, a, batch, all)
	if err != nil {
		t.Fatal(err)
	}
	if p.Makespan > 1.1*res.BatchSeconds {
		t.Errorf("closed loop %.2f s, all at once %.2f s", p.Makespan, res.BatchSeconds)
	}
	_, p2 := predict(t, g, a, batch, flow, 0)
	b1, _ := json.Marshal(p)
	b2, _ := json.Marshal(p2)
	if string(b1) != string(b2) {
		t.Error("two predictions differ")
	}
}

// BenchmarkPredictSunway is the controller driving the flow simulator over the paper's machine,
// 40,960 nodes under bcda, TFTP boot files, at the default floor: decisions per second, time
// and memory of the whole prediction, and its makespan beside everything at once.
func BenchmarkPredictSunway(b *testing.B) {
	g, a, batch := machine(b, "sunway", "bcda")
	flow := fabricsim.DefaultFlowConfig(fabricsim.TFTP)
	var p *Prediction
	var ms runtime.MemStats
	start := time.Now()
	for b.Loop() {
		_, p = predict(b, g, a, batch, flow, 0)
	}
	el := time.Since(start).Seconds() / float64(b.N)
	runtime.ReadMemStats(&ms)
	// The baseline in the same run: every node powered on at once (the fluid model has no
	// timeouts to punish it, so this is the least makespan; admission's cost is the gap).
	all := flow
	all.Arrivals = make([]float64, len(batch))
	for i := range all.Arrivals {
		all.Arrivals[i] = 2 // the firmware time predict gives
	}
	res, err := fabricsim.Simulate(context.Background(), g, nil, a, batch, all)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.BatchSeconds, "all-at-once-s")
	b.ReportMetric(float64(p.Events)/el, "decisions/s")
	b.ReportMetric(p.Makespan, "makespan-s")
	b.ReportMetric(float64(p.PeakInFlight), "peak-in-flight")
	b.ReportMetric(float64(ms.HeapSys)/1e6, "heap-MB")
}

// A run slower than the model fits the share of the links' capacity that reproduces it; one
// faster than the model fits 1 and leaves the prediction as it was.
func TestFitEfficiency(t *testing.T) {
	g, a, batch := machine(t, "mini", "bcda")
	flow := fabricsim.BootFlowConfig(200e6, fabricsim.HTTP)
	lim, p := predict(t, g, a, batch, flow, 0)
	in := PredictInput{Graph: g, Assign: a, Batch: batch, Flow: flow, Limits: lim, PostSeconds: 2}
	for _, tc := range []struct {
		name     string
		measured float64
		slower   bool
	}{
		{"half as fast as the model", 2 * p.Makespan, true},
		{"a third slower", 4 * p.Makespan / 3, true},
		{"faster than the model", p.Makespan / 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eff, got, err := FitEfficiency(context.Background(), in, tc.measured)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.slower {
				if eff != 1 || got.Makespan != p.Makespan {
					t.Errorf("efficiency %v, prediction %v s; want 1 and the model's %v s", eff, got.Makespan, p.Makespan)
				}
				return
			}
			if !(eff < 1) || math.Abs(got.Makespan-tc.measured) > 0.02*tc.measured {
				t.Errorf("efficiency %v predicts %.2f s, want under 1 and within 2 %% of %.2f s", eff, got.Makespan, tc.measured)
			}
		})
	}
}

// TestSimPlantPaceWake: the dry run wakes the controller at a pace's time with nothing else to
// tell it, and the paced node powers on then, not at the next node's files in (it waited for
// the next event before, and the dry run lagged the live run's pacing).
func TestSimPlantPaceWake(t *testing.T) {
	nodes := make([]Node, 6)
	for i := range nodes {
		nodes[i] = Node{Name: fmt.Sprint("n", i), Resources: []int32{0}}
	}
	c, err := New(Config{Caps: []int{2}, Expect: Expect{Transfer: 2}, Factor: math.Inf(1)}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	p := &simPlant{c: c, post: 10}
	if on, wake := p.Admit(0, nil); len(on) != 2 || wake != 10 {
		t.Fatalf("at 0: %v powered, wake at %v; want 2 and 10 (their DHCP)", on, wake)
	}
	p.Admit(10, nil) // both ask DHCP: POST measured 10 s, both slots held
	// Node 0's files are in after 2 s: a slot frees, the pipe (2 slots / 2 s x 10 s) takes
	// nodes on their way, and paces the next one a service time later.
	_, wake := p.Admit(12, []int{0})
	if !(wake > 12 && wake < 20) {
		t.Fatalf("at 12: wake at %v; want a pace's time, before any DHCP request is due (22)", wake)
	}
	if on, _ := p.Admit(wake, nil); len(on) != 1 || on[0].At != wake+10 {
		t.Fatalf("at the pace's time %v: %v powered; want one node", wake, on)
	}
}
