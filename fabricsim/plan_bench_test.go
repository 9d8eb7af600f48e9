package fabricsim

import (
	"runtime"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

func allAlgos(tb testing.TB, h *topology.Hierarchy) []mapping.Algo {
	var out []mapping.Algo
	for _, n := range mapping.Names() {
		a, err := mapping.ParseAlgo(n, h)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// BenchmarkSunwayLadder builds the paper's machine and plans the paper's whole default ladder
// (11 batches) for all four algorithms. Target: at most 50 ms.
func BenchmarkSunwayLadder(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		m, _ := topology.Preset("sunway")
		g, err := m.Build()
		if err != nil {
			b.Fatal(err)
		}
		h := g.Hierarchy()
		rows, err := Plan(PlanInput{Graph: g, Algos: allAlgos(b, h), Batches: h.DefaultBatches(), ImageBytes: 50e6})
		if err != nil || len(rows) != 44 {
			b.Fatal(err, len(rows))
		}
	}
}

// millionNodes is the paper's machine grown to 1,048,576 nodes: 1,024 cabinets x 4 supernodes x 32
// boards x 8 nodes, one boot server per supernode (4,096) on cascade switches of 20.
func millionNodes() *topology.Machine {
	m, _ := topology.Preset("sunway")
	m.Name = "sunway-1m"
	m.Levels[0].Count = 1024
	m.Servers.Count = 4096
	return m
}

// BenchmarkMillionNodePlan builds a 1,048,576-node machine and plans booting all of it under bcda
// and under balanced. Target: at most 2 s and 2 GB. It reports the peak heap in use.
func BenchmarkMillionNodePlan(b *testing.B) {
	for _, algo := range []string{"bcda", "balanced"} {
		b.Run(algo, func(b *testing.B) {
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				g, err := millionNodes().Build()
				if err != nil {
					b.Fatal(err)
				}
				h := g.Hierarchy()
				a, _ := mapping.ParseAlgo(algo, h)
				batches, _ := h.ParseBatches("all", "node")
				rows, err := Plan(PlanInput{Graph: g, Algos: []mapping.Algo{a}, Batches: batches, ImageBytes: 50e6})
				if err != nil || len(rows) != 1 || rows[0].Nodes != 1<<20 {
					b.Fatal(err)
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
		})
	}
}
