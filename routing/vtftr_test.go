package routing

import (
	"math/rand/v2"
	"testing"

	"github.com/bootfabric/bootfabric/topology"
)

func fat2d(t testing.TB, n, k int, failed [][2]int) (*topology.Graph, topology.Fat2D) {
	t.Helper()
	f := topology.Fat2D{N: n, K: k}
	g, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	var sw []topology.VertexID
	for _, xy := range failed {
		sw = append(sw, f.Leaf(xy[0], xy[1]))
	}
	if len(sw) > 0 {
		g, _, err = topology.Degrade(g, nil, sw)
		if err != nil {
			t.Fatal(err)
		}
	}
	return g, f
}

func TestVTFTRNoFaults(t *testing.T) {
	g, f := fat2d(t, 4, 2, nil)
	tb, err := VTFTR{}.Compute(g)
	if err != nil {
		t.Fatal(err)
	}
	r := Check(tb, CheckOptions{Congestion: true})
	if !r.Valid || r.VCs != 1 || r.Healthy != f.NumNodes() {
		t.Fatalf("%v", r)
	}
	// XY: node, row up, row down, column up, column down, node = 6 channels.
	path, err := tb.Route(nil, g.Nodes()[0], g.Nodes()[f.NumNodes()-1])
	if err != nil || len(path) != 6 {
		t.Fatalf("path %v, %v", path, err)
	}
	if s := g.Segment(g.Link(path[1].Link()).Segment); s != "row" {
		t.Errorf("first switch hop on %s, want row", s)
	}
}

// hopsBetween returns the number of channels from the first node of leaf (xs, ys) to the first
// node of leaf (xd, yd).
func hopsBetween(t *testing.T, tb *Tables, f topology.Fat2D, xs, ys, xd, yd int) int {
	t.Helper()
	src := topology.VertexID((ys*f.N + xs) * f.K)
	dst := topology.VertexID((yd*f.N + xd) * f.K)
	p, err := tb.Route(nil, src, dst)
	if err != nil {
		t.Fatalf("(%d,%d)->(%d,%d): %v", xs, ys, xd, yd, err)
	}
	return len(p)
}

func TestVTFTRDetourHops(t *testing.T) {
	// Source leaf (0,0), destination leaf (2,2). XY goes through (2,0), YX through (0,2).
	g, f := fat2d(t, 4, 1, [][2]int{{2, 0}})
	tb, err := VTFTR{}.Compute(g)
	if err != nil {
		t.Fatal(err)
	}
	if h := hopsBetween(t, tb, f, 0, 0, 2, 2); h != 6 {
		t.Errorf("YX detour: %d channels, want 6 (no extra hop)", h)
	}
	g, f = fat2d(t, 4, 1, [][2]int{{2, 0}, {0, 2}})
	tb, err = VTFTR{}.Compute(g)
	if err != nil {
		t.Fatal(err)
	}
	if h := hopsBetween(t, tb, f, 0, 0, 2, 2); h != 8 {
		t.Errorf("misroute: %d channels, want 8 (two extra hops)", h)
	}
	if r := Check(tb, CheckOptions{}); !r.Valid || r.VCs != 2 {
		t.Errorf("%v", r)
	}
}

// TestVTFTRRandomFaults: 16 x 16 grid, up to 15 failed leaves anywhere: every healthy pair is
// routed, at most 2 VCs, each VC's dependency graph acyclic.
func TestVTFTRRandomFaults(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 16
	trials := 40
	if testing.Short() {
		trials = 8
	}
	for trial := 0; trial < trials; trial++ {
		nf := 1 + r.IntN(n-1)
		if trial < 3 {
			nf = n - 1
		}
		perm := r.Perm(n * n)
		var failed [][2]int
		for _, i := range perm[:nf] {
			failed = append(failed, [2]int{i % n, i / n})
		}
		if trial == 3 { // all in one row
			failed = failed[:0]
			for x := 0; x < n-1; x++ {
				failed = append(failed, [2]int{x, 5})
			}
		}
		if trial == 4 { // all in one column
			failed = failed[:0]
			for y := 1; y < n; y++ {
				failed = append(failed, [2]int{7, y})
			}
		}
		if trial == 5 { // a diagonal
			failed = failed[:0]
			for i := 0; i < n-1; i++ {
				failed = append(failed, [2]int{i, i})
			}
		}
		g, f := fat2d(t, n, 2, failed)
		tb, err := VTFTR{}.Compute(g)
		if err != nil {
			t.Fatal(err)
		}
		rep := Check(tb, CheckOptions{})
		if !rep.Valid || rep.VCs > 2 || rep.Healthy != f.NumNodes()-len(failed)*f.K {
			t.Fatalf("faults %v: %v %v", failed, rep, rep.FirstUnreachable)
		}
	}
}
