package routing

import (
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
)

// group is the ports of a switch that lead to one neighbouring switch.
type group struct {
	nb    int32    // switch index of the neighbour
	ports []uint16 // graph ports, ascending
}

// fabric is the preprocessing every engine shares: port groups per switch, the leaves and the
// destinations on each leaf.
type fabric struct {
	t      *Tables
	groups [][]group // per switch index, ordered by neighbour vertex ID (the GUID order of generated fabrics)
	level  []int     // per switch index
	leaves []int32   // switch indices of the switches with attached destinations
	leafIx []int32   // switch index -> index in leaves, -1
	onLeaf [][]int32 // per leaf index, its destination indices ascending
}

func prepare(t *Tables) *fabric {
	g := t.g
	f := &fabric{t: t}
	S := len(t.switches)
	f.groups = make([][]group, S)
	f.level = make([]int, S)
	f.leafIx = make([]int32, S)
	for si, v := range t.switches {
		f.level[si] = g.Level(v)
		f.leafIx[si] = -1
		var gs []group
		for p, l := range g.Links(v) {
			w := g.Other(l, v)
			wi := t.swIdx[w]
			if wi < 0 {
				continue
			}
			found := false
			for k := range gs {
				if gs[k].nb == wi {
					gs[k].ports = append(gs[k].ports, uint16(p+1))
					found = true
					break
				}
			}
			if !found {
				gs = append(gs, group{nb: wi, ports: []uint16{uint16(p + 1)}})
			}
		}
		sort.Slice(gs, func(i, j int) bool { return gs[i].nb < gs[j].nb })
		f.groups[si] = gs
	}
	for d := range t.dests {
		s := t.leafOf[d]
		if s < 0 {
			continue
		}
		if f.leafIx[s] < 0 {
			f.leafIx[s] = int32(len(f.leaves))
			f.leaves = append(f.leaves, s)
			f.onLeaf = append(f.onLeaf, nil)
		}
		li := f.leafIx[s]
		f.onLeaf[li] = append(f.onLeaf[li], int32(d))
	}
	return f
}

// parallel runs fn(i) for i in [0, n) on workers goroutines (0: GOMAXPROCS).
func parallel(n, workers int, fn func(i int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
