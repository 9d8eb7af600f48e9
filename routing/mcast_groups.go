package routing

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/bootfabric/bootfabric/topology"
)

// Group generators: the communicator patterns of the FULB-MC paper over a list of endpoints
// (usually the graph's nodes in position order, process i on endpoint i).

// GridDims2 returns the most nearly square rows x cols = n with rows <= cols.
func GridDims2(n int) (rows, cols int) {
	rows = 1
	for r := 1; r*r <= n; r++ {
		if n%r == 0 {
			rows = r
		}
	}
	return rows, n / rows
}

// GridDims3 returns the most nearly cubic a x b x c = n with a <= b <= c.
func GridDims3(n int) (a, b, c int) {
	a, b, c = 1, 1, n
	best := math.Inf(1)
	for x := 1; x*x*x <= n; x++ {
		if n%x != 0 {
			continue
		}
		y, z := GridDims2(n / x)
		if y < x {
			continue
		}
		if s := float64(z) / float64(x); s < best {
			best, a, b, c = s, x, y, z
		}
	}
	return a, b, c
}

// Grid2DGroups places endpoints on a rows x cols grid, row-major, and returns one group per row
// and one per column (the 2-D communicators of a grid-decomposed MPI job).
func Grid2DGroups(endpoints []topology.VertexID, rows, cols int) ([]McastGroup, error) {
	if rows < 1 || cols < 1 || rows*cols != len(endpoints) {
		return nil, fmt.Errorf("grid2d %dx%d: needs %d endpoints, have %d", rows, cols, rows*cols, len(endpoints))
	}
	out := make([]McastGroup, 0, rows+cols)
	for r := 0; r < rows; r++ {
		out = append(out, McastGroup{Name: "row" + strconv.Itoa(r), Members: append([]topology.VertexID(nil), endpoints[r*cols:(r+1)*cols]...)})
	}
	for c := 0; c < cols; c++ {
		m := make([]topology.VertexID, rows)
		for r := range m {
			m[r] = endpoints[r*cols+c]
		}
		out = append(out, McastGroup{Name: "col" + strconv.Itoa(c), Members: m})
	}
	return out, nil
}

// Grid3DGroups places endpoints on an a x b x c grid (x fastest) and returns one group per line
// along each axis: b·c groups of a, a·c of b and a·b of c.
func Grid3DGroups(endpoints []topology.VertexID, a, b, c int) ([]McastGroup, error) {
	if a < 1 || b < 1 || c < 1 || a*b*c != len(endpoints) {
		return nil, fmt.Errorf("grid3d %dx%dx%d: needs %d endpoints, have %d", a, b, c, a*b*c, len(endpoints))
	}
	at := func(x, y, z int) topology.VertexID { return endpoints[x+a*(y+b*z)] }
	var out []McastGroup
	for z := 0; z < c; z++ {
		for y := 0; y < b; y++ {
			m := make([]topology.VertexID, a)
			for x := range m {
				m[x] = at(x, y, z)
			}
			out = append(out, McastGroup{Name: fmt.Sprintf("x(%d,%d)", y, z), Members: m})
		}
	}
	for z := 0; z < c; z++ {
		for x := 0; x < a; x++ {
			m := make([]topology.VertexID, b)
			for y := range m {
				m[y] = at(x, y, z)
			}
			out = append(out, McastGroup{Name: fmt.Sprintf("y(%d,%d)", x, z), Members: m})
		}
	}
	for y := 0; y < b; y++ {
		for x := 0; x < a; x++ {
			m := make([]topology.VertexID, c)
			for z := range m {
				m[z] = at(x, y, z)
			}
			out = append(out, McastGroup{Name: fmt.Sprintf("z(%d,%d)", x, y), Members: m})
		}
	}
	return out, nil
}

// Grid3DPlaneGroups places endpoints on an a x b x c grid (x fastest) and returns one group per
// plane: c planes xy, b planes xz and a planes yz.
func Grid3DPlaneGroups(endpoints []topology.VertexID, a, b, c int) ([]McastGroup, error) {
	if a < 1 || b < 1 || c < 1 || a*b*c != len(endpoints) {
		return nil, fmt.Errorf("grid3d %dx%dx%d: needs %d endpoints, have %d", a, b, c, a*b*c, len(endpoints))
	}
	at := func(x, y, z int) topology.VertexID { return endpoints[x+a*(y+b*z)] }
	var out []McastGroup
	for z := 0; z < c; z++ {
		var m []topology.VertexID
		for y := 0; y < b; y++ {
			for x := 0; x < a; x++ {
				m = append(m, at(x, y, z))
			}
		}
		out = append(out, McastGroup{Name: "xy" + strconv.Itoa(z), Members: m})
	}
	for y := 0; y < b; y++ {
		var m []topology.VertexID
		for z := 0; z < c; z++ {
			for x := 0; x < a; x++ {
				m = append(m, at(x, y, z))
			}
		}
		out = append(out, McastGroup{Name: "xz" + strconv.Itoa(y), Members: m})
	}
	for x := 0; x < a; x++ {
		var m []topology.VertexID
		for z := 0; z < c; z++ {
			for y := 0; y < b; y++ {
				m = append(m, at(x, y, z))
			}
		}
		out = append(out, McastGroup{Name: "yz" + strconv.Itoa(x), Members: m})
	}
	return out, nil
}

// LeaderGroups builds hierarchical communicators: consecutive groups of fanout endpoints; the
// first of each group is its leader, and the leaders form the groups of the next level, until one
// group remains. Groups of one member are left out.
func LeaderGroups(endpoints []topology.VertexID, fanout int) ([]McastGroup, error) {
	if fanout < 2 {
		return nil, fmt.Errorf("leaders: fanout must be at least 2, got %d", fanout)
	}
	var out []McastGroup
	level := endpoints
	for l := 0; len(level) > 1; l++ {
		var next []topology.VertexID
		for i := 0; i < len(level); i += fanout {
			m := level[i:min(i+fanout, len(level))]
			next = append(next, m[0])
			if len(m) > 1 {
				out = append(out, McastGroup{Name: fmt.Sprintf("L%d.%d", l, i/fanout), Members: append([]topology.VertexID(nil), m...)})
			}
		}
		level = next
	}
	return out, nil
}

// Ceilings of RandomGroups: what a typo in a count would otherwise try to allocate (10 million
// groups of 16 is 640 MB of members).
const (
	maxRandomGroups  = 1_000_000
	maxRandomMembers = 50_000_000
)

// RandomGroups draws count groups of size distinct endpoints each, uniformly, from seed. At most
// 1,000,000 groups and 50,000,000 members in all.
func RandomGroups(endpoints []topology.VertexID, count, size int, seed uint64) ([]McastGroup, error) {
	if count < 0 || size < 1 || size > len(endpoints) {
		return nil, fmt.Errorf("random groups: size must be 1..%d and count non-negative, got %d groups of %d", len(endpoints), count, size)
	}
	if count > maxRandomGroups || count*size > maxRandomMembers {
		return nil, fmt.Errorf("random groups: %d groups of %d is more than %d groups or %d members in all", count, size, maxRandomGroups, maxRandomMembers)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d63617374))
	out := make([]McastGroup, count)
	// Partial Fisher-Yates over a scratch permutation; the swaps are undone after each group.
	perm := make([]int32, len(endpoints))
	for i := range perm {
		perm[i] = int32(i)
	}
	swaps := make([]int32, size)
	for gi := range out {
		m := make([]topology.VertexID, size)
		for k := 0; k < size; k++ {
			j := k + rng.IntN(len(perm)-k)
			swaps[k] = int32(j)
			perm[k], perm[j] = perm[j], perm[k]
			m[k] = endpoints[perm[k]]
		}
		for k := size - 1; k >= 0; k-- {
			j := swaps[k]
			perm[k], perm[j] = perm[j], perm[k]
		}
		out[gi] = McastGroup{Name: "rand" + strconv.Itoa(gi), Members: m}
	}
	return out, nil
}

// ServerGroups returns one group per boot server that serves a node of batch: the server and its
// nodes. serverOf is a mapping.Assignment's Server slice (node index -> server index); batch holds
// node indices (nil: every node).
func ServerGroups(g *topology.Graph, serverOf []int32, batch []int) ([]McastGroup, error) {
	if len(serverOf) != len(g.Nodes()) {
		return nil, fmt.Errorf("server groups: assignment has %d nodes, %s has %d", len(serverOf), g.Name, len(g.Nodes()))
	}
	if len(g.Servers()) == 0 {
		return nil, fmt.Errorf("server groups: %s has no boot servers", g.Name)
	}
	if batch == nil {
		batch = make([]int, len(serverOf))
		for i := range batch {
			batch[i] = i
		}
	}
	members := make([][]topology.VertexID, len(g.Servers()))
	for _, n := range batch {
		if n < 0 || n >= len(serverOf) {
			return nil, fmt.Errorf("server groups: node %d out of range", n)
		}
		s := serverOf[n]
		if s < 0 || int(s) >= len(g.Servers()) {
			return nil, fmt.Errorf("server groups: node %s has no boot server", g.VertexName(g.Nodes()[n]))
		}
		if members[s] == nil {
			members[s] = []topology.VertexID{g.Servers()[s]}
		}
		members[s] = append(members[s], g.Nodes()[n])
	}
	var out []McastGroup
	for s, m := range members {
		if m != nil {
			out = append(out, McastGroup{Name: g.VertexName(g.Servers()[s]), Members: m})
		}
	}
	return out, nil
}
