package fabricsim

import (
	"fmt"
	"math"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// sunway builds the paper's machine and its analyzer.
func sunway(t testing.TB) (*topology.Graph, *Analyzer) {
	t.Helper()
	m, _ := topology.Preset("sunway")
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	an, err := NewAnalyzer(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g, an
}

func firstNodes(n int) []int {
	b := make([]int, n)
	for i := range b {
		b[i] = i
	}
	return b
}

// TestPaperNumbers checks every number the paper states for contiguous batches from board 0 on
// the 160-supernode machine, to 0.01 Mb/s. Batches are in boards (8 nodes); a cabinet is 128 boards.
func TestPaperNumbers(t *testing.T) {
	g, an := sunway(t)
	h := g.Hierarchy()
	assign := func(name string) *mapping.Assignment {
		algo, err := mapping.ParseAlgo(name, h)
		if err != nil {
			t.Fatal(err)
		}
		a, err := mapping.Assign(g, algo, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	scda, bcda := assign("scda"), assign("bcda")
	type want struct {
		seg map[string]float64 // segment minimum, Mb/s
		bw  float64            // batch bandwidth
		bot []string           // bottleneck segments, when the paper names them
	}
	tests := []struct {
		algo   string
		a      *mapping.Assignment
		boards float64
		want   want
	}{
		// SCDA: N2 125 always; N3 2500 (1 board) -> 78.13 (32 boards); N5 125 -> 3.91 and stays;
		// batch 3.91 from one supernode to the whole machine.
		{"scda", scda, 1, want{map[string]float64{"N1": 1000, "N2": 125, "N3": 2500, "N4": 2500, "N5": 125}, 125, []string{"N2", "N5"}}},
		{"scda", scda, 20, want{map[string]float64{"N2": 125, "N3": 125, "N5": 6.25}, 6.25, []string{"N5"}}},
		{"scda", scda, 32, want{map[string]float64{"N2": 125, "N3": 78.13, "N4": 78.13, "N5": 3.91}, 3.91, []string{"N5"}}},
		{"scda", scda, 128, want{map[string]float64{"N2": 125, "N3": 78.13, "N5": 3.91}, 3.91, []string{"N5"}}},
		{"scda", scda, 5 * 128, want{map[string]float64{"N2": 125, "N4": 3.91, "N5": 3.91}, 3.91, []string{"N4", "N5"}}},
		{"scda", scda, 40 * 128, want{map[string]float64{"N1": 1000, "N2": 125, "N3": 78.13, "N4": 3.91, "N5": 3.91}, 3.91, []string{"N4", "N5"}}},
		// BCDA: 125 for 1-20 boards (N2 and N5); N3 bound from 21 boards to 1.25 cabinets, 78.13 once
		// a supernode is full; 62.5 at 2.5 cabinets (N4 and N5); 3.91 at the whole machine.
		{"bcda", bcda, 1, want{map[string]float64{"N2": 125, "N3": 2500, "N5": 125}, 125, []string{"N2", "N5"}}},
		{"bcda", bcda, 20, want{map[string]float64{"N2": 125, "N3": 125, "N4": 125, "N5": 125}, 125, []string{"N2", "N3", "N4", "N5"}}},
		{"bcda", bcda, 21, want{map[string]float64{"N2": 125, "N3": 119.05, "N4": 125, "N5": 125}, 119.05, []string{"N3"}}},
		{"bcda", bcda, 32, want{map[string]float64{"N3": 78.13, "N4": 125, "N5": 125}, 78.13, []string{"N3"}}},
		{"bcda", bcda, 128, want{map[string]float64{"N3": 78.13, "N4": 125, "N5": 125}, 78.13, []string{"N3"}}},
		{"bcda", bcda, 160, want{map[string]float64{"N3": 78.13, "N4": 125, "N5": 125}, 78.13, []string{"N3"}}},
		{"bcda", bcda, 320, want{map[string]float64{"N3": 78.13, "N4": 62.5, "N5": 62.5}, 62.5, []string{"N4", "N5"}}},
		{"bcda", bcda, 40 * 128, want{map[string]float64{"N1": 1000, "N2": 125, "N3": 78.13, "N4": 3.91, "N5": 3.91}, 3.91, []string{"N4", "N5"}}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%gboards", tc.algo, tc.boards), func(t *testing.T) {
			res, err := an.Analyze(tc.a, firstNodes(int(tc.boards*8)), 50e6)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, s := range res.Segments {
				got[s.Name] = s.MinMbps
			}
			for seg, w := range tc.want.seg {
				if math.Abs(got[seg]-w) > 0.005 {
					t.Errorf("%s = %.4f, want %.2f", seg, got[seg], w)
				}
			}
			if math.Abs(res.BandwidthMbps-tc.want.bw) > 0.005 {
				t.Errorf("batch bandwidth = %.4f, want %.2f", res.BandwidthMbps, tc.want.bw)
			}
			if fmt.Sprint(res.Bottlenecks) != fmt.Sprint(tc.want.bot) {
				t.Errorf("bottlenecks = %v, want %v", res.Bottlenecks, tc.want.bot)
			}
			if want := 50e6 * 8 / (tc.want.bw * 1e6); math.Abs(res.BootSeconds-want)/want > 0.002 {
				t.Errorf("boot time = %.3f s, want %.3f s", res.BootSeconds, want)
			}
		})
	}
	// bcda/scda = 20 at one supernode.
	s, _ := an.Analyze(scda, firstNodes(256), 50e6)
	b, _ := an.Analyze(bcda, firstNodes(256), 50e6)
	if r := b.BandwidthMbps / s.BandwidthMbps; math.Abs(r-20) > 1e-9 {
		t.Errorf("bcda/scda at one supernode = %v, want 20", r)
	}
}
