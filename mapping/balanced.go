package mapping

import (
	"fmt"
	"math"
	"slices"

	"github.com/bootfabric/bootfabric/topology"
)

// Balanced assigns the batch's nodes so that the largest sharers/capacity over all channels of
// their routes is as small as possible; the other nodes keep a board-cyclic assignment (or
// node-cyclic when the machine has no board level) so that the result is a complete mapping.
//
// On a tree whose servers reach every node through the root (every hierarchical machine), the
// node-side half of each route does not depend on the server, so only the server side is chosen:
// the optimum is found by water-filling the servers' uplink tree. Other graphs are assigned node
// by node, each to the server whose route keeps the bottleneck smallest.
func Balanced(g *topology.Graph, batch []int, absent []bool) (*Assignment, error) {
	h := g.Hierarchy()
	base := len(h.Levels()) - 1
	if l, ok := h.Index("board"); ok {
		base = l
	}
	a, err := BlockCyclic(h, base, len(g.Servers()), absent)
	if err != nil {
		return nil, err
	}
	a.Algo, a.Level = "balanced", -1
	ls, _ := live(len(g.Servers()), absent)
	nodes := slices.Clone(batch)
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	for _, n := range nodes {
		if n < 0 || n >= len(a.Server) {
			return nil, fmt.Errorf("balanced: node %d out of range", n)
		}
	}
	if t, ok := serverTree(g, ls); ok {
		quota := t.fill(len(nodes))
		k := 0
		for i, s := range ls {
			for q := 0; q < quota[i]; q++ {
				a.Server[nodes[k]] = s
				k++
			}
		}
		return a, nil
	}
	return a, greedy(g, a, nodes, ls)
}

// upTree is the tree formed by the live servers' routes up to the root: tree vertex 0 is the root,
// each other vertex stands for the channel from a switch or server towards the root.
type upTree struct {
	capacity []float64 // of the channel above the tree vertex (root: +Inf)
	children [][]int
	leaf     []int // tree vertex of each live server
}

// serverTree builds the up tree, or reports false when g is not a tree or some node's route to the
// root passes a vertex on a server's route (so the server choice would change node-side sharing).
func serverTree(g *topology.Graph, servers []int32) (*upTree, bool) {
	if !g.IsTree() {
		return nil, false
	}
	t := &upTree{capacity: []float64{math.Inf(1)}, children: [][]int{nil}}
	index := map[topology.VertexID]int{}
	onServerSide := map[topology.VertexID]bool{}
	var root topology.VertexID = -1
	for _, s := range servers {
		v := g.Servers()[s]
		var chain []topology.VertexID
		for {
			chain = append(chain, v)
			p, _, ok := g.Parent(v)
			if !ok {
				break
			}
			v = p
		}
		if root >= 0 && v != root {
			return nil, false
		}
		root = v
		// chain runs from the server up to the root; add tree vertices from the top down.
		parent := 0
		for i := len(chain) - 2; i >= 0; i-- {
			u := chain[i]
			onServerSide[u] = true
			id, ok := index[u]
			if !ok {
				_, l, _ := g.Parent(u)
				id = len(t.capacity)
				index[u] = id
				t.capacity = append(t.capacity, g.Link(l).CapacityMbps)
				t.children = append(t.children, nil)
				t.children[parent] = append(t.children[parent], id)
			}
			parent = id
		}
		t.leaf = append(t.leaf, parent)
	}
	for _, v := range g.Nodes() {
		p, _, ok := g.Parent(v)
		for ok && p != root {
			if onServerSide[p] {
				return nil, false
			}
			p, _, ok = g.Parent(p)
		}
	}
	return t, true
}

// fill returns how many of n units each live server gets so that the largest units/capacity over
// the tree's channels is smallest, spreading evenly among equals.
func (t *upTree) fill(n int) []int {
	most := make([]int, len(t.capacity))
	// The smallest ratio r at which the tree holds n units; ratios are units/capacity.
	lo, hi := 0.0, 1.0
	for t.holds(0, hi, most) < n {
		hi *= 2
	}
	for range 100 {
		mid := (lo + hi) / 2
		if t.holds(0, mid, most) >= n {
			hi = mid
		} else {
			lo = mid
		}
	}
	t.holds(0, hi, most)
	got := make([]int, len(t.capacity))
	t.share(0, n, most, got)
	quota := make([]int, len(t.leaf))
	for i, v := range t.leaf {
		quota[i] = got[v]
	}
	return quota
}

// holds returns the units the subtree at v holds with no channel above ratio r, recording each
// vertex's maximum in most.
func (t *upTree) holds(v int, r float64, most []int) int {
	limit := math.MaxInt
	if !math.IsInf(t.capacity[v], 1) {
		limit = int(math.Floor(r*t.capacity[v] + 1e-9))
	}
	sum := 0
	if len(t.children[v]) == 0 {
		sum = limit
	}
	for _, c := range t.children[v] {
		sum += t.holds(c, r, most)
		if sum > limit {
			sum = limit
		}
	}
	most[v] = min(sum, limit)
	return most[v]
}

// share gives n units (at most most[v]) to the subtree at v, splitting among the children so that
// the largest units/capacity among them is smallest.
func (t *upTree) share(v, n int, most, got []int) {
	got[v] = n
	kids := t.children[v]
	if len(kids) == 0 {
		return
	}
	alloc := func(r float64) int {
		sum := 0
		for _, c := range kids {
			sum += min(most[c], int(math.Floor(r*t.capacity[c]+1e-9)))
		}
		return sum
	}
	lo, hi := 0.0, 1.0
	for alloc(hi) < n {
		hi *= 2
		if hi > 1e18 {
			break
		}
	}
	for range 100 {
		mid := (lo + hi) / 2
		if alloc(mid) >= n {
			hi = mid
		} else {
			lo = mid
		}
	}
	part := make([]int, len(kids))
	sum := 0
	for i, c := range kids {
		part[i] = min(most[c], int(math.Floor(hi*t.capacity[c]+1e-9)))
		sum += part[i]
	}
	// Take the excess back from the children with the highest ratio, last ones first so that the
	// earlier servers keep the extra unit (a stable, readable layout).
	for sum > n {
		worst := -1
		for i := len(kids) - 1; i >= 0; i-- {
			if part[i] == 0 {
				continue
			}
			if worst < 0 || float64(part[i])/t.capacity[kids[i]] > float64(part[worst])/t.capacity[kids[worst]]+1e-12 {
				worst = i
			}
		}
		part[worst]--
		sum--
	}
	for i, c := range kids {
		t.share(c, part[i], most, got)
	}
}

// greedy assigns nodes one by one to the live server whose route keeps the largest
// sharers/capacity smallest (ties: fewer nodes, then lower index).
func greedy(g *topology.Graph, a *Assignment, nodes []int, servers []int32) error {
	r := g.TreeRouter()
	if r == nil {
		return fmt.Errorf("balanced: the graph is not a tree; give it a router")
	}
	sharers := make([]int32, g.NumChannels())
	load := make([]int, a.NumServers)
	routes := make([][]topology.Channel, len(servers))
	for _, n := range nodes {
		best, bestCost := -1, math.Inf(1)
		for i, s := range servers {
			route, err := r.Route(routes[i][:0], g.Servers()[s], g.Nodes()[n])
			if err != nil {
				return fmt.Errorf("balanced: %w", err)
			}
			routes[i] = route
			cost := 0.0
			for _, c := range route {
				cost = max(cost, float64(sharers[c]+1)/g.ChannelCapacity(c))
			}
			if best < 0 || cost < bestCost-1e-12 || (cost <= bestCost+1e-12 && load[s] < load[servers[best]]) {
				best, bestCost = i, cost
			}
		}
		for _, c := range routes[best] {
			sharers[c]++
		}
		a.Server[n] = servers[best]
		load[servers[best]]++
	}
	return nil
}
