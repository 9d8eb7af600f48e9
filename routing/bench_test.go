package routing

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the process's user+system CPU time: the machine may be shared, so wall time
// alone says little.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The 3-level fat-tree of 36-port switches (11,664 nodes) and a 65,536-node one of 64-port switches.
var benchTrees = []struct{ name, spec string }{
	{"11664", "pgft:3;18,18,36;1,18,18;1,1,1"},
	{"65536", "pgft:3;32,32,64;1,32,32;1,1,1"},
}

func BenchmarkDmodc(b *testing.B) {
	for _, bt := range benchTrees {
		b.Run(bt.name, func(b *testing.B) {
			g := buildPGFT(b, bt.spec)
			var tb *Tables
			b.ResetTimer()
			c0 := cpuTime()
			for i := 0; i < b.N; i++ {
				tb = nil // let the previous tables go before building new ones
				var err error
				if tb, err = (Dmodc{}).Compute(g); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(tb.BytesPerEntry(), "bytes/entry")
			b.ReportMetric(float64(len(tb.Switches())*len(tb.Dests())), "entries")
		})
	}
}

// BenchmarkDmodcReroute re-routes into the previous tables' memory, as after a fault.
func BenchmarkDmodcReroute(b *testing.B) {
	for _, bt := range benchTrees {
		b.Run(bt.name, func(b *testing.B) {
			g := buildPGFT(b, bt.spec)
			tb, err := (Dmodc{}).Compute(g)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			c0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if tb, err = (Dmodc{}).Recompute(g, tb); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(tb.BytesPerEntry(), "bytes/entry")
		})
	}
}

func BenchmarkDmodk(b *testing.B) {
	for _, bt := range benchTrees {
		b.Run(bt.name, func(b *testing.B) {
			g := buildPGFT(b, bt.spec)
			var tb *Tables
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var err error
				if tb, err = (Dmodk{}).Compute(g); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(tb.BytesPerEntry(), "bytes/entry")
		})
	}
}

func BenchmarkBuildPGFT(b *testing.B) {
	for _, bt := range benchTrees {
		b.Run(bt.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				buildPGFT(b, bt.spec)
			}
		})
	}
}
