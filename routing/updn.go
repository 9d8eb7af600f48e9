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
	if len(t.switches) == 0 {
		return nil, fmt.Errorf("updn: %s has no switches", g.Name)
	}
	roots, err := e.rootSwitches(g, t, f)
	if err != nil {
		return nil, err
	}
	r := newUpdnRouter(t, f, roots)
	prog := newCounter(e.Progress, len(f.leaves))
	for li, leaf := range f.leaves {
		r.routeLeaf(li, leaf)
		prog.done()
	}
	return t, nil
}

// rootSwitches returns the switch indices of the roots: e.Roots, or the switches of the highest
// level that have links.
func (e UpDown) rootSwitches(g *topology.Graph, t *Tables, f *fabric) ([]int32, error) {
	var q []int32
	if len(e.Roots) > 0 {
		for _, v := range e.Roots {
			if int(v) >= g.NumVertices() || t.swIdx[v] < 0 {
				return nil, fmt.Errorf("updn: root %d is not a switch", v)
			}
			q = append(q, t.swIdx[v])
		}
		return q, nil
	}
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
	return q, nil
}

// updnRouter routes to one leaf after another, up*/down*: rank orders the switches by distance
// from the roots, and order lists them by (rank, index).
type updnRouter struct {
	t     *Tables
	f     *fabric
	rank  []int
	order []int32
	load  [][]int32 // routes assigned per switch and port
	dd    []int32   // down-only distance to the current leaf
	dist  []int32   // up*/down* distance to the current leaf
	q     []int32
}

// unset is a distance not (yet) known.
const unset = int32(1 << 30)

func newUpdnRouter(t *Tables, f *fabric, roots []int32) *updnRouter {
	S := len(t.switches)
	r := &updnRouter{t: t, f: f, dd: make([]int32, S), dist: make([]int32, S)}
	r.rankFrom(roots)
	r.order = make([]int32, S)
	for i := range r.order {
		r.order[i] = int32(i)
	}
	sort.Slice(r.order, func(i, j int) bool {
		a, b := r.order[i], r.order[j]
		if r.rank[a] != r.rank[b] {
			return r.rank[a] < r.rank[b]
		}
		return a < b
	})
	r.load = make([][]int32, S)
	for s := range r.load {
		r.load[s] = make([]int32, len(t.g.Links(t.switches[s]))+1)
	}
	return r
}

// rankFrom ranks the switches by breadth-first distance from the roots; switches the roots do
// not reach rank last.
func (r *updnRouter) rankFrom(roots []int32) {
	S := len(r.t.switches)
	r.rank = make([]int, S)
	for i := range r.rank {
		r.rank[i] = -1
	}
	q := roots
	for _, s := range q {
		r.rank[s] = 0
	}
	for i := 0; i < len(q); i++ {
		s := q[i]
		for _, gr := range r.f.groups[s] {
			if r.rank[gr.nb] < 0 {
				r.rank[gr.nb] = r.rank[s] + 1
				q = append(q, gr.nb)
			}
		}
	}
	for s := range r.rank {
		if r.rank[s] < 0 {
			r.rank[s] = S // not connected to the roots
		}
	}
	r.q = q
}

// up reports whether the hop a -> b goes up (towards the roots).
func (r *updnRouter) up(a, b int32) bool {
	if r.rank[a] != r.rank[b] {
		return r.rank[b] < r.rank[a]
	}
	return b < a
}

// routeLeaf sets every switch's ports to the destinations of leaf li.
func (r *updnRouter) routeLeaf(li int, leaf int32) {
	t, f := r.t, r.f
	r.distances(leaf)
	for s := 0; s < len(t.switches); s++ {
		if int32(s) == leaf {
			for _, d := range f.onLeaf[li] {
				t.set(s, int(d), int(t.attach[d]))
			}
			continue
		}
		if r.dist[s] == unset {
			continue
		}
		down := r.dd[s] != unset
		assignBalanced(t, f, s, f.onLeaf[li], r.load[s], func(gr *group) bool {
			if down {
				return !r.up(int32(s), gr.nb) && r.dd[gr.nb] == r.dd[s]-1
			}
			return r.up(int32(s), gr.nb) && r.dist[gr.nb] == r.dist[s]-1
		})
	}
}

// distances computes dd, the down-only distances to leaf (walking up from it), then dist, the
// up*/down* distances: down-only where that exists, else one more than the best up neighbour,
// taken in rank order.
func (r *updnRouter) distances(leaf int32) {
	f, dd, dist := r.f, r.dd, r.dist
	for s := range dd {
		dd[s], dist[s] = unset, unset
	}
	dd[leaf] = 0
	q := append(r.q[:0], leaf)
	for i := 0; i < len(q); i++ {
		x := q[i]
		for _, gr := range f.groups[x] {
			if r.up(x, gr.nb) && dd[gr.nb] == unset {
				dd[gr.nb] = dd[x] + 1
				q = append(q, gr.nb)
			}
		}
	}
	r.q = q
	for _, s := range r.order {
		if dd[s] != unset {
			dist[s] = dd[s]
			continue
		}
		for _, gr := range f.groups[s] {
			if r.up(s, gr.nb) && dist[gr.nb] != unset && dist[gr.nb]+1 < dist[s] {
				dist[s] = dist[gr.nb] + 1
			}
		}
	}
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
