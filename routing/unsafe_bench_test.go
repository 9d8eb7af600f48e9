package routing

import (
	"encoding/binary"
	"runtime/debug"
	"syscall"
	"testing"

	"github.com/bootfabric/bootfabric/topology"
)

// BenchmarkDmodcHugePages routes the 65,536-node fat-tree into a fresh table (memory handed back
// to the OS before each run, as in a bootctl process) with and without adviseHuge, in one run:
// the figure behind keeping the madvise call in newTables.
//
//	go test -run '^$' -bench DmodcHugePages -benchtime 5x -count 3 ./routing
func BenchmarkDmodcHugePages(b *testing.B) {
	g := buildPGFT(b, benchTrees[1].spec)
	// The table's size without computing it: an earlier table's advice would stay on the
	// addresses the heap hands out again.
	S := 0
	for v := range topology.VertexID(g.NumVertices()) {
		if g.Kind(v) == topology.Switch {
			S++
		}
	}
	n := S * (len(g.Nodes()) + len(g.Servers()))
	var tb *Tables
	var err error
	for _, bc := range []struct {
		name   string
		advise bool
	}{{"madvise", true}, {"none", false}} {
		b.Run(bc.name, func(b *testing.B) {
			var cpu, faults int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				tb = nil
				debug.FreeOSMemory()
				prev := &Tables{p8: make([]uint8, n)}
				if bc.advise {
					adviseHuge(prev.p8)
				}
				c0, f0 := cpuTime(), minorFaults()
				b.StartTimer()
				if tb, err = (Dmodc{}).Recompute(g, prev); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu += int64(cpuTime() - c0)
				faults += minorFaults() - f0
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(faults)/float64(b.N), "faults/op")
			b.ReportMetric(float64(len(tb.p8)), "table-bytes")
		})
	}
}

// minorFaults returns the process's minor page faults so far.
func minorFaults() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Minflt
}

// BenchmarkMcastRootsByteView finds the roots of least eccentricity of every group of the
// TaihuLight workload (mcBenchWorkload) three ways in one run: as HopTable.roots does (row maxima
// on the table's uint64 words, read back through an unsafe byte view), through binary.LittleEndian
// loads and stores on a byte table (no unsafe), and on words with the bytes taken out by shifts
// (no unsafe): the figure behind keeping the unsafe casts.
//
//	go test -run '^$' -bench McastRootsByteView -benchtime 5x -count 3 ./routing
func BenchmarkMcastRootsByteView(b *testing.B) {
	h, groups := mcBenchWorkload(b)
	gs, err := h.prepareGroups(groups, nil)
	if err != nil {
		b.Fatal(err)
	}
	eccWords := make([]uint64, h.stride/8)
	ecc := make([]uint8, h.stride)
	for _, bc := range []struct {
		name  string
		roots func(m *mcGroup) int
	}{
		{"unsafe", func(m *mcGroup) int {
			m.roots = m.roots[:0]
			if err := h.roots(m, eccWords, "", 0); err != nil {
				b.Fatal(err)
			}
			return len(m.roots)
		}},
		{"binary", func(m *mcGroup) int { return rootsLE(h, ecc, m) }},
		{"lewords", func(m *mcGroup) int { return rootsLEWords(h, eccWords, m) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := 0
			c0 := cpuTime()
			for i := 0; i < b.N; i++ {
				for gi := range gs {
					n += bc.roots(&gs[gi])
				}
			}
			// The search runs on one goroutine: its CPU time is what the machine's other load
			// does not inflate.
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(n)/float64(b.N), "roots")
		})
	}
}

// rootsLE is HopTable.roots without unsafe: little-endian word loads and stores on the byte
// table and a byte ecc. It returns the number of roots.
func rootsLE(h *HopTable, ecc []uint8, m *mcGroup) int {
	clear(ecc)
	for _, l := range m.leaves {
		row, e := h.dist[int(l)*h.stride:int(l+1)*h.stride], ecc
		for len(row) >= 8 && len(e) >= 8 {
			binary.LittleEndian.PutUint64(e, swarMax(binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(row)))
			row, e = row[8:], e[8:]
		}
	}
	eb := ecc[:len(h.sw)]
	best := uint8(unreachable)
	for _, e := range eb {
		best = min(best, e)
	}
	n := 0
	for _, e := range eb {
		if e == best {
			n++
		}
	}
	return n
}

// rootsLEWords keeps ecc in words, loads the table's bytes little-endian and takes switch s's
// byte out of its word by a shift.
func rootsLEWords(h *HopTable, ecc []uint64, m *mcGroup) int {
	clear(ecc)
	for _, l := range m.leaves {
		row := h.dist[int(l)*h.stride : int(l+1)*h.stride]
		for w := range ecc {
			ecc[w] = swarMax(ecc[w], binary.LittleEndian.Uint64(row[8*w:]))
		}
	}
	best := uint8(unreachable)
	for s := range h.sw {
		best = min(best, uint8(ecc[s>>3]>>(8*(s&7))))
	}
	n := 0
	for s := range h.sw {
		if uint8(ecc[s>>3]>>(8*(s&7))) == best {
			n++
		}
	}
	return n
}
