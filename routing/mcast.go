package routing

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/bootfabric/bootfabric/internal/heapq"
	"github.com/bootfabric/bootfabric/topology"
)

// McastAlgorithm names a multicast routing algorithm.
type McastAlgorithm string

// Multicast algorithms.
const (
	McastFULB   McastAlgorithm = "fulb"
	McastMinHop McastAlgorithm = "minhop"
	McastSSSP   McastAlgorithm = "sssp"
)

// McastAlgorithms lists the algorithms RouteMulticast knows.
func McastAlgorithms() []McastAlgorithm {
	return []McastAlgorithm{McastFULB, McastMinHop, McastSSSP}
}

// ParseMcastAlgorithm reads fulb, minhop or sssp.
func ParseMcastAlgorithm(s string) (McastAlgorithm, error) {
	for _, a := range McastAlgorithms() {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("multicast algorithm %q: want fulb, minhop or sssp", s)
}

// McastGroup is a multicast group: a name and its member endpoints.
type McastGroup struct {
	Name    string
	Members []topology.VertexID
}

// McastTree is one group's tree.
type McastTree struct {
	// Root is the root switch.
	Root topology.VertexID
	// Links are the tree's links: switch-to-switch links, then the members' links to their leaves.
	// Every switch of the tree but the root has exactly one link towards the root among them.
	Links []topology.LinkID
	// Switches are the tree's switches, the root first.
	Switches []topology.VertexID
	// Height is the largest number of links between the root and a member.
	Height int
}

// McastOptions tune RouteMulticast.
type McastOptions struct {
	// FixedRoot turns root rotation off for minhop and sssp: the first switch (lowest vertex ID) of
	// least eccentricity is the root, as in OpenSM. FULB-MC always rotates.
	FixedRoot bool
	// Workers bounds the parallelism of the hop tables and root search; 0 means GOMAXPROCS.
	Workers int
	// Progress, when set, is told how far RouteMulticast is, of twice the groups: each group's
	// root search, then each group's tree. It is called every few hundredth of the work and
	// possibly from several goroutines at once, for a progress bar on large sets of groups.
	Progress func(done, total int)
}

// McastResult is the outcome of routing a set of groups, in group order.
type McastResult struct {
	Algorithm McastAlgorithm
	Trees     []McastTree
	// EFI is the edge forwarding index of every link: the number of groups whose tree holds it.
	EFI []int32
	// MaxEFI and MeanEFI are over switch-to-switch links; the mean is over those some tree uses.
	MaxEFI  int
	MeanEFI float64
	// MaxHeight is the largest tree height; MeanHeight the mean over groups.
	MaxHeight  int
	MeanHeight float64
	// Seconds is the time spent building trees (root search included, hop tables not).
	Seconds float64
}

// unreachable marks switches that are not connected in a HopTable; keeping every distance below
// 0x80 lets the root search take bytewise maxima eight at a time.
const unreachable = 0x7f

// maxHopSwitches bounds the switches of a HopTable (its size is the square).
const maxHopSwitches = 16384

// HopTable holds the min-hop distances between all switches of a graph, the multicast
// algorithms' min-hop tables: the least number of hops from port j of a switch to a destination
// follows from the distance of the neighbour on j.
type HopTable struct {
	g      *topology.Graph
	sw     []topology.VertexID // switch index -> vertex
	swIdx  []int32             // vertex -> switch index, -1
	dist   []uint8             // S x S, row-major; unreachable beyond 126 hops
	words  []uint64            // the memory of dist, eight bytes at a time
	stride int                 // row length in bytes, a multiple of 8
	// adj: per switch index, its links to switches (in port order) and the neighbours' indices.
	adjStart []int32
	adjLink  []topology.LinkID
	adjNb    []int32
	// leaf: per vertex, the switch index an endpoint hangs on and its link there (-1: detached).
	leaf     []int32
	leafLink []topology.LinkID
	workers  int
}

// NewHopTable computes the switch-to-switch hop distances of g by one BFS per switch.
func NewHopTable(g *topology.Graph, workers int) (*HopTable, error) {
	h := &HopTable{g: g, workers: workers}
	if h.workers <= 0 {
		h.workers = runtime.GOMAXPROCS(0)
	}
	nv := g.NumVertices()
	h.swIdx = make([]int32, nv)
	h.leaf = make([]int32, nv)
	h.leafLink = make([]topology.LinkID, nv)
	for v := 0; v < nv; v++ {
		h.swIdx[v], h.leaf[v] = -1, -1
		if g.Kind(topology.VertexID(v)) == topology.Switch {
			h.swIdx[v] = int32(len(h.sw))
			h.sw = append(h.sw, topology.VertexID(v))
		}
	}
	S := len(h.sw)
	if S == 0 {
		return nil, fmt.Errorf("multicast: %s has no switches", g.Name)
	}
	if S > maxHopSwitches {
		return nil, fmt.Errorf("multicast: %s has %d switches, more than the %d the hop tables allow", g.Name, S, maxHopSwitches)
	}
	h.adjStart = make([]int32, S+1)
	for si, v := range h.sw {
		for _, l := range g.Links(v) {
			if w := g.Other(l, v); h.swIdx[w] >= 0 {
				h.adjLink = append(h.adjLink, l)
				h.adjNb = append(h.adjNb, h.swIdx[w])
			}
		}
		h.adjStart[si+1] = int32(len(h.adjLink))
	}
	for v := 0; v < nv; v++ {
		if h.swIdx[v] >= 0 {
			continue
		}
		for _, l := range g.Links(topology.VertexID(v)) {
			if w := g.Other(l, topology.VertexID(v)); h.swIdx[w] >= 0 {
				h.leaf[v], h.leafLink[v] = h.swIdx[w], l
				break
			}
		}
	}
	h.stride = (S + 7) &^ 7
	// dist is a byte view of words: roots takes row maxima eight bytes at a time (see roots).
	h.words = make([]uint64, S*h.stride/8)
	h.dist = unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(h.words))), len(h.words)*8)
	parallel(S, h.workers, func(i int) { h.bfs(int32(i)) })
	return h, nil
}

// bfs fills row src.
func (h *HopTable) bfs(src int32) {
	row := h.dist[int(src)*h.stride : int(src+1)*h.stride]
	for i := range row {
		row[i] = unreachable
	}
	row[src] = 0
	queue := make([]int32, 1, len(h.sw))
	queue[0] = src
	for i := 0; i < len(queue); i++ {
		u := queue[i]
		d := row[u] + 1
		if d == unreachable {
			break
		}
		for j := h.adjStart[u]; j < h.adjStart[u+1]; j++ {
			if w := h.adjNb[j]; row[w] == unreachable {
				row[w] = d
				queue = append(queue, w)
			}
		}
	}
}

// Graph returns the graph the table describes.
func (h *HopTable) Graph() *topology.Graph { return h.g }

// NumSwitches returns the number of switches.
func (h *HopTable) NumSwitches() int { return len(h.sw) }

// Hops returns the least number of hops between switches a and b, or -1 when they are not
// connected (or either is not a switch).
func (h *HopTable) Hops(a, b topology.VertexID) int {
	i, j := h.swIdx[a], h.swIdx[b]
	if i < 0 || j < 0 {
		return -1
	}
	d := h.dist[int(i)*h.stride+int(j)]
	if d == unreachable {
		return -1
	}
	return int(d)
}

// LeafOf returns the switch endpoint v hangs on and the link to it; ok is false for switches and
// detached endpoints.
func (h *HopTable) LeafOf(v topology.VertexID) (topology.VertexID, topology.LinkID, bool) {
	if v < 0 || int(v) >= len(h.leaf) || h.leaf[v] < 0 {
		return 0, 0, false
	}
	return h.sw[h.leaf[v]], h.leafLink[v], true
}

func (h *HopTable) d(a, b int32) uint8 { return h.dist[int(a)*h.stride+int(b)] }

// mcGroup is a checked group: its distinct leaves and the roots of least eccentricity.
type mcGroup struct {
	leaves []int32 // switch indices, ascending
	links  []topology.LinkID
	ecc    uint8
	roots  []int32 // switch indices of least eccentricity, ascending
}

// prepareGroups checks the groups and finds each one's candidate roots (in parallel: the search
// does not depend on the load).
func (h *HopTable) prepareGroups(groups []McastGroup, prog *counter) ([]mcGroup, error) {
	out := make([]mcGroup, len(groups))
	nv := topology.VertexID(h.g.NumVertices())
	for gi, grp := range groups {
		if len(grp.Members) == 0 {
			return nil, fmt.Errorf("multicast group %d (%s) is empty", gi, grp.Name)
		}
		m := &out[gi]
		for _, v := range grp.Members {
			if v < 0 || v >= nv {
				return nil, fmt.Errorf("multicast group %d (%s): vertex %d is not in %s", gi, grp.Name, v, h.g.Name)
			}
			if h.swIdx[v] >= 0 {
				return nil, fmt.Errorf("multicast group %d (%s): %s is a switch, not an endpoint", gi, grp.Name, h.g.VertexName(v))
			}
			if h.leaf[v] < 0 {
				return nil, fmt.Errorf("multicast group %d (%s): %s is not attached to a switch", gi, grp.Name, h.g.VertexName(v))
			}
			m.leaves = append(m.leaves, h.leaf[v])
			m.links = append(m.links, h.leafLink[v])
		}
		slices.Sort(m.leaves)
		m.leaves = slices.Compact(m.leaves)
		slices.Sort(m.links)
		m.links = slices.Compact(m.links)
	}
	errs := make([]error, len(groups))
	chunk := 64
	parallel((len(groups)+chunk-1)/chunk, h.workers, func(c int) {
		ecc := make([]uint64, h.stride/8)
		lo, hi := c*chunk, min(len(groups), (c+1)*chunk)
		for gi := lo; gi < hi; gi++ {
			errs[gi] = h.roots(&out[gi], ecc, groups[gi].Name, gi)
		}
		prog.add(hi - lo)
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// roots finds the switches of least eccentricity for m. The row maxima run eight bytes at a time
// on the uint64 words of the hop table, and the result is read back through a byte view of ecc
// (unsafe, but only a reinterpretation of memory the slices own). That pays: for the 10,416
// groups of the TaihuLight workload (2,624 switches) it took 158-177 ms of CPU per pass, against
// 228-246 ms with binary.LittleEndian loads and stores on a byte table and 194-212 ms with the
// bytes shifted out of the words, without unsafe; three runs of each, alternating, on the shared
// 2-core test machine:
//
//	go test -run '^$' -bench McastRootsByteView -benchtime 5x -count 3 ./routing
func (h *HopTable) roots(m *mcGroup, ecc []uint64, name string, gi int) error {
	clear(ecc)
	nw := h.stride / 8
	for _, l := range m.leaves {
		row := h.words[int(l)*nw : int(l+1)*nw]
		for w, x := range row {
			ecc[w] = swarMax(ecc[w], x)
		}
	}
	// The byte view of ecc keeps switch s at byte s whatever the host's byte order.
	eb := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(ecc))), len(ecc)*8)[:len(h.sw)]
	best := uint8(unreachable)
	for _, e := range eb {
		best = min(best, e)
	}
	if best == unreachable {
		return fmt.Errorf("multicast group %d (%s): its members are not connected", gi, name)
	}
	m.ecc = best
	for s, e := range eb {
		if e == best {
			m.roots = append(m.roots, int32(s))
		}
	}
	return nil
}

// swarMax returns the bytewise maximum of a and b, whose bytes are all below 0x80.
func swarMax(a, b uint64) uint64 {
	const hi = 0x8080808080808080
	// (a|0x80) - b never borrows across bytes, and keeps the top bit where a >= b.
	ge := ((a | hi) - b) & hi
	mask := (ge >> 7) * 0xff
	return a&mask | b&^mask
}

// mcState is the load the algorithms balance.
type mcState struct {
	h       *HopTable
	efi     []int32 // per link
	swLoad  []int32 // trees per switch index
	inTree  []int32 // per switch index: the group index +1 whose tree holds it
	path    []int32
	pathLnk []topology.LinkID
	fixed   bool
	// SSSP
	dij  []int64
	pred []int32 // adjacency position of the link to the predecessor
	done []int32
	// pq holds switches (Tie) by distance (Key): distances are whole numbers far below 2^53, so
	// float64 keys order them exactly, and ties go to the lower switch index as before.
	pq heapq.Heap[struct{}]
}

// RouteMulticast builds the trees of groups, in order, with algorithm alg on the hop table's graph.
//
// Each tree is rooted at a switch of least eccentricity (Chen et al., FULB-MC, 2022); MINIHOP-MC
// takes the first least-hop port, SSSP-MC runs Dijkstra with weight base + EFI, FULB-MC grows from
// the members over the least-loaded port. Roots rotate unless FixedRoot (the OpenSM originals).
func RouteMulticast(h *HopTable, groups []McastGroup, alg McastAlgorithm, opt McastOptions) (*McastResult, error) {
	if _, err := ParseMcastAlgorithm(string(alg)); err != nil {
		return nil, err
	}
	start := time.Now()
	prog := newCounter(opt.Progress, 2*len(groups))
	gs, err := h.prepareGroups(groups, prog)
	if err != nil {
		return nil, err
	}
	S := len(h.sw)
	st := &mcState{h: h, efi: make([]int32, h.g.NumLinks()), swLoad: make([]int32, S), inTree: make([]int32, S), fixed: opt.FixedRoot && alg != McastFULB}
	res := &McastResult{Algorithm: alg, Trees: make([]McastTree, len(groups))}
	for gi := range gs {
		m := &gs[gi]
		root := st.pickRoot(m)
		var t McastTree
		switch alg {
		case McastFULB:
			t = st.fulb(int32(gi), m, root)
		case McastMinHop:
			t = st.minhop(int32(gi), m, root)
		case McastSSSP:
			t = st.sssp(int32(gi), m, root)
		}
		for _, l := range m.links {
			t.Links = append(t.Links, l)
			st.efi[l]++
		}
		t.Height = int(m.ecc) + 1
		for _, s := range t.Switches {
			st.swLoad[h.swIdx[s]]++
		}
		res.Trees[gi] = t
		prog.done()
	}
	res.Seconds = time.Since(start).Seconds()
	res.EFI = st.efi
	res.summarise(h)
	return res, nil
}

func (r *McastResult) summarise(h *HopTable) {
	g := h.g
	used, sum := 0, 0
	for l, e := range r.EFI {
		lk := g.Link(topology.LinkID(l))
		if h.swIdx[lk.A] < 0 || h.swIdx[lk.B] < 0 || e == 0 {
			continue
		}
		used++
		sum += int(e)
		r.MaxEFI = max(r.MaxEFI, int(e))
	}
	if used > 0 {
		r.MeanEFI = float64(sum) / float64(used)
	}
	hs := 0
	for _, t := range r.Trees {
		r.MaxHeight = max(r.MaxHeight, t.Height)
		hs += t.Height
	}
	if len(r.Trees) > 0 {
		r.MeanHeight = float64(hs) / float64(len(r.Trees))
	}
}

// pickRoot applies root rotation: the candidate that the fewest trees cross, lowest index first.
func (st *mcState) pickRoot(m *mcGroup) int32 {
	if st.fixed {
		return m.roots[0]
	}
	best := m.roots[0]
	for _, s := range m.roots[1:] {
		if st.swLoad[s] < st.swLoad[best] {
			best = s
		}
	}
	return best
}

// join adds switch index s to tree gi.
func (st *mcState) join(gi int32, s int32, t *McastTree) {
	st.inTree[s] = gi + 1
	t.Switches = append(t.Switches, st.h.sw[s])
}

// fulb: bottom-up from each member leaf over the least-loaded least-hop port.
func (st *mcState) fulb(gi int32, m *mcGroup, root int32) McastTree {
	h := st.h
	t := McastTree{Root: h.sw[root]}
	st.join(gi, root, &t)
	rrow := h.dist[int(root)*h.stride:]
	for _, leaf := range m.leaves {
		u := leaf
		for st.inTree[u] != gi+1 {
			st.join(gi, u, &t)
			d := rrow[u]
			bestJ, bestE := int32(-1), int32(math.MaxInt32)
			for j := h.adjStart[u]; j < h.adjStart[u+1]; j++ {
				if rrow[h.adjNb[j]] == d-1 {
					if e := st.efi[h.adjLink[j]]; e < bestE {
						bestJ, bestE = j, e
					}
				}
			}
			l := h.adjLink[bestJ]
			st.efi[l]++
			t.Links = append(t.Links, l)
			u = h.adjNb[bestJ]
		}
	}
	return t
}

// minhop: top-down from the root, at each switch the first port one hop closer to the member's
// leaf; only the part of the path below the last switch already in the tree is added, so every
// switch keeps one link towards the root.
func (st *mcState) minhop(gi int32, m *mcGroup, root int32) McastTree {
	h := st.h
	t := McastTree{Root: h.sw[root]}
	st.join(gi, root, &t)
	for _, leaf := range m.leaves {
		lrow := h.dist[int(leaf)*h.stride:]
		st.path, st.pathLnk = st.path[:0], st.pathLnk[:0]
		u, last := root, 0
		st.path = append(st.path, u)
		for u != leaf {
			d := lrow[u]
			for j := h.adjStart[u]; j < h.adjStart[u+1]; j++ {
				if lrow[h.adjNb[j]] == d-1 {
					u = h.adjNb[j]
					st.path = append(st.path, u)
					st.pathLnk = append(st.pathLnk, h.adjLink[j])
					break
				}
			}
			if st.inTree[u] == gi+1 {
				last = len(st.path) - 1
			}
		}
		for k := last + 1; k < len(st.path); k++ {
			st.join(gi, st.path[k], &t)
			l := st.pathLnk[k-1]
			st.efi[l]++
			t.Links = append(t.Links, l)
		}
	}
	return t
}

// sssBase is the weight of a hop, far above any link's EFI, so that Dijkstra's paths stay shortest.
const sssBase = int64(1) << 32

// sssp: Dijkstra from the root over every switch, link weight base + EFI, then the branches to
// the members' leaves.
func (st *mcState) sssp(gi int32, m *mcGroup, root int32) McastTree {
	h := st.h
	S := len(h.sw)
	if st.dij == nil {
		st.dij = make([]int64, S)
		st.pred = make([]int32, S)
		st.done = make([]int32, S)
	}
	for i := range st.dij {
		st.dij[i], st.pred[i] = math.MaxInt64, -1
	}
	st.dij[root] = 0
	st.pq.Clear()
	st.pq.Push(heapq.Item[struct{}]{Key: 0, Tie: root})
	for st.pq.Len() > 0 {
		it := st.pq.Pop()
		u, d := it.Tie, int64(it.Key)
		if st.done[u] == gi+1 || d > st.dij[u] {
			continue
		}
		st.done[u] = gi + 1
		for j := h.adjStart[u]; j < h.adjStart[u+1]; j++ {
			w := h.adjNb[j]
			nd := d + sssBase + int64(st.efi[h.adjLink[j]])
			if nd < st.dij[w] {
				st.dij[w], st.pred[w] = nd, j
				st.pq.Push(heapq.Item[struct{}]{Key: float64(nd), Tie: w})
			}
		}
	}
	t := McastTree{Root: h.sw[root]}
	st.join(gi, root, &t)
	for _, leaf := range m.leaves {
		u := leaf
		for st.inTree[u] != gi+1 {
			st.join(gi, u, &t)
			j := st.pred[u]
			l := h.adjLink[j]
			st.efi[l]++
			t.Links = append(t.Links, l)
			u = st.owner(j)
		}
	}
	return t
}

// owner returns the switch index whose adjacency holds position j.
func (st *mcState) owner(j int32) int32 {
	s, _ := slices.BinarySearch(st.h.adjStart, j+1)
	return int32(s - 1)
}

// CheckTree verifies a tree of group grp: its links form a tree (connected, no cycle) holding
// every member, every switch but the root has exactly one link towards the root, and its height is
// the least any root could give. It returns the first problem found.
func (h *HopTable) CheckTree(grp McastGroup, t McastTree) error {
	adj, err := h.treeAdjacency(grp, t)
	if err != nil {
		return err
	}
	depth, err := h.treeDepths(grp, t, adj)
	if err != nil {
		return err
	}
	if err := h.checkUplinks(grp, t, adj, depth); err != nil {
		return err
	}
	height := 0
	for _, v := range grp.Members {
		d, ok := depth[v]
		if !ok {
			return fmt.Errorf("tree of %s: member %s is not in the tree", grp.Name, h.g.VertexName(v))
		}
		height = max(height, d)
	}
	if height != t.Height {
		return fmt.Errorf("tree of %s: height %d, reported %d", grp.Name, height, t.Height)
	}
	if best := h.leastHeight(grp); height != best {
		return fmt.Errorf("tree of %s: height %d, the least possible is %d", grp.Name, height, best)
	}
	return nil
}

// treeAdjacency returns the tree's links by vertex, refusing a link listed twice and a link count
// that cannot make a tree of the vertices they touch.
func (h *HopTable) treeAdjacency(grp McastGroup, t McastTree) (map[topology.VertexID][]topology.LinkID, error) {
	adj := map[topology.VertexID][]topology.LinkID{}
	seenLink := map[topology.LinkID]bool{}
	for _, l := range t.Links {
		if seenLink[l] {
			return nil, fmt.Errorf("tree of %s: link %d listed twice", grp.Name, l)
		}
		seenLink[l] = true
		lk := h.g.Link(l)
		adj[lk.A] = append(adj[lk.A], l)
		adj[lk.B] = append(adj[lk.B], l)
	}
	if len(adj) != len(t.Links)+1 && len(t.Links) > 0 {
		return nil, fmt.Errorf("tree of %s: %d links over %d vertices: not a tree", grp.Name, len(t.Links), len(adj))
	}
	return adj, nil
}

// treeDepths numbers the tree's vertices by breadth-first depth from the root (through switches
// only): a cycle would reach a vertex twice, and a vertex left unreached means the links are not
// connected.
func (h *HopTable) treeDepths(grp McastGroup, t McastTree, adj map[topology.VertexID][]topology.LinkID) (map[topology.VertexID]int, error) {
	g := h.g
	depth := map[topology.VertexID]int{t.Root: 0}
	queue := []topology.VertexID{t.Root}
	for i := 0; i < len(queue); i++ {
		v := queue[i]
		if g.Kind(v) != topology.Switch && v != t.Root {
			continue
		}
		for _, l := range adj[v] {
			w := g.Other(l, v)
			if d, ok := depth[w]; ok {
				if d != depth[v]-1 {
					return nil, fmt.Errorf("tree of %s: loop through %s", grp.Name, g.VertexName(w))
				}
				continue
			}
			depth[w] = depth[v] + 1
			queue = append(queue, w)
		}
	}
	if len(depth) != len(adj) && len(t.Links) > 0 {
		return nil, fmt.Errorf("tree of %s: not connected (%d of %d vertices reached from the root)", grp.Name, len(depth), len(adj))
	}
	return depth, nil
}

// checkUplinks checks that every switch of the tree but the root has one link towards the root.
func (h *HopTable) checkUplinks(grp McastGroup, t McastTree, adj map[topology.VertexID][]topology.LinkID, depth map[topology.VertexID]int) error {
	g := h.g
	for v := range adj {
		if v == t.Root || g.Kind(v) != topology.Switch {
			continue
		}
		up := 0
		for _, l := range adj[v] {
			if depth[g.Other(l, v)] == depth[v]-1 {
				up++
			}
		}
		if up != 1 {
			return fmt.Errorf("tree of %s: switch %s has %d links towards the root", grp.Name, g.VertexName(v), up)
		}
	}
	return nil
}

// leastHeight is the least height of a tree of grp over every root: the least eccentricity of
// a switch to the members' leaves, plus one for the last link.
func (h *HopTable) leastHeight(grp McastGroup) int {
	best := math.MaxInt
	for s := range h.sw {
		e := 0
		for _, v := range grp.Members {
			d := h.d(int32(s), h.leaf[v])
			if d == unreachable {
				e = math.MaxInt
				break
			}
			e = max(e, int(d)+1)
		}
		best = min(best, e)
	}
	return best
}

// ParseMcastAlgorithms reads a comma-separated list of algorithms, or "all" (McastAlgorithms).
func ParseMcastAlgorithms(s string) ([]McastAlgorithm, error) {
	if s == "all" {
		return McastAlgorithms(), nil
	}
	var out []McastAlgorithm
	for _, name := range strings.Split(s, ",") {
		a, err := ParseMcastAlgorithm(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
