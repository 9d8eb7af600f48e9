package fabricsim

import (
	"bufio"
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

// resetPeakRSS makes the kernel's peak resident set (VmHWM) start again from the current one, so
// that peakRSS measures one run and not the setup before it.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's peak resident set in bytes since the last resetPeakRSS (0 if unknown).
func peakRSS() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb * 1024
		}
	}
	return 0
}

// flowBench is one boot to time: machine, mapping, power-on ramp (0: all at once), time step,
// and whether to run the reference full re-solve (bounded by limit).
type flowBench struct {
	m          *topology.Machine
	algo       string
	rampPerSec float64
	step       float64
	reference  bool
	limit      time.Duration
}

// run simulates booting all of the machine with the default files (nbp, kernel, initrd over TFTP)
// and reports nodes, simulated batch time, events, CPU and wall seconds per run and the peak
// resident memory, and logs them as one line. A reference run that does not finish within limit is
// stopped and logged as such.
func (fb flowBench) run(b *testing.B) {
	g, err := fb.m.Build()
	if err != nil {
		b.Fatal(err)
	}
	batch := firstNodes(len(g.Nodes()))
	al, err := mapping.ParseAlgo(fb.algo, g.Hierarchy())
	if err != nil {
		b.Fatal(err)
	}
	a, err := mapping.Assign(g, al, batch, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultFlowConfig(TFTP)
	if fb.rampPerSec > 0 {
		if cfg.Arrivals, err = RampArrivals(len(batch), fb.rampPerSec); err != nil {
			b.Fatal(err)
		}
	}
	cfg.TimeStep, cfg.reference = fb.step, fb.reference
	mode := "incremental"
	if fb.reference {
		mode = "full re-solve"
	}
	runtime.GC()
	resetPeakRSS()
	cpu0, wall0 := cpuSeconds(), time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	var res *FlowResult
	// A plain loop over b.N, not b.Loop: a stopped reference run leaves it early.
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		if fb.limit > 0 {
			ctx, cancel = context.WithTimeout(ctx, fb.limit)
		}
		res, err = Simulate(ctx, g, nil, a, batch, cfg)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			b.Logf("%s %s: %s, %d nodes, ramp %v/s, step %v s: did not finish in %v (stopped)",
				fb.m.Name, fb.algo, mode, len(batch), fb.rampPerSec, fb.step, fb.limit)
			return
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	cpu, wall, rss := (cpuSeconds()-cpu0)/n, time.Since(wall0).Seconds()/n, peakRSS()
	b.ReportMetric(cpu, "cpu-s/op")
	b.ReportMetric(wall, "wall-s/op")
	b.ReportMetric(float64(len(batch)), "nodes")
	b.ReportMetric(res.BatchSeconds, "sim-s")
	b.ReportMetric(float64(res.Stats.Events), "events")
	b.ReportMetric(rss/1e6, "peak-RSS-MB")
	b.Logf("%s %s: %s, %d nodes, ramp %v/s, step %v s: %.2f s wall, %.2f s CPU, peak RSS %.0f MB; batch %.3f s, %d events",
		fb.m.Name, fb.algo, mode, len(batch), fb.rampPerSec, fb.step, wall, cpu, rss/1e6, res.BatchSeconds, res.Stats.Events)
}

func sunwayMachine() *topology.Machine {
	m, _ := topology.Preset("sunway")
	return m
}

// BenchmarkFlowSunway: the whole paper machine, 40,960 nodes x 3 files, all at once.
func BenchmarkFlowSunway(b *testing.B) {
	for _, algo := range []string{"scda", "bcda", "ncda"} {
		b.Run(algo, func(b *testing.B) { flowBench{m: sunwayMachine(), algo: algo}.run(b) })
	}
}

// BenchmarkFlowSunwayRamp: the whole paper machine powered on at 1,000 nodes per second (41 s),
// bcda, exact (one event per arrival and completion). Target: 2 s and 1 GB. Beside it the full
// re-solve at every event, exact (stopped after a minute) and on the 10 ms grid that was the
// default for ramps.
func BenchmarkFlowSunwayRamp(b *testing.B) {
	for _, fb := range []flowBench{
		{m: sunwayMachine(), algo: "bcda", rampPerSec: 1000},
		{m: sunwayMachine(), algo: "bcda", rampPerSec: 1000, reference: true, limit: time.Minute},
		{m: sunwayMachine(), algo: "bcda", rampPerSec: 1000, reference: true, step: 0.01, limit: time.Minute},
	} {
		name := "incremental"
		if fb.reference {
			name = "full-step" + strconv.FormatFloat(fb.step, 'g', -1, 64)
		}
		b.Run(name, fb.run)
	}
}

// BenchmarkFlowMillion: 1,048,576 nodes x 3 files, all at once. Target for ncda: 2 s.
func BenchmarkFlowMillion(b *testing.B) {
	for _, algo := range []string{"bcda", "ncda"} {
		b.Run(algo, func(b *testing.B) { flowBench{m: flowMillion(), algo: algo}.run(b) })
	}
}

// BenchmarkFlowMillionRamp: 1,048,576 nodes powered on at 20,000 per second, bcda, exact.
// Target: 60 s and 4 GB. Beside it the full re-solve on the 10 ms grid, stopped after two
// minutes.
func BenchmarkFlowMillionRamp(b *testing.B) {
	b.Run("incremental", flowBench{m: flowMillion(), algo: "bcda", rampPerSec: 20000}.run)
	b.Run("full-step0.01", flowBench{m: flowMillion(), algo: "bcda", rampPerSec: 20000, reference: true, step: 0.01, limit: 2 * time.Minute}.run)
}
