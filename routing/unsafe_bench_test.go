package routing

import (
	"encoding/binary"
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"

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
// TaihuLight workload (mcBenchWorkload) with the hop table read as uint64 words through an
// unsafe byte view (as HopTable.roots did) and through binary.LittleEndian loads and stores on
// the byte table, in one run: the figure behind dropping the unsafe casts.
//
//	go test -run '^$' -bench McastRootsByteView -count 3 ./routing
func BenchmarkMcastRootsByteView(b *testing.B) {
	h, groups := mcBenchWorkload(b)
	gs, err := h.prepareGroups(groups, nil)
	if err != nil {
		b.Fatal(err)
	}
	words := make([]uint64, len(h.dist)/8)
	view := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)
	copy(view, h.dist)
	for _, bc := range []struct {
		name  string
		roots func(m *mcGroup) []int32
	}{
		{"unsafe", func(m *mcGroup) []int32 { return rootsUnsafeView(h, words, m) }},
		{"binary", func(m *mcGroup) []int32 { return rootsLE(h, m) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := 0
			for i := 0; i < b.N; i++ {
				for gi := range gs {
					n += len(bc.roots(&gs[gi]))
				}
			}
			b.ReportMetric(float64(n)/float64(b.N), "roots")
		})
	}
}

// rootsUnsafeView is the roots search over words, a uint64 copy of h.dist, with ecc read back
// through an unsafe byte view.
func rootsUnsafeView(h *HopTable, words []uint64, m *mcGroup) []int32 {
	nw := h.stride / 8
	ecc := make([]uint64, nw)
	for _, l := range m.leaves {
		row := words[int(l)*nw : int(l+1)*nw]
		for w, x := range row {
			ecc[w] = swarMax(ecc[w], x)
		}
	}
	eb := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(ecc))), len(ecc)*8)[:len(h.sw)]
	return minBytes(eb)
}

// rootsLE is the same search on the byte table through little-endian word loads.
func rootsLE(h *HopTable, m *mcGroup) []int32 {
	ecc := make([]uint8, h.stride)
	for _, l := range m.leaves {
		row := h.dist[int(l)*h.stride : int(l+1)*h.stride]
		for w := 0; w < len(row); w += 8 {
			binary.LittleEndian.PutUint64(ecc[w:], swarMax(binary.LittleEndian.Uint64(ecc[w:]), binary.LittleEndian.Uint64(row[w:])))
		}
	}
	return minBytes(ecc[:len(h.sw)])
}

func minBytes(eb []uint8) []int32 {
	best := uint8(unreachable)
	for _, e := range eb {
		best = min(best, e)
	}
	var out []int32
	for s, e := range eb {
		if e == best {
			out = append(out, int32(s))
		}
	}
	return out
}
