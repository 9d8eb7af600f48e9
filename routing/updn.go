package routing

import (
	"fmt"
	"sort"

	"github.com/bootfabric/bootfabric/topology"
)

// UpDown is up*/down* routing: switches are ranked by their distance from the roots, a hop towards
// a lower (rank, vertex) is up, and a route never goes up after going down. Each switch takes the
// shortest such route, going down as soon as a down-only path exists, and spreads destinations over
// the equally short ports by routes already assigned per port (as OpenSM does).
type UpDown struct {
	// Roots are the root switches; empty means the switches of the highest level.
	Roots []topology.VertexID
	// Progress, when set, is told how many leaves are routed to of all (see Options.Progress).
	Progress func(done, total int)
}

// Name returns "updn".
func (UpDown) Name() string { return "updn" }

// Compute builds the tables.
func (e UpDown) Compute(g *topology.Graph) (*Tables, error) {
	t := newTables(g, "updn")
	f := prepare(t)
	S := len(t.switches)
	if S == 0 {
		return nil, fmt.Errorf("updn: %s has no switches", g.Name)
	}
	rank := make([]int, S)
	for i := range rank {
		rank[i] = -1
	}
	var q []int32
	if len(e.Roots) == 0 {
		top := -1 << 30
		for s, l := range f.level {
			if len(f.groups[s]) > 0 {
				top = max(top, l)
			}
		}
		for s, l := range f.level {
			if l == top && len(f.groups[s]) > 0 {
				q = append(q, int32(s))
			}
		}
	} else {
		for _, v := range e.Roots {
			if int(v) >= g.NumVertices() || t.swIdx[v] < 0 {
				return nil, fmt.Errorf("updn: root %d is not a switch", v)
			}
			q = append(q, t.swIdx[v])
		}
	}
	for _, s := range q {
		rank[s] = 0
	}
	for i := 0; i < len(q); i++ {
		s := q[i]
		for _, gr := range f.groups[s] {
			if rank[gr.nb] < 0 {
				rank[gr.nb] = rank[s] + 1
				q = append(q, gr.nb)
			}
		}
	}
	for s := range rank {
		if rank[s] < 0 {
			rank[s] = S // not connected to the roots
		}
	}
	// up reports whether the hop a -> b goes up (towards the roots).
	up := func(a, b int32) bool {
		if rank[a] != rank[b] {
			return rank[b] < rank[a]
		}
		return b < a
	}
	order := make([]int32, S)
	for i := range order {
		order[i] = int32(i)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if rank[a] != rank[b] {
			return rank[a] < rank[b]
		}
		return a < b
	})
	load := make([][]int32, S)
	for s := range load {
		load[s] = make([]int32, len(g.Links(t.switches[s]))+1)
	}
	dd := make([]int32, S)
	dist := make([]int32, S)
	const unset = int32(1 << 30)
	prog := newCounter(e.Progress, len(f.leaves))
	for li, leaf := range f.leaves {
		// Down-only distances to the leaf: walk up from it.
		for s := range dd {
			dd[s], dist[s] = unset, unset
		}
		dd[leaf] = 0
		q = append(q[:0], leaf)
		for i := 0; i < len(q); i++ {
			x := q[i]
			for _, gr := range f.groups[x] {
				if up(x, gr.nb) && dd[gr.nb] == unset {
					dd[gr.nb] = dd[x] + 1
					q = append(q, gr.nb)
				}
			}
		}
		for _, s := range order {
			if dd[s] != unset {
				dist[s] = dd[s]
				continue
			}
			for _, gr := range f.groups[s] {
				if up(s, gr.nb) && dist[gr.nb] != unset && dist[gr.nb]+1 < dist[s] {
					dist[s] = dist[gr.nb] + 1
				}
			}
		}
		for s := 0; s < S; s++ {
			if int32(s) == leaf {
				for _, d := range f.onLeaf[li] {
					t.set(s, int(d), int(t.attach[d]))
				}
				continue
			}
			if dist[s] == unset {
				continue
			}
			down := dd[s] != unset
			assignBalanced(t, f, s, f.onLeaf[li], load[s], func(gr *group) bool {
				if down {
					return !up(int32(s), gr.nb) && dd[gr.nb] == dd[s]-1
				}
				return up(int32(s), gr.nb) && dist[gr.nb] == dist[s]-1
			})
		}
		prog.done()
	}
	return t, nil
}

// assignBalanced gives each destination of dl, at switch s, the least loaded port among the
// groups ok accepts (ties: the lowest port), and counts it.
func assignBalanced(t *Tables, f *fabric, s int, dl []int32, load []int32, ok func(*group) bool) {
	var cand []uint16
	for i := range f.groups[s] {
		if gr := &f.groups[s][i]; ok(gr) {
			cand = append(cand, gr.ports...)
		}
	}
	if len(cand) == 0 {
		return
	}
	for _, d := range dl {
		best := cand[0]
		for _, p := range cand[1:] {
			if load[p] < load[best] || load[p] == load[best] && p < best {
				best = p
			}
		}
		load[best]++
		t.set(s, int(d), int(best))
	}
}

// MinHop routes every destination along least-hop paths, spreading destinations over the equally
// short ports by routes already assigned per port, as OpenSM's minhop engine does. It is not
// deadlock-free in general; Check tells.
type MinHop struct {
	// Progress, when set, is told how many leaves are routed to of all (see Options.Progress).
	Progress func(done, total int)
}

// Name returns "minhop".
func (MinHop) Name() string { return "minhop" }

// Compute builds the tables.
func (e MinHop) Compute(g *topology.Graph) (*Tables, error) {
	t := newTables(g, "minhop")
	f := prepare(t)
	S := len(t.switches)
	load := make([][]int32, S)
	for s := range load {
		load[s] = make([]int32, len(g.Links(t.switches[s]))+1)
	}
	dist := make([]int32, S)
	var q []int32
	prog := newCounter(e.Progress, len(f.leaves))
	for li, leaf := range f.leaves {
		for s := range dist {
			dist[s] = -1
		}
		dist[leaf] = 0
		q = append(q[:0], leaf)
		for i := 0; i < len(q); i++ {
			x := q[i]
			for _, gr := range f.groups[x] {
				if dist[gr.nb] < 0 {
					dist[gr.nb] = dist[x] + 1
					q = append(q, gr.nb)
				}
			}
		}
		for s := 0; s < S; s++ {
			switch {
			case int32(s) == leaf:
				for _, d := range f.onLeaf[li] {
					t.set(s, int(d), int(t.attach[d]))
				}
			case dist[s] > 0:
				assignBalanced(t, f, s, f.onLeaf[li], load[s], func(gr *group) bool { return dist[gr.nb] == dist[s]-1 })
			}
		}
		prog.done()
	}
	return t, nil
}
