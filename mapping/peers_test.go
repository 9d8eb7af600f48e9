package mapping

import (
	"slices"
	"testing"

	"github.com/bootfabric/bootfabric/topology"
)

// groups splits an order into runs of equal PeerDistance, each run sorted by vertex, so that a test
// states which peers come in which tier without fixing the hash's order inside a tier.
func groups(g *topology.Graph, node topology.VertexID, order []topology.VertexID) [][]topology.VertexID {
	var out [][]topology.VertexID
	last := -2
	for _, p := range order {
		if d := PeerDistance(g, node, p); d != last || len(out) == 0 {
			out = append(out, nil)
			last = d
		}
		out[len(out)-1] = append(out[len(out)-1], p)
	}
	for _, run := range out {
		slices.Sort(run)
	}
	return out
}

func TestPeerOrderTiers(t *testing.T) {
	tests := []struct {
		preset string
		node   int   // node index
		peers  []int // node indices
		want   [][]int
	}{
		// mini: index = supernode*16 + board*4 + node.
		{"mini", 0, []int{31, 1, 5, 17, 2, 0}, [][]int{{1, 2}, {5}, {17, 31}}},
		{"mini", 21, []int{0, 16, 22, 23, 20, 31, 8}, [][]int{{20, 22, 23}, {16, 31}, {0, 8}}},
		{"mini", 5, []int{9, 10}, [][]int{{9, 10}}},
		{"mini", 5, nil, nil},
		// sunway: index = ((cabinet*4 + supernode)*32 + board)*8 + node; cabinets are not switched, so
		// another supernode of the same cabinet is as far as another cabinet.
		{"sunway", 8, []int{40959, 9, 15, 16, 255, 256, 300, 1024, 14}, [][]int{{9, 14, 15}, {16, 255}, {256, 300, 1024, 40959}}},
	}
	for _, tc := range tests {
		g := preset(t, tc.preset)
		node := g.Nodes()[tc.node]
		var peers []topology.VertexID
		for _, i := range tc.peers {
			peers = append(peers, g.Nodes()[i])
		}
		before := slices.Clone(peers)
		got := groups(g, node, PeerOrder(g, node, peers))
		if !slices.Equal(before, peers) {
			t.Errorf("%s node %d: PeerOrder changed its input", tc.preset, tc.node)
		}
		var want [][]topology.VertexID
		for _, run := range tc.want {
			var vs []topology.VertexID
			for _, i := range run {
				vs = append(vs, g.Nodes()[i])
			}
			want = append(want, vs)
		}
		if !slices.EqualFunc(want, got, slices.Equal) {
			t.Errorf("%s node %d: tiers %v, want %v", tc.preset, tc.node, got, want)
		}
	}
}

// TestPeerOrderSpreads checks the tie-break: on each board every node asks a board peer first, and
// those first choices are spread over the board instead of all naming one node.
func TestPeerOrderSpreads(t *testing.T) {
	for _, name := range []string{"mini", "sunway"} {
		g := preset(t, name)
		h := g.Hierarchy()
		board, _ := h.Index("board")
		span := h.Span(board)
		for b := 0; b < 3; b++ {
			peers := slices.Clone(g.Nodes()[b*span : (b+1)*span])
			peers = append(peers, g.Nodes()[len(g.Nodes())-1]) // a far peer, never first
			firsts := map[topology.VertexID]int{}
			for _, node := range peers[:span] {
				order := PeerOrder(g, node, peers)
				if len(order) != span {
					t.Fatalf("%s: %d peers in the order, want %d", name, len(order), span)
				}
				if !slices.Equal(order, PeerOrder(g, node, peers)) {
					t.Fatalf("%s: two calls gave two orders", name)
				}
				if PeerDistance(g, node, order[0]) != 0 {
					t.Errorf("%s board %d: node %d's first peer %d is off its board", name, b, node, order[0])
				}
				firsts[order[0]]++
			}
			// With a uniform-looking hash, span/2 distinct first choices is a loose floor that
			// still fails when every node names the same (or the lowest-numbered) peer.
			if len(firsts) < span/2 {
				t.Errorf("%s board %d: only %d distinct first peers among %d nodes: %v", name, b, len(firsts), span, firsts)
			}
		}
	}
}

// TestPeerOrderNotTree checks graphs that are not trees: the order follows hop counts.
func TestPeerOrderNotTree(t *testing.T) {
	f, err := topology.ParseFat2D("fat2d:2,2")
	if err != nil {
		t.Fatal(err)
	}
	g, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	if g.IsTree() {
		t.Fatal("fat2d:2,2 is a tree")
	}
	node := g.Nodes()[0]
	order := PeerOrder(g, node, g.Nodes())
	if len(order) != len(g.Nodes())-1 {
		t.Fatalf("%d peers, want %d", len(order), len(g.Nodes())-1)
	}
	for i := 1; i < len(order); i++ {
		if PeerDistance(g, node, order[i-1]) > PeerDistance(g, node, order[i]) {
			t.Errorf("peer %d (%d hops) before peer %d (%d hops)", order[i-1], PeerDistance(g, node, order[i-1]), order[i], PeerDistance(g, node, order[i]))
		}
	}
	if PeerDistance(g, node, order[0]) != 2 {
		t.Errorf("closest peer %d hops away, want 2 (same leaf)", PeerDistance(g, node, order[0]))
	}
	if got := PeerOrder(g, -1, g.Nodes()); got != nil {
		t.Errorf("node out of range: %v, want nil", got)
	}
}
