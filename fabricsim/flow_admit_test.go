package fabricsim

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// fixedAdmitter powers on the batch at the given times, all at the first call: the same run as
// FlowConfig.Arrivals.
type fixedAdmitter struct{ at []float64 }

func (f *fixedAdmitter) Admit(now float64, _ []int) ([]Arrival, float64) {
	if now > 0 {
		return nil, math.Inf(1)
	}
	on := make([]Arrival, len(f.at))
	for i, t := range f.at {
		on[i] = Arrival{Pos: i, At: t}
	}
	return on, math.Inf(1)
}

// windowAdmitter keeps at most k nodes booting: one powers on as one finishes.
type windowAdmitter struct {
	k, next, n, calls int
}

func (w *windowAdmitter) Admit(now float64, finished []int) ([]Arrival, float64) {
	w.calls++
	want := len(finished)
	if now == 0 && w.next == 0 {
		want = w.k
	}
	var on []Arrival
	for ; want > 0 && w.next < w.n; want-- {
		on = append(on, Arrival{Pos: w.next, At: now})
		w.next++
	}
	return on, math.Inf(1)
}

func admitMachine(t *testing.T) (*topology.Graph, *mapping.Assignment, []int) {
	t.Helper()
	g, _ := miniHierarchy(t)
	batch := make([]int, len(g.Nodes()))
	for i := range batch {
		batch[i] = i
	}
	al, err := mapping.ParseAlgo("bcda", g.Hierarchy())
	if err != nil {
		t.Fatal(err)
	}
	a, err := mapping.Assign(g, al, batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g, a, batch
}

// An admitter that powers everything on at fixed times predicts what Arrivals does, to the bit.
func TestAdmitterMatchesArrivals(t *testing.T) {
	g, a, batch := admitMachine(t)
	at, err := RampArrivals(len(batch), 7)
	if err != nil {
		t.Fatal(err)
	}
	cfg := BootFlowConfig(20e6, TFTP)
	cfg.Arrivals = at
	want, err := Simulate(context.Background(), g, nil, a, batch, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Arrivals, cfg.Admit = nil, &fixedAdmitter{at: at}
	got, err := Simulate(context.Background(), g, nil, a, batch, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.NodeResults {
		if got.NodeResults[i] != want.NodeResults[i] {
			t.Fatalf("node %d: admitter %+v, arrivals %+v", i, got.NodeResults[i], want.NodeResults[i])
		}
	}
}

// A window of k nodes: never more than k boot at once, each powers on when another finishes,
// and every node boots.
func TestAdmitterWindow(t *testing.T) {
	g, a, batch := admitMachine(t)
	cfg := BootFlowConfig(20e6, HTTP)
	w := &windowAdmitter{k: 4, n: len(batch)}
	cfg.Admit = w
	res, err := Simulate(context.Background(), g, nil, a, batch, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, nr := range res.NodeResults {
		busy := 0
		for _, o := range res.NodeResults {
			if o.ArrivalSeconds <= nr.ArrivalSeconds && o.DoneSeconds-cfg.HealthSeconds > nr.ArrivalSeconds {
				busy++
			}
		}
		if busy > w.k {
			t.Fatalf("node %d powered on at %v with %d booting", i, nr.ArrivalSeconds, busy)
		}
	}
	if res.Nodes != len(batch) || w.calls < len(batch)/w.k {
		t.Fatalf("%d nodes, %d calls", res.Nodes, w.calls)
	}
}

type badAdmitter struct{ on []Arrival }

func (b badAdmitter) Admit(now float64, _ []int) ([]Arrival, float64) {
	if now > 0 {
		return nil, math.Inf(1)
	}
	return b.on, math.Inf(1)
}

func TestAdmitterErrors(t *testing.T) {
	g, a, batch := admitMachine(t)
	for _, tc := range []struct {
		name string
		on   []Arrival
		want string
	}{
		{"none", nil, "never powered on"},
		{"twice", []Arrival{{0, 0}, {0, 1}}, "powered on twice"},
		{"outside", []Arrival{{len(batch), 0}}, "not in the batch"},
		{"past", []Arrival{{0, -1}}, "before now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := BootFlowConfig(1e6, HTTP)
			cfg.Admit = badAdmitter{on: tc.on}
			_, err := Simulate(context.Background(), g, nil, a, batch, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
