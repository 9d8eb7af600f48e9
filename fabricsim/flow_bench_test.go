package fabricsim

import (
	"context"
	"runtime"
	"syscall"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// flowMillion is the paper's machine grown to 1,048,576 nodes: 1,024 cabinets x 4 supernodes x
// 32 boards x 8 nodes, 4,096 boot servers on cascade switches of 20.
func flowMillion() *topology.Machine {
	m, _ := topology.Preset("sunway")
	m.Name = "sunway-1m"
	m.Levels[0].Count = 1024
	m.Servers.Count = 4096
	return m
}

// cpuSeconds is the process's user+system CPU time: on a shared machine it says more than the
// wall clock.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// benchFlow simulates booting all of machine m under algo with the default files (nbp, kernel,
// initrd over TFTP), all powered on at 0 unless rampPerSec > 0 (then a ramp with a 10 ms time
// step). It reports nodes, the simulated batch time, events, CPU time per run and the peak heap.
func benchFlow(b *testing.B, m *topology.Machine, algo string, rampPerSec float64) {
	g, err := m.Build()
	if err != nil {
		b.Fatal(err)
	}
	batch := firstNodes(len(g.Nodes()))
	al, err := mapping.ParseAlgo(algo, g.Hierarchy())
	if err != nil {
		b.Fatal(err)
	}
	a, err := mapping.Assign(g, al, batch, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultFlowConfig(TFTP)
	if rampPerSec > 0 {
		if cfg.Arrivals, err = RampArrivals(len(batch), rampPerSec); err != nil {
			b.Fatal(err)
		}
		cfg.TimeStep = 0.01
	}
	runtime.GC()
	cpu0 := cpuSeconds()
	b.ReportAllocs()
	b.ResetTimer()
	var res *FlowResult
	var peak uint64
	for b.Loop() {
		res, err = Simulate(context.Background(), g, nil, a, batch, cfg)
		if err != nil {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(len(batch)), "nodes")
	b.ReportMetric(res.BatchSeconds, "sim-s")
	b.ReportMetric(float64(res.Stats.Events), "events")
	b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
}

// BenchmarkFlowSunway: the whole paper machine, 40,960 nodes x 3 files. Target: 0.5 s, 1 GB.
func BenchmarkFlowSunway(b *testing.B) {
	for _, algo := range []string{"scda", "bcda", "ncda"} {
		b.Run(algo, func(b *testing.B) {
			m, _ := topology.Preset("sunway")
			benchFlow(b, m, algo, 0)
		})
	}
}

// BenchmarkFlowMillion: 1,048,576 nodes x 3 files. Target: 30 s.
func BenchmarkFlowMillion(b *testing.B) {
	for _, algo := range []string{"bcda", "ncda"} {
		b.Run(algo, func(b *testing.B) { benchFlow(b, flowMillion(), algo, 0) })
	}
}

// BenchmarkFlowSunwayRamp: the whole paper machine powered on at 1,000 nodes per second (41 s),
// events on a 10 ms grid.
func BenchmarkFlowSunwayRamp(b *testing.B) {
	m, _ := topology.Preset("sunway")
	benchFlow(b, m, "bcda", 1000)
}
