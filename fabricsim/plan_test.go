package fabricsim

import (
	"math"
	"slices"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/google/go-cmp/cmp"
)

func marks(n int, list ...int) []bool {
	if len(list) == 0 {
		return nil
	}
	out := make([]bool, n)
	for _, s := range list {
		out[s] = true
	}
	return out
}

// TestPlanFailures: plan's rows under absent (--failed-servers) and dead (--failed-during-boot)
// servers. The issue-12 case: bcda, 20 boards, bs0 failed keeps 125 Mb/s under both rules (a dead
// bs0's board 0 goes to bs80, not to bs1 next to board 1).
func TestPlanFailures(t *testing.T) {
	g, _ := sunway(t)
	h := g.Hierarchy()
	tests := []struct {
		name         string
		algo, batch  string
		absent, dead []int
		mbps         float64
		failed       string
		moved        int
	}{
		{"no failure", "bcda", "20", nil, nil, 125, "", 0},
		{"bs0 absent", "bcda", "20", []int{0}, nil, 125, "absent bs0", 0},
		{"bs0 dead", "bcda", "20", nil, []int{0}, 125, "dead bs0", 256},
		{"both kinds", "bcda", "20", []int{0, 1, 2, 7}, []int{3, 5}, 125, "absent bs0-bs2,bs7; dead bs3,bs5", 528},
		{"scda bs0 absent", "scda", "1cabinet", []int{0}, nil, 3.90625, "absent bs0", 0},
		{"scda bs0 dead", "scda", "1cabinet", nil, []int{0}, 3.90625, "dead bs0", 256},
		// Balanced maps the whole machine (the batch balanced, the rest board-cyclic): all of bs0's nodes move.
		{"balanced bs0 dead", "balanced", "20", nil, []int{0}, 125, "dead bs0 after balancing", 249},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			algo, err := mapping.ParseAlgo(tc.algo, h)
			if err != nil {
				t.Fatal(err)
			}
			batches, err := h.ParseBatches(tc.batch, "board")
			if err != nil {
				t.Fatal(err)
			}
			in := PlanInput{Graph: g, Algos: []mapping.Algo{algo}, Batches: batches, ImageBytes: 50e6,
				Absent: marks(160, tc.absent...), Dead: marks(160, tc.dead...)}
			rows, err := Plan(in)
			if err != nil {
				t.Fatal(err)
			}
			r := rows[0]
			if math.Abs(r.BandwidthMbps-tc.mbps) > 1e-9 || r.Failed != tc.failed || r.MovedNodes != tc.moved {
				t.Errorf("got %.4f Mb/s, failed %q, moved %d; want %.4f, %q, %d", r.BandwidthMbps, r.Failed, r.MovedNodes, tc.mbps, tc.failed, tc.moved)
			}
			// The row's mapping is the fleet's: mapping.Owners for block-cyclic algorithms.
			if !algo.Balanced {
				a, _, err := in.AssignServers(algo, nil)
				if err != nil {
					t.Fatal(err)
				}
				own, _, _ := mapping.Owners(h, algo, 160, in.Absent, in.Dead)
				if diff := cmp.Diff(own, a); diff != "" {
					t.Errorf("plan's assignment is not mapping.Owners (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestServerNames(t *testing.T) {
	for _, tc := range []struct {
		marked []int
		want   []string
	}{{nil, nil}, {[]int{4}, []string{"bs4"}}, {[]int{0, 1, 11}, []string{"bs0", "bs1", "bs11"}}} {
		if got := ServerNames(marks(12, tc.marked...)); !slices.Equal(got, tc.want) {
			t.Errorf("ServerNames(%v) = %q, want %q", tc.marked, got, tc.want)
		}
	}
}

func TestSegmentMin(t *testing.T) {
	var r PlanRow
	r.Segments = []SegmentResult{{Name: "N1", MinMbps: 12.5}, {Name: "N2", MinMbps: 3}}
	for name, want := range map[string]float64{"N1": 12.5, "N2": 3, "N5": 0} {
		if got := r.SegmentMin(name); got != want {
			t.Errorf("SegmentMin(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestServerList(t *testing.T) {
	tests := []struct {
		marked []int
		want   string
	}{
		{nil, ""},
		{[]int{4}, "bs4"},
		{[]int{0, 1}, "bs0,bs1"},
		{[]int{0, 1, 2, 5, 7, 8, 9, 10, 11}, "bs0-bs2,bs5,bs7-bs11"},
	}
	for _, tc := range tests {
		if got := ServerList(marks(12, tc.marked...)); got != tc.want {
			t.Errorf("ServerList(%v) = %q, want %q", tc.marked, got, tc.want)
		}
	}
}
