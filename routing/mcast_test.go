package routing

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bootfabric/bootfabric/topology"
)

func mcGraph(t testing.TB, spec string) (*topology.Graph, *HopTable) {
	t.Helper()
	g, err := topology.OpenGraph(spec)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHopTable(g, 0)
	if err != nil {
		t.Fatal(err)
	}
	return g, h
}

func TestSwarMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		a, b := rng.Uint64()&0x7f7f7f7f7f7f7f7f, rng.Uint64()&0x7f7f7f7f7f7f7f7f
		if i%3 == 0 {
			b = a ^ (rng.Uint64() & 0x0101010101010101)
		}
		var want uint64
		for k := 0; k < 64; k += 8 {
			want |= max((a>>k)&0xff, (b>>k)&0xff) << k
		}
		if got := swarMax(a, b); got != want {
			t.Fatalf("swarMax(%#x, %#x) = %#x, want %#x", a, b, got, want)
		}
	}
}

func TestHopTable(t *testing.T) {
	g, h := mcGraph(t, "pgft:2;4,4;1,2")
	// Leaves are switches 16..19, tops 20..21 (nodes first).
	leaf0, top0 := topology.VertexID(16), topology.VertexID(20)
	for _, c := range []struct {
		a, b topology.VertexID
		want int
	}{{leaf0, leaf0, 0}, {leaf0, top0, 1}, {leaf0, leaf0 + 3, 2}, {0, leaf0, -1}} {
		if got := h.Hops(c.a, c.b); got != c.want {
			t.Errorf("Hops(%s, %s) = %d, want %d", g.VertexName(c.a), g.VertexName(c.b), got, c.want)
		}
	}
	if l, _, ok := h.LeafOf(5); !ok || l != leaf0+1 {
		t.Errorf("LeafOf(n5) = %v %v, want %s", l, ok, g.VertexName(leaf0+1))
	}
}

// TestMcastTreesValid routes many random groups on several fabrics with every algorithm and
// checks every tree: loop-free, minimal height, one link towards the root per non-root switch.
func TestMcastTreesValid(t *testing.T) {
	specs := []string{
		"pgft:2;4,4;1,2",
		"pgft:3;4,4,4;1,4,4;1,1,1", // full fat-tree
		"pgft:3;4,4,4;1,4,2;1,1,2", // pruned: fewer tops, parallel upper links
		"pgft:3;4,3,5;2,2,2;1,2,1", // two-port endpoints' leaves, parallel middle links
		"pgft:3;8,4,4;1,4,1;1,2,1", // pruned top: one top per column
		"fat2d:4,2",                // not a tree: rows and columns
	}
	for _, spec := range specs {
		g, h := mcGraph(t, spec)
		nodes := g.Nodes()
		var groups []McastGroup
		for i, size := range []int{1, 2, 3, 5, 8, len(nodes) / 2, len(nodes)} {
			gs, err := RandomGroups(nodes, 40, size, uint64(i))
			if err != nil {
				t.Fatal(err)
			}
			groups = append(groups, gs...)
		}
		r, c := GridDims2(len(nodes))
		gs, err := Grid2DGroups(nodes, r, c)
		if err != nil {
			t.Fatal(err)
		}
		groups = append(groups, gs...)
		for _, alg := range McastAlgorithms() {
			for _, fixed := range []bool{false, true} {
				res, err := RouteMulticast(h, groups, alg, McastOptions{FixedRoot: fixed})
				if err != nil {
					t.Fatalf("%s %s: %v", spec, alg, err)
				}
				efi := make([]int32, g.NumLinks())
				for i, tr := range res.Trees {
					if err := h.CheckTree(groups[i], tr); err != nil {
						t.Fatalf("%s %s fixed=%v group %d: %v", spec, alg, fixed, i, err)
					}
					for _, l := range tr.Links {
						efi[l]++
					}
				}
				if diff := cmp.Diff(efi, res.EFI); diff != "" {
					t.Fatalf("%s %s: EFI differs from the trees' links (-trees +result):\n%s", spec, alg, diff)
				}
			}
		}
	}
}

func mcWorkload(t testing.TB, g *topology.Graph, random, size int) []McastGroup {
	t.Helper()
	nodes := g.Nodes()
	r, c := GridDims2(len(nodes))
	groups, err := Grid2DGroups(nodes, r, c)
	if err != nil {
		t.Fatal(err)
	}
	a, b, cc := GridDims3(len(nodes))
	g3, err := Grid3DGroups(nodes, a, b, cc)
	if err != nil {
		t.Fatal(err)
	}
	rg, err := RandomGroups(nodes, random, size, 7)
	if err != nil {
		t.Fatal(err)
	}
	return append(append(groups, g3...), rg...)
}

// TestMcastFullFatTreeSameEFI: on a full fat-tree a leaf reaches a top switch by one shortest
// path only, so with the same root rotation the three algorithms build the same trees (the
// paper's observation).
func TestMcastFullFatTreeSameEFI(t *testing.T) {
	for _, spec := range []string{"pgft:3;4,4,4;1,4,4;1,1,1", "pgft:3;8,4,4;1,8,4;1,1,1", "pgft:2;8,16;1,8;1,1"} {
		g, h := mcGraph(t, spec)
		groups := mcWorkload(t, g, 500, 6)
		var efi []int
		for _, alg := range McastAlgorithms() {
			res, err := RouteMulticast(h, groups, alg, McastOptions{})
			if err != nil {
				t.Fatal(err)
			}
			efi = append(efi, res.MaxEFI)
		}
		if efi[0] != efi[1] || efi[0] != efi[2] {
			t.Errorf("%s: max EFI fulb %d, minhop %d, sssp %d: want equal", spec, efi[0], efi[1], efi[2])
		}
	}
}

// TestMcastPrunedFatTree: with several shortest paths between a leaf and the top, link rotation
// pays: FULB-MC below MINIHOP-MC and within 10% of SSSP-MC.
func TestMcastPrunedFatTree(t *testing.T) {
	for _, spec := range []string{"pgft:3;4,4,4;1,4,2;1,1,2", "pgft:3;8,4,4;1,4,1;1,2,4", "pgft:2;16,16;1,4;1,4"} {
		g, h := mcGraph(t, spec)
		groups := mcWorkload(t, g, 2000, 6)
		got := map[McastAlgorithm]*McastResult{}
		for _, alg := range McastAlgorithms() {
			res, err := RouteMulticast(h, groups, alg, McastOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got[alg] = res
		}
		f, m, s := got[McastFULB].MaxEFI, got[McastMinHop].MaxEFI, got[McastSSSP].MaxEFI
		t.Logf("%s: max EFI fulb %d, minhop %d, sssp %d; mean fulb %.2f minhop %.2f sssp %.2f", spec, f, m, s,
			got[McastFULB].MeanEFI, got[McastMinHop].MeanEFI, got[McastSSSP].MeanEFI)
		if f >= m {
			t.Errorf("%s: FULB-MC max EFI %d not below MINIHOP-MC's %d", spec, f, m)
		}
		if float64(f) > 1.1*float64(s) {
			t.Errorf("%s: FULB-MC max EFI %d more than 10%% above SSSP-MC's %d", spec, f, s)
		}
	}
}

func TestMcastBadGroups(t *testing.T) {
	g, h := mcGraph(t, "pgft:2;4,4;1,2")
	for _, c := range []struct {
		name   string
		groups []McastGroup
		alg    McastAlgorithm
		want   string
	}{
		{"empty", []McastGroup{{Name: "g0", Members: []topology.VertexID{1}}, {Name: "g1"}}, McastFULB, "group 1 (g1) is empty"},
		{"switch", []McastGroup{{Name: "g0", Members: []topology.VertexID{16}}}, McastFULB, "is a switch"},
		{"range", []McastGroup{{Name: "g0", Members: []topology.VertexID{1000}}}, McastSSSP, "not in"},
		{"algo", []McastGroup{{Name: "g0", Members: []topology.VertexID{1}}}, "bogus", "want fulb, minhop or sssp"},
	} {
		_, err := RouteMulticast(h, c.groups, c.alg, McastOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	_ = g
}

func TestMcastGroupGenerators(t *testing.T) {
	eps := make([]topology.VertexID, 24)
	for i := range eps {
		eps[i] = topology.VertexID(i)
	}
	if r, c := GridDims2(24); r != 4 || c != 6 {
		t.Errorf("GridDims2(24) = %d,%d", r, c)
	}
	if a, b, c := GridDims3(24); a*b*c != 24 || a != 2 || b != 3 || c != 4 {
		t.Errorf("GridDims3(24) = %d,%d,%d", a, b, c)
	}
	g2 := mustGroups(t, "Grid2DGroups")(Grid2DGroups(eps, 4, 6))
	if len(g2) != 10 || len(g2[0].Members) != 6 || len(g2[4].Members) != 4 || g2[5].Members[1] != 7 {
		t.Errorf("Grid2DGroups: %v", g2)
	}
	g3 := mustGroups(t, "Grid3DGroups")(Grid3DGroups(eps, 2, 3, 4))
	if len(g3) != 12+8+6 {
		t.Errorf("Grid3DGroups: %d groups", len(g3))
	}
	pl := mustGroups(t, "Grid3DPlaneGroups")(Grid3DPlaneGroups(eps, 2, 3, 4))
	if len(pl) != 9 || len(pl[0].Members) != 6 {
		t.Errorf("Grid3DPlaneGroups: %d groups", len(pl))
	}
	ld := mustGroups(t, "LeaderGroups")(LeaderGroups(eps, 4))
	// 6 groups of 4, then leaders 0,4,..,20 in 2 groups (4 and 2), then 1 group of 2.
	if len(ld) != 9 || cmp.Diff(ld[8].Members, []topology.VertexID{0, 16}) != "" {
		t.Errorf("LeaderGroups: %v", ld)
	}
	rg := mustGroups(t, "RandomGroups")(RandomGroups(eps, 50, 5, 3))
	rg2 := mustGroups(t, "RandomGroups again")(RandomGroups(eps, 50, 5, 3))
	// Two empty results would be equal too: the groups must be there before their sameness means
	// anything.
	if len(rg) != 50 {
		t.Fatalf("RandomGroups(50 groups of 5): %d groups", len(rg))
	}
	if diff := cmp.Diff(rg, rg2); diff != "" {
		t.Errorf("RandomGroups not deterministic: %s", diff)
	}
	if other := mustGroups(t, "RandomGroups seed 4")(RandomGroups(eps, 50, 5, 4)); cmp.Equal(rg, other) {
		t.Error("RandomGroups: seeds 3 and 4 drew the same groups")
	}
	for _, gr := range rg {
		if len(gr.Members) != 5 {
			t.Errorf("random group %s has %d members, want 5", gr.Name, len(gr.Members))
		}
		seen := map[topology.VertexID]bool{}
		for _, v := range gr.Members {
			if seen[v] {
				t.Fatalf("random group %s repeats %d", gr.Name, v)
			}
			seen[v] = true
		}
	}
	if _, err := RandomGroups(eps, 1, 25, 0); err == nil {
		t.Error("RandomGroups size > endpoints: no error")
	}
}

// mustGroups fails the test on a generator's error: mustGroups(t, "name")(Generator(...)).
func mustGroups(t *testing.T, name string) func([]McastGroup, error) []McastGroup {
	t.Helper()
	return func(gs []McastGroup, err error) []McastGroup {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return gs
	}
}

func TestRandomGroupsCeilings(t *testing.T) {
	eps := make([]topology.VertexID, 100)
	for _, c := range []struct{ count, size int }{{maxRandomGroups + 1, 1}, {maxRandomMembers/50 + 1, 50}, {-1, 4}, {3, 0}, {3, 101}} {
		if _, err := RandomGroups(eps, c.count, c.size, 1); err == nil {
			t.Errorf("RandomGroups(%d groups of %d): no error", c.count, c.size)
		}
	}
	if gs, err := RandomGroups(eps, 1000, 100, 1); err != nil || len(gs) != 1000 {
		t.Fatalf("RandomGroups(1000 groups of 100) = %d groups, %v", len(gs), err)
	}
}

func TestParseMcastAlgorithms(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want []McastAlgorithm
		err  string
	}{
		{"all", McastAlgorithms(), ""},
		{"sssp, fulb", []McastAlgorithm{McastSSSP, McastFULB}, ""},
		{"fulb,bogus", nil, `multicast algorithm "bogus": want fulb, minhop or sssp`},
	} {
		got, err := ParseMcastAlgorithms(tc.s)
		if !slices.Equal(got, tc.want) || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("ParseMcastAlgorithms(%q) = %v, %v; want %v, %q", tc.s, got, err, tc.want, tc.err)
		}
	}
}
