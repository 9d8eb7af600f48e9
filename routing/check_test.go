package routing

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bootfabric/bootfabric/topology"
)

func TestCheckIntactPGFT(t *testing.T) {
	for _, spec := range []string{"pgft:3;4,4,8;1,4,4;1,1,1", "pgft:2;4,8;1,4;1,1", "pgft:3;2,2,3;1,2,2;1,2,1"} {
		g := buildPGFT(t, spec)
		for _, e := range []Engine{Dmodk{}, Dmodc{}} {
			tb, err := e.Compute(g)
			if err != nil {
				t.Fatal(err)
			}
			r := Check(tb, CheckOptions{UpDown: true, Congestion: true})
			if !r.Valid || r.VCs != 1 || r.Healthy != len(g.Nodes()) {
				t.Errorf("%s %s: %v", spec, e.Name(), r)
			}
			if r.AllToAll == nil || r.AllToAll.Max == 0 || r.Shift == nil || r.Shift.Shifts != len(g.Nodes())-1 {
				t.Errorf("%s %s: congestion %+v %+v", spec, e.Name(), r.AllToAll, r.Shift)
			}
		}
	}
}

// TestDmodkShiftNonBlocking: on full k-ary n-trees and PGFTs without oversubscription
// (m_l p_l = w_{l+1} p_{l+1}), every shift permutation puts at most one route on each channel.
func TestDmodkShiftNonBlocking(t *testing.T) {
	specs := []string{
		"pgft:2;4,8;1,4;1,1",       // 4-ary 2-tree style, 2 levels
		"pgft:3;4,4,8;1,4,4;1,1,1", // 8-port 3-level fat-tree
		"pgft:3;2,2,4;1,2,2;1,1,1", // 4-ary 3-tree
		"pgft:3;3,3,6;1,3,3;1,1,1", // 6-port
		"pgft:2;4,4;1,2;1,2",       // parallel links at the top
		"pgft:3;4,2,4;1,2,4;1,2,1", // parallel links in the middle
		"pgft:3;2,2,3;1,2,2;1,2,1", // the Dmodc paper's figure 1 (oversubscribed: checked <= 2 below)
	}
	for i, spec := range specs {
		g := buildPGFT(t, spec)
		tb, err := Dmodk{}.Compute(g)
		if err != nil {
			t.Fatal(err)
		}
		r := Check(tb, CheckOptions{Congestion: true})
		want := int64(1)
		if i == len(specs)-1 {
			want = 2
		}
		if r.Shift.Max > want {
			t.Errorf("%s: shift permutations put up to %d routes on a channel, want <= %d", spec, r.Shift.Max, want)
		}
	}
}

// updownConnected reports whether every pair of leaves with nodes has an up*/down* path,
// independently of any engine: a BFS over (switch, descending) states.
func updownConnected(g *topology.Graph) bool {
	var leaves []topology.VertexID
	seen := map[topology.VertexID]bool{}
	for _, n := range g.Nodes() {
		if ls := g.Links(n); len(ls) > 0 {
			l := g.Other(ls[0], n)
			if !seen[l] {
				seen[l] = true
				leaves = append(leaves, l)
			}
		}
	}
	for _, src := range leaves {
		type st struct {
			v    topology.VertexID
			desc bool
		}
		vis := map[st]bool{{src, false}: true}
		q := []st{{src, false}}
		reached := map[topology.VertexID]bool{}
		for len(q) > 0 {
			x := q[0]
			q = q[1:]
			reached[x.v] = true
			for _, l := range g.Links(x.v) {
				w := g.Other(l, x.v)
				if g.Kind(w) != topology.Switch {
					continue
				}
				up := g.Level(w) > g.Level(x.v)
				if up && x.desc {
					continue
				}
				n := st{w, x.desc || !up}
				if !vis[n] {
					vis[n] = true
					q = append(q, n)
				}
			}
		}
		for _, l := range leaves {
			if !reached[l] {
				return false
			}
		}
	}
	return true
}

// degrade removes random switch-to-switch links and non-leaf switches.
func degrade(t testing.TB, r *rand.Rand, g *topology.Graph, frac float64) *topology.Graph {
	var links []topology.LinkID
	for l := 0; l < g.NumLinks(); l++ {
		lk := g.Link(topology.LinkID(l))
		if g.Kind(lk.A) == topology.Switch && g.Kind(lk.B) == topology.Switch && r.Float64() < frac {
			links = append(links, topology.LinkID(l))
		}
	}
	var sws []topology.VertexID
	for v := 0; v < g.NumVertices(); v++ {
		if g.Kind(topology.VertexID(v)) == topology.Switch && g.Level(topology.VertexID(v)) > 0 && r.Float64() < frac/2 {
			sws = append(sws, topology.VertexID(v))
		}
	}
	ng, _, err := topology.Degrade(g, links, sws)
	if err != nil {
		t.Fatal(err)
	}
	return ng
}

func TestDmodcDegraded(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	tested := 0
	for i := 0; i < 300 && tested < 80; i++ {
		p := randomPGFT(r)
		if p.Height() < 2 {
			continue
		}
		g0, err := p.Build()
		if err != nil {
			t.Fatal(err)
		}
		g := degrade(t, r, g0, 0.05+0.3*r.Float64())
		if !updownConnected(g) {
			continue
		}
		tested++
		tb, err := Dmodc{}.Compute(g)
		if err != nil {
			t.Fatalf("%s degraded: %v", p, err)
		}
		rep := Check(tb, CheckOptions{UpDown: true, Congestion: true})
		if !rep.Valid || rep.Unreachable != 0 || rep.UpDownViolations != 0 || !rep.DeadlockFree {
			t.Errorf("%s degraded (%d links left of %d): %v %v", p, g.NumLinks(), g0.NumLinks(), rep, rep.FirstUnreachable)
		}
		if rep.AllToAll == nil || rep.AllToAll.Max == 0 {
			t.Errorf("%s: no congestion figures", p)
		}
	}
	if tested < 20 {
		t.Fatalf("only %d degraded fabrics were up*/down* connected", tested)
	}
}

func TestCheckFindsBrokenTables(t *testing.T) {
	g := buildPGFT(t, "pgft:2;4,4;1,2;1,1")
	tb, err := Dmodc{}.Compute(g)
	if err != nil {
		t.Fatal(err)
	}
	// Top switch 1 carries destination 1 up from every leaf; sending it down to leaf 3, which
	// sends it up again, makes a loop.
	tb.set(5, 1, 4)
	r := Check(tb, CheckOptions{UpDown: true})
	if r.Valid || r.Loops != 1 || r.Unreachable == 0 || len(r.FirstUnreachable) == 0 {
		t.Errorf("looping tables pass: %v", r)
	}
	// A dead end: no entry at a leaf.
	tb, _ = Dmodc{}.Compute(g)
	tb.set(0, 15, NoPort)
	r = Check(tb, CheckOptions{UpDown: true})
	if r.Valid || r.Unreachable != 4 || r.FirstUnreachable[0] != (Pair{"n0", "n15"}) {
		t.Errorf("dead end: %v %v", r, r.FirstUnreachable)
	}
	// Down then up: leaf 3 -> top 0 -> leaf 1 -> top 1 -> leaf 0 for destination 0.
	tb, _ = Dmodc{}.Compute(g)
	tb.set(4, 0, 2) // top 0 sends destination 0 to leaf 1
	tb.set(1, 0, 6) // leaf 1 sends it up to top 1, which goes down to leaf 0
	r = Check(tb, CheckOptions{UpDown: true})
	if r.Valid || r.UpDownViolations == 0 || r.Unreachable != 0 {
		t.Errorf("down-up: %v", r)
	}
}

var _ topology.Router = (*Tables)(nil)

// TestCheckFindsDependencyCycle: clockwise routing on a ring of four switches is the textbook
// deadlock; putting the hops after the dateline on VC 1 breaks the cycle.
func TestCheckFindsDependencyCycle(t *testing.T) {
	var b topology.Builder
	var sw, nodes [4]topology.VertexID
	for i := range sw {
		nodes[i] = b.AddVertex(topology.Node, 0, "")
	}
	for i := range sw {
		sw[i] = b.AddVertex(topology.Switch, 0, "")
		b.AddLink(nodes[i], sw[i], 1000, 1, "n") // switch port 1: its node
	}
	for i := range sw {
		b.AddLink(sw[i], sw[(i+1)%4], 1000, 1, "ring")
	}
	cw := [4]int{2, 3, 3, 3} // clockwise port: ports follow the order links were added
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	tb := newTables(g, "ring")
	for s := 0; s < 4; s++ {
		for d := 0; d < 4; d++ {
			if s == d {
				tb.set(s, d, 1)
			} else {
				tb.set(s, d, cw[s])
			}
		}
	}
	r := Check(tb, CheckOptions{})
	if r.DeadlockFree || r.Valid || len(r.CyclicVCs) != 1 || r.CyclicVCs[0] != 0 || r.Unreachable != 0 {
		t.Fatalf("clockwise ring: %v cyclic VCs %v", r, r.CyclicVCs)
	}
	// Dateline between switch 3 and switch 0: hops leaving a switch s < d (a route that has
	// wrapped, or never needs to) use VC 1, hops with s > d (before the wrap) VC 0. VC 0 never
	// leaves switch 0, and VC 1 never crosses the dateline: both acyclic.
	for s := 0; s < 4; s++ {
		for d := 0; d < 4; d++ {
			if s != d && s < d {
				tb.setVC(s, d, 1)
			}
		}
	}
	r = Check(tb, CheckOptions{})
	if !r.DeadlockFree || r.VCs != 2 {
		t.Fatalf("ring with dateline: %v cyclic VCs %v", r, r.CyclicVCs)
	}
}

// TestDmodkShiftRandomFullPGFT: random PGFTs without oversubscription (m_l p_l = w_{l+1} p_{l+1}
// at every level below the top).
func TestDmodkShiftRandomFullPGFT(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	tested := 0
	for i := 0; i < 25; i++ {
		h := 2 + r.IntN(2)
		p := topology.PGFT{M: make([]int, h), W: make([]int, h), P: make([]int, h)}
		p.W[0], p.P[0] = 1, 1
		for l := 0; l < h; l++ {
			p.M[l] = 2 + r.IntN(5)
			if l+1 < h {
				down := p.M[l] * p.P[l]
				var divs []int
				for d := 1; d <= down; d++ {
					if down%d == 0 {
						divs = append(divs, d)
					}
				}
				p.P[l+1] = divs[r.IntN(len(divs))]
				p.W[l+1] = down / p.P[l+1]
			}
		}
		if p.NumVertices() > 4000 {
			continue
		}
		g, err := p.Build()
		if err != nil {
			t.Fatal(err)
		}
		tb, err := Dmodk{}.Compute(g)
		if err != nil {
			t.Fatal(err)
		}
		if rep := Check(tb, CheckOptions{Congestion: true}); rep.Shift.Max > 1 || !rep.Valid {
			t.Errorf("%s: shift max %d valid %v", p, rep.Shift.Max, rep.Valid)
		}
		tested++
	}
	if tested < 15 {
		t.Errorf("only %d PGFTs tested", tested)
	}
}

// TestCheckFirstUnreachableDeterministic: the unreachable pairs a report lists are those of the
// first destinations, the same with one worker or many and on every run (they end up in bootctl
// route's error message, which must not change from run to run).
func TestCheckFirstUnreachableDeterministic(t *testing.T) {
	tests := []struct {
		name   string
		engine Engine
		spec   string
	}{
		{"dmodc on a 2-D fat-tree", Dmodc{}, "fat2d:12"},
		{"updn on a 2-D fat-tree", UpDown{}, "fat2d:6,2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := topology.ParseFat2D(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			g, err := f.Build()
			if err != nil {
				t.Fatal(err)
			}
			tb, err := tc.engine.Compute(g)
			if err != nil {
				t.Fatal(err)
			}
			want := Check(tb, CheckOptions{Workers: 1, MaxPairs: 7}).FirstUnreachable
			if len(want) != 7 {
				t.Fatalf("serial check lists %d pairs, want 7: %v", len(want), want)
			}
			for run := range 20 {
				got := Check(tb, CheckOptions{Workers: 4, MaxPairs: 7}).FirstUnreachable
				if !slices.Equal(got, want) {
					t.Fatalf("run %d with 4 workers: %v, serial: %v", run, got, want)
				}
			}
		})
	}
}
