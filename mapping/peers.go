package mapping

import (
	"slices"

	"github.com/bootfabric/bootfabric/topology"
)

// PeerDistance says how far peer is from node in the fabric, smaller being closer. On a tree (every
// hierarchical machine) it is the level of their lowest common switch: 0 for the same board or leaf
// switch, 1 for the same supernode on the presets, and so on up to the core. On other graphs (PGFT,
// fat2d, ibnetdiscover fabrics) it is the number of hops between them. Distances of one kind are
// comparable with each other only, which is all PeerOrder needs: one graph is either a tree or not.
func PeerDistance(g *topology.Graph, node, peer topology.VertexID) int {
	if g.IsTree() {
		return treeDistance(g, node, peer, ancestors(g, node, nil))
	}
	return hops(g, node)[peer]
}

// PeerOrder returns peers sorted by PeerDistance from node, closest first, so that a node fetches
// an image over the fewest and least shared links: its board first, then its supernode, then the
// rest. Ties are broken by a hash of (node, peer): among the peers of one board each node gets its
// own order, so that load spreads instead of every node asking the same first peer, and the same
// inputs give the same order on every server and in the simulator. peers is not modified; node
// itself and vertices out of range are left out.
func PeerOrder(g *topology.Graph, node topology.VertexID, peers []topology.VertexID) []topology.VertexID {
	type ranked struct {
		v    topology.VertexID
		dist int
		tie  uint64
	}
	n := topology.VertexID(g.NumVertices())
	if node < 0 || node >= n {
		return nil
	}
	var dist func(topology.VertexID) int
	if g.IsTree() {
		anc := ancestors(g, node, nil)
		dist = func(p topology.VertexID) int { return treeDistance(g, node, p, anc) }
	} else {
		h := hops(g, node)
		dist = func(p topology.VertexID) int { return h[p] }
	}
	rs := make([]ranked, 0, len(peers))
	for _, p := range peers {
		if p == node || p < 0 || p >= n {
			continue
		}
		rs = append(rs, ranked{p, dist(p), tieHash(node, p)})
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		switch {
		case a.dist != b.dist:
			return a.dist - b.dist
		case a.tie != b.tie:
			if a.tie < b.tie {
				return -1
			}
			return 1
		}
		return int(a.v - b.v)
	})
	out := make([]topology.VertexID, len(rs))
	for i, r := range rs {
		out[i] = r.v
	}
	return out
}

// ancestors appends v and its ancestors in the tree, bottom-up.
func ancestors(g *topology.Graph, v topology.VertexID, buf []topology.VertexID) []topology.VertexID {
	buf = append(buf, v)
	for {
		p, _, ok := g.Parent(v)
		if !ok {
			return buf
		}
		buf = append(buf, p)
		v = p
	}
}

// treeDistance climbs from peer to the first of node's ancestors and returns that switch's level;
// an endpoint as the common ancestor (a peer hanging off the node itself) counts as -1, the closest.
func treeDistance(g *topology.Graph, node, peer topology.VertexID, anc []topology.VertexID) int {
	for v := peer; ; {
		if slices.Contains(anc, v) {
			if g.Kind(v) != topology.Switch {
				return -1
			}
			return g.Level(v)
		}
		p, _, ok := g.Parent(v)
		if !ok {
			return g.NumVertices() // not connected to node: last
		}
		v = p
	}
}

// hops returns the hop count from node to every vertex (breadth first), NumVertices for the
// unreachable ones so that they sort last.
func hops(g *topology.Graph, node topology.VertexID) []int {
	d := make([]int, g.NumVertices())
	for i := range d {
		d[i] = len(d)
	}
	d[node] = 0
	queue := []topology.VertexID{node}
	for i := 0; i < len(queue); i++ {
		v := queue[i]
		for _, l := range g.Links(v) {
			if w := g.Other(l, v); d[w] == len(d) {
				d[w] = d[v] + 1
				queue = append(queue, w)
			}
		}
	}
	return d
}

// tieHash mixes node and peer (splitmix64's finalizer): a fixed function, so that the order is the
// same everywhere, that still looks random across pairs.
func tieHash(node, peer topology.VertexID) uint64 {
	x := uint64(uint32(node))<<32 | uint64(uint32(peer))
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
