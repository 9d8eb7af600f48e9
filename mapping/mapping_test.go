package mapping

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/topology"
	"github.com/google/go-cmp/cmp"
)

func build(t testing.TB, m *topology.Machine) *topology.Graph {
	t.Helper()
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func preset(t testing.TB, name string) *topology.Graph {
	t.Helper()
	m, _ := topology.Preset(name)
	return build(t, m)
}

func TestBlockCyclicSmall(t *testing.T) {
	g := preset(t, "mini") // 2 supernodes x 4 boards x 4 nodes, 4 servers
	h := g.Hierarchy()
	tests := []struct {
		algo   string
		failed []bool
		want   []int32 // server of node 0, 4, 8, ... (one per board)
	}{
		{"scda", nil, []int32{0, 0, 0, 0, 1, 1, 1, 1}},
		{"bcda", nil, []int32{0, 1, 2, 3, 0, 1, 2, 3}},
		{"bcda", []bool{false, true}, []int32{0, 2, 3, 0, 2, 3, 0, 2}},
		{"cyclic:supernode", []bool{true}, []int32{1, 1, 1, 1, 2, 2, 2, 2}},
	}
	for _, tc := range tests {
		algo, err := ParseAlgo(tc.algo, h)
		if err != nil {
			t.Fatal(err)
		}
		a, err := Assign(g, algo, nil, tc.failed)
		if err != nil {
			t.Fatal(err)
		}
		var got []int32
		for i := 0; i < len(a.Server); i += 4 {
			got = append(got, a.Server[i])
			for j := i; j < i+4; j++ {
				if a.Server[j] != a.Server[i] {
					t.Errorf("%s: board of node %d split", tc.algo, i)
				}
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s failed=%v (-want +got):\n%s", tc.algo, tc.failed, diff)
		}
	}
	// ncda: node i -> server i mod 4.
	algo, _ := ParseAlgo("ncda", h)
	a, _ := Assign(g, algo, nil, nil)
	for i, s := range a.Server {
		if int(s) != i%4 {
			t.Fatalf("ncda node %d -> %d", i, s)
		}
	}
}

func TestParseAlgoErrors(t *testing.T) {
	h := preset(t, "mini").Hierarchy() // no cabinet level
	for _, name := range []string{"", "xyz", "cyclic:cabinet", "SCDA"} {
		if _, err := ParseAlgo(name, h); err == nil {
			t.Errorf("ParseAlgo(%q) succeeded", name)
		}
	}
}

// TestProperties: every node has exactly one live server; block-cyclic loads differ by at most one
// block; failed servers serve nobody.
func TestProperties(t *testing.T) {
	g := preset(t, "sunway")
	h := g.Hierarchy()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 20; trial++ {
		failed := make([]bool, len(g.Servers()))
		for k := rng.IntN(10); k > 0; k-- {
			failed[rng.IntN(len(failed))] = true
		}
		for _, name := range []string{"scda", "bcda", "ncda", "cyclic:cabinet"} {
			algo, _ := ParseAlgo(name, h)
			a, err := Assign(g, algo, nil, failed)
			if err != nil {
				t.Fatal(err)
			}
			checkLive(t, a, failed)
			lo, hi := 1<<30, 0
			for s, n := range a.Load() {
				if failed[s] {
					continue
				}
				lo, hi = min(lo, n), max(hi, n)
			}
			if block := h.Span(algo.Level); hi-lo > block {
				t.Errorf("%s: loads %d..%d differ by more than a block of %d", name, lo, hi, block)
			}
		}
	}
}

func checkLive(t *testing.T, a *Assignment, failed []bool) {
	t.Helper()
	for i, s := range a.Server {
		if s < 0 || int(s) >= a.NumServers {
			t.Fatalf("%s: node %d has no server", a.Algo, i)
		}
		if int(s) < len(failed) && failed[s] {
			t.Fatalf("%s: node %d on failed server %d", a.Algo, i, s)
		}
	}
}

// bottleneck returns the smallest capacity/sharers over the batch's routes (the analytic model's
// batch bandwidth), computed here independently of fabricsim.
func bottleneck(t testing.TB, g *topology.Graph, a *Assignment, batch []int) float64 {
	r := g.TreeRouter()
	sharers := map[topology.Channel]int{}
	var route []topology.Channel
	for _, n := range batch {
		var err error
		route, err = r.Route(route[:0], g.Servers()[a.Server[n]], g.Nodes()[n])
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range route {
			sharers[c]++
		}
	}
	bw := 1e18
	for c, k := range sharers {
		bw = min(bw, g.ChannelCapacity(c)/float64(k))
	}
	return bw
}

func boards(g *topology.Graph, keep func(b int) bool) []int {
	h := g.Hierarchy()
	bl, _ := h.Index("board")
	var out []int
	for i := range g.Nodes() {
		if keep(h.Block(i, bl)) {
			out = append(out, i)
		}
	}
	return out
}

// TestBalancedVsBCDA: balanced is never worse than bcda, and strictly better on scattered batches
// such as a job scheduler leaves.
func TestBalancedVsBCDA(t *testing.T) {
	g := preset(t, "sunway")
	h := g.Hierarchy()
	bcdaAlgo, _ := ParseAlgo("bcda", h)
	bcda, _ := Assign(g, bcdaAlgo, nil, nil)
	rng := rand.New(rand.NewPCG(7, 7))
	quarter := map[int]bool{}
	for b := 0; b < h.Total(2); b++ {
		if rng.IntN(4) == 0 {
			quarter[b] = true
		}
	}
	tests := []struct {
		name     string
		batch    []int
		strictly bool
	}{
		{"every 7th board", boards(g, func(b int) bool { return b%7 == 0 }), true},
		{"random 25% of boards", boards(g, func(b int) bool { return quarter[b] }), true},
		{"every 3rd board of the first 10 cabinets", boards(g, func(b int) bool { return b%3 == 0 && b < 1280 }), true},
		{"first 20 boards", boards(g, func(b int) bool { return b < 20 }), false},
		{"first cabinet", boards(g, func(b int) bool { return b < 128 }), false},
		{"whole machine", boards(g, func(int) bool { return true }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bal, err := Balanced(g, tc.batch, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkLive(t, bal, nil)
			b, s := bottleneck(t, g, bcda, tc.batch), bottleneck(t, g, bal, tc.batch)
			t.Logf("bcda %.3f Mb/s, balanced %.3f Mb/s", b, s)
			if s < b-1e-9 {
				t.Errorf("balanced %.4f Mb/s worse than bcda %.4f", s, b)
			}
			if tc.strictly && s <= b+1e-9 {
				t.Errorf("balanced %.4f Mb/s not better than bcda %.4f on a scattered batch", s, b)
			}
		})
	}
}

// TestBalancedRandom: on random batches and failures, balanced is never worse than bcda.
func TestBalancedRandom(t *testing.T) {
	g := preset(t, "mini")
	h := g.Hierarchy()
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 300; trial++ {
		var failed []bool
		if rng.IntN(3) == 0 {
			failed = make([]bool, 4)
			failed[rng.IntN(4)] = true
		}
		var batch []int
		for i := range g.Nodes() {
			if rng.IntN(3) == 0 {
				batch = append(batch, i)
			}
		}
		if len(batch) == 0 {
			continue
		}
		algo, _ := ParseAlgo("bcda", h)
		bcda, _ := Assign(g, algo, nil, failed)
		bal, err := Balanced(g, batch, failed)
		if err != nil {
			t.Fatal(err)
		}
		checkLive(t, bal, failed)
		if b, s := bottleneck(t, g, bcda, batch), bottleneck(t, g, bal, batch); s < b-1e-9 {
			t.Fatalf("trial %d: balanced %.4f worse than bcda %.4f", trial, s, b)
		}
	}
}

// TestBalancedHeterogeneous: a server with a faster NIC gets proportionally more nodes, which the
// water-filling must find; the greedy fallback agrees on the bottleneck.
func TestBalancedHeterogeneous(t *testing.T) {
	m, _ := topology.Preset("mini")
	g := build(t, m)
	batch := make([]int, len(g.Nodes()))
	for i := range batch {
		batch[i] = i
	}
	bal, err := Balanced(g, batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	gr := &Assignment{Server: make([]int32, len(batch)), NumServers: 4}
	ls, _ := live(4, nil)
	if err := greedy(g, gr, batch, ls); err != nil {
		t.Fatal(err)
	}
	if a, b := bottleneck(t, g, bal, batch), bottleneck(t, g, gr, batch); a < b-1e-9 {
		t.Errorf("water-filling %.4f worse than greedy %.4f", a, b)
	}
	if diff := cmp.Diff([]int{8, 8, 8, 8}, bal.Load()); diff != "" {
		t.Errorf("loads (-want +got):\n%s", diff)
	}
}

func TestRemap(t *testing.T) {
	g := preset(t, "sunway")
	h := g.Hierarchy()
	algo, _ := ParseAlgo("bcda", h)
	a, _ := Assign(g, algo, nil, nil)
	failed := make([]bool, 160)
	failed[3], failed[77] = true, true
	b, moved, err := Remap(a, h, failed)
	if err != nil {
		t.Fatal(err)
	}
	checkLive(t, b, failed)
	load := a.Load()
	if want := load[3] + load[77]; moved != want {
		t.Errorf("moved %d nodes, want %d (the failed servers' nodes)", moved, want)
	}
	changed := 0
	for i := range a.Server {
		if a.Server[i] != b.Server[i] {
			changed++
			if !failed[a.Server[i]] {
				t.Fatalf("node %d moved off live server %d", i, a.Server[i])
			}
		}
	}
	if changed != moved {
		t.Errorf("%d nodes changed server, Remap said %d", changed, moved)
	}
	// Boards stay whole, and loads stay within one board.
	for i := 0; i < len(b.Server); i += 8 {
		for j := i; j < i+8; j++ {
			if b.Server[j] != b.Server[i] {
				t.Fatalf("board at node %d split by remap", i)
			}
		}
	}
	lo, hi := 1<<30, 0
	for s, n := range b.Load() {
		if !failed[s] {
			lo, hi = min(lo, n), max(hi, n)
		}
	}
	if hi-lo > 8 {
		t.Errorf("loads after remap %d..%d differ by more than a board", lo, hi)
	}
	// Remapping with nothing new failed moves nothing.
	if _, moved, _ := Remap(b, h, failed); moved != 0 {
		t.Errorf("second remap moved %d", moved)
	}
	if _, _, err := Remap(a, h, make160(true)); err == nil {
		t.Error("remap with every server failed succeeded")
	}
}

func make160(v bool) []bool {
	out := make([]bool, 160)
	for i := range out {
		out[i] = v
	}
	return out
}

// perBlock returns the server of the first node of every block of span nodes.
func perBlock(a *Assignment, span int) []int32 {
	var out []int32
	for i := 0; i < len(a.Server); i += span {
		out = append(out, a.Server[i])
	}
	return out
}

// TestRemapTieBreak: a moved block goes to the least-loaded survivor farthest (cyclically) from the
// dead server, lowest index on ties. The old tie-break (lowest index) put board 0 of a dead bs0 on
// bs1, next to board 1, which halved a 20-board batch's bandwidth (issue 12).
func TestRemapTieBreak(t *testing.T) {
	tests := []struct {
		machine, algo string
		dead          []int
		blocks        []int   // blocks to look at
		want          []int32 // their servers after the remap
	}{
		// mini, 4 servers, bcda: server 1 held boards 1 and 5. Board 1: all equally loaded, bs3 is
		// 2 away from bs1, bs0 and bs2 only 1. Board 5: bs3 now has more; bs0 and bs2 tie, lowest wins.
		{"mini", "bcda", []int{1}, []int{0, 1, 2, 3, 4, 5, 6, 7}, []int32{0, 3, 2, 3, 0, 0, 2, 3}},
		// mini, scda: supernode 0 of dead bs0 goes to bs2, the farthest.
		{"mini", "scda", []int{0}, []int{0, 1}, []int32{2, 1}},
		// sunway, 160 servers, bcda: bs0 held boards 0, 160, 320, ...: they go to bs80, then bs79 and
		// bs81 (both 79 away, lowest first), then bs81, bs78, ...
		{"sunway", "bcda", []int{0}, []int{0, 1, 160, 320, 480, 640}, []int32{80, 1, 79, 81, 78, 82}},
		// Two dead: the blocks are visited in node order; bs3's first block goes 80 away (bs83), bs77's
		// first goes to bs157.
		{"sunway", "bcda", []int{3, 77}, []int{3, 77, 163, 237}, []int32{83, 157, 82, 156}},
	}
	for _, tc := range tests {
		g := preset(t, tc.machine)
		h := g.Hierarchy()
		algo, _ := ParseAlgo(tc.algo, h)
		a, err := Assign(g, algo, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		failed := make([]bool, len(g.Servers()))
		for _, s := range tc.dead {
			failed[s] = true
		}
		b, _, err := Remap(a, h, failed)
		if err != nil {
			t.Fatal(err)
		}
		all := perBlock(b, h.Span(algo.Level))
		var got []int32
		for _, blk := range tc.blocks {
			got = append(got, all[blk])
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %s dead %v: servers of blocks %v (-want +got):\n%s", tc.machine, tc.algo, tc.dead, tc.blocks, diff)
		}
	}
}

func servers(n int, list ...int) []bool {
	out := make([]bool, n)
	for _, s := range list {
		out[s] = true
	}
	return out
}

// TestOwners: absent servers are dealt around, dead servers' blocks move; the example keeps
// its bandwidth under both rules.
func TestOwners(t *testing.T) {
	g := preset(t, "sunway")
	h := g.Hierarchy()
	first20 := boards(g, func(b int) bool { return b < 20 })
	firstCabinet := boards(g, func(b int) bool { return b < 128 })
	tests := []struct {
		name         string
		algo         string
		absent, dead []int
		batch        []int
		mbps         float64 // the batch's bottleneck
		moved        int
		board0       int32 // server of board 0
	}{
		{"no failure", "bcda", nil, nil, first20, 125, 0, 0},
		{"bs0 absent: dealt around", "bcda", []int{0}, nil, first20, 125, 0, 1},
		{"bs0 dead: board 0 to bs80", "bcda", nil, []int{0}, first20, 125, 256, 80},
		{"bs0 absent and dead: absent wins", "bcda", []int{0}, []int{0}, first20, 125, 0, 1},
		{"bs0 absent, bs1 dead (33 boards: 5120 over 159)", "bcda", []int{0}, []int{1}, first20, 125, 264, 81},
		{"scda, bs0 dead, one cabinet", "scda", nil, []int{0}, firstCabinet, 3.90625, 256, 80},
		{"scda, bs0 absent, one cabinet", "scda", []int{0}, nil, firstCabinet, 3.90625, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			algo, _ := ParseAlgo(tc.algo, h)
			absent, dead := servers(160, tc.absent...), servers(160, tc.dead...)
			a, moved, err := Owners(h, algo, 160, absent, dead)
			if err != nil {
				t.Fatal(err)
			}
			down, _ := union(160, absent, dead)
			checkLive(t, a, down)
			if a.Algo != tc.algo {
				t.Errorf("algo %q", a.Algo)
			}
			// Owners is exactly Remap(BlockCyclic(absent), absent OR dead).
			base, _ := BlockCyclic(h, algo.Level, 160, absent)
			want, wantMoved, _ := Remap(base, h, down)
			if diff := cmp.Diff(want.Server, a.Server); diff != "" || moved != wantMoved {
				t.Errorf("not Remap(BlockCyclic): moved %d, want %d; (-want +got):\n%s", moved, wantMoved, diff)
			}
			if moved != tc.moved {
				t.Errorf("moved %d nodes, want %d", moved, tc.moved)
			}
			if got := a.Server[0]; got != tc.board0 {
				t.Errorf("board 0 on bs%d, want bs%d", got, tc.board0)
			}
			if got := bottleneck(t, g, a, tc.batch); math.Abs(got-tc.mbps) > 1e-9 {
				t.Errorf("batch bandwidth %.4f Mb/s, want %.4f", got, tc.mbps)
			}
		})
	}
}

func TestOwnersErrors(t *testing.T) {
	h := preset(t, "mini").Hierarchy()
	bcda, _ := ParseAlgo("bcda", h)
	balanced, _ := ParseAlgo("balanced", h)
	tests := []struct {
		name         string
		algo         Algo
		absent, dead []bool
		want         string
	}{
		{"balanced", balanced, nil, nil, "needs a block-cyclic mapping"},
		{"all absent", bcda, servers(4, 0, 1, 2, 3), nil, "all 4 boot servers failed"},
		{"all dead", bcda, nil, servers(4, 0, 1, 2, 3), "all 4 boot servers failed"},
		{"absent and dead cover all", bcda, servers(4, 0, 1), servers(4, 2, 3), "all 4 boot servers failed"},
		{"dead list too long", bcda, nil, servers(5, 4), "dead list has 5 entries for 4 servers"},
	}
	for _, tc := range tests {
		_, _, err := Owners(h, tc.algo, 4, tc.absent, tc.dead)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestAssignOwnersBalanced: balanced with dead servers is balanced over the non-absent servers,
// then the dead servers' nodes moved by Remap.
func TestAssignOwnersBalanced(t *testing.T) {
	g := preset(t, "mini")
	h := g.Hierarchy()
	algo, _ := ParseAlgo("balanced", h)
	batch := boards(g, func(b int) bool { return b < 3 })
	absent, dead := servers(4, 2), servers(4, 0)
	a, moved, err := AssignOwners(g, algo, batch, absent, dead)
	if err != nil {
		t.Fatal(err)
	}
	bal, _ := Balanced(g, batch, absent)
	want, wantMoved, _ := Remap(bal, h, servers(4, 0, 2))
	if diff := cmp.Diff(want, a); diff != "" || moved != wantMoved || moved == 0 {
		t.Errorf("moved %d (want %d, > 0); assignment (-want +got):\n%s", moved, wantMoved, diff)
	}
	checkLive(t, a, servers(4, 0, 2))
	// Block-cyclic algorithms go through Owners.
	bcda, _ := ParseAlgo("bcda", h)
	got, _, _ := AssignOwners(g, bcda, batch, absent, dead)
	own, _, _ := Owners(h, bcda, 4, absent, dead)
	if diff := cmp.Diff(own, got); diff != "" {
		t.Errorf("bcda: AssignOwners != Owners (-want +got):\n%s", diff)
	}
}

func TestParseAlgos(t *testing.T) {
	mini := preset(t, "mini").Hierarchy()
	flat, err := topology.Flat([]string{"a", "b"}, 1).Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    string
		h    *topology.Hierarchy
		want string // names, comma-separated
		err  string
	}{
		{"all", mini, "scda,bcda,ncda,balanced", ""},
		{"all", flat.Hierarchy(), "ncda,balanced", ""}, // a flat machine has no supernodes or boards
		{"bcda, cyclic:board", mini, "bcda,cyclic:board", ""},
		{"bcda,xyz", mini, "", `unknown algorithm "xyz"`},
	} {
		got, err := ParseAlgos(tc.s, tc.h)
		var names []string
		for _, a := range got {
			names = append(names, a.Name)
		}
		if strings.Join(names, ",") != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseAlgos(%q) = %v, %v; want %s, %q", tc.s, names, err, tc.want, tc.err)
		}
	}
}

func TestParseServerSet(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want []bool
		err  string
	}{
		{"", nil, ""},
		{"1, bs3", []bool{false, true, false, true}, ""},
		{"bs4", nil, `"bs4" is not a server (0-3 or bs0-bs3)`},
		{"-1", nil, `"-1" is not a server`},
		{"x", nil, `"x" is not a server`},
	} {
		got, err := ParseServerSet(tc.s, 4)
		if !slices.Equal(got, tc.want) || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseServerSet(%q) = %v, %v; want %v, %q", tc.s, got, err, tc.want, tc.err)
		}
	}
}
