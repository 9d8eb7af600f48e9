package report

import (
	"io"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the process's user+system CPU time, so that a benchmark can report the work
// done apart from the wall time, which other load on the machine inflates.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchReport(b *testing.B, cfg Config) {
	start := cpuTime()
	for b.Loop() {
		rep, err := Build(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := rep.WriteHTML(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime()-start).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkPaperReport is the whole default report of the paper's machine: all four algorithms,
// the paper's ladder of 11 batches, the analytic and the flow model, the three example scenarios,
// the recommendations, rendered as HTML. Target: at most 3 s (ns/op is wall time on all cores;
// cpu-s/op the CPU time spent).
//
//	go test -run '^$' -bench PaperReport -benchtime 5x ./report/
func BenchmarkPaperReport(b *testing.B) { benchReport(b, paperConfig(b, true, true)) }

// BenchmarkPaperReportAnalytic is the same report without the flow model.
func BenchmarkPaperReportAnalytic(b *testing.B) { benchReport(b, paperConfig(b, false, true)) }

// BenchmarkRenderHTML is the HTML page alone of the whole default report (built once), so that a
// change to the renderer shows apart from the models' time.
//
//	go test -run '^$' -bench RenderHTML -benchtime 20x ./report/
func BenchmarkRenderHTML(b *testing.B) {
	rep, err := Build(paperConfig(b, true, true))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := rep.WriteHTML(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
