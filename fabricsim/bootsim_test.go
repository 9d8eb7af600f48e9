package fabricsim

import (
	"context"
	"slices"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
)

// TestBootSimFailurePlan: the failure plan's new owners are the fleet's rule with the failed
// servers dead besides those dead from the start, and the absent servers never own a node.
func TestBootSimFailurePlan(t *testing.T) {
	g, _, cfg := miniFail(t)
	al, err := mapping.ParseAlgo("bcda", g.Hierarchy())
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]int, 32)
	for i := range batch {
		batch[i] = i
	}
	for _, tc := range []struct {
		name         string
		absent, dead []bool
		failed       []bool // the plan's failures detected so far
	}{
		{"none down", nil, nil, []bool{false, true}},
		{"one absent", []bool{false, false, true}, nil, []bool{true}},
		{"one dead from the start", nil, []bool{false, false, false, true}, []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := &BootSim{Graph: g, Algo: al, Batch: batch, Absent: tc.absent, Dead: tc.dead, Config: cfg,
				Failures: []ServerFailure{{Server: 1, Seconds: 0.1}}, DetectSeconds: 1}
			fp := sim.FailurePlan()
			got, err := fp.Owners(tc.failed)
			if err != nil {
				t.Fatal(err)
			}
			dead := make([]bool, 4)
			for s := range dead {
				dead[s] = isSet(tc.failed, s) || isSet(tc.dead, s)
			}
			want, _, err := mapping.AssignOwners(g, al, batch, tc.absent, dead)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Server, want.Server) {
				t.Errorf("owners %v, want %v", got.Server, want.Server)
			}
			for s := range 4 {
				if fp.Absent[s] != (isSet(tc.absent, s) || isSet(tc.dead, s)) {
					t.Errorf("plan's Absent[%d] = %v", s, fp.Absent[s])
				}
			}
		})
	}
}

// TestBootSimNoFailures: without failures BootSim is Simulate on its assignment, to the result.
func TestBootSimNoFailures(t *testing.T) {
	g, a, cfg := miniFail(t)
	al, _ := mapping.ParseAlgo("bcda", g.Hierarchy())
	batch := miniNodes(t, g, "s0-b0-n0", "s0-b1-n0", "s1-b0-n1")
	sim := &BootSim{Graph: g, Algo: al, Batch: batch, Config: cfg}
	got, err := sim.Assign()
	if err != nil || !slices.Equal(got.Server, a.Server) {
		t.Fatalf("Assign: %v (%v), want %v", got, err, a.Server)
	}
	res, err := sim.Simulate(context.Background(), got)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := Simulate(context.Background(), g, nil, a, batch, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.BatchSeconds != direct.BatchSeconds || res.Failure != nil {
		t.Errorf("BootSim %v s (failure %v), Simulate %v s", res.BatchSeconds, res.Failure, direct.BatchSeconds)
	}
}
