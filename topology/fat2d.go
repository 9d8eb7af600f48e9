package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// Fat2D describes a 2-D fat-tree: N x N leaf switches on a grid, the leaves of each row joined by a
// row switch and those of each column by a column switch, K nodes on every leaf.
//
// Vertex layout: the N*N*K nodes (leaf by leaf), the leaves (index y*N+x for column x, row y), the
// N row switches, the N column switches. Leaf ports: 1..K nodes, K+1 its row switch, K+2 its column
// switch; row switch y has leaf (x, y) on port x+1, column switch x has leaf (x, y) on port y+1.
type Fat2D struct {
	N, K int
}

// ParseFat2D parses "fat2d:16" or "fat2d:16,8" (grid side, nodes per leaf; K defaults to N).
func ParseFat2D(spec string) (Fat2D, error) {
	s := strings.TrimPrefix(strings.TrimSpace(spec), "fat2d:")
	a, b, two := strings.Cut(s, ",")
	n, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil || n < 2 || n > 256 {
		return Fat2D{}, fmt.Errorf("fat2d %q: grid side %q must be an integer from 2 to 256", spec, a)
	}
	f := Fat2D{N: n, K: n}
	if two {
		k, err := strconv.Atoi(strings.TrimSpace(b))
		if err != nil || k < 1 || k > 256 {
			return Fat2D{}, fmt.Errorf("fat2d %q: nodes per leaf %q must be an integer from 1 to 256", spec, b)
		}
		f.K = k
	}
	return f, nil
}

// String returns the canonical spec, e.g. "fat2d:16,16".
func (f Fat2D) String() string { return fmt.Sprintf("fat2d:%d,%d", f.N, f.K) }

// NumNodes returns the number of nodes.
func (f Fat2D) NumNodes() int { return f.N * f.N * f.K }

// Leaf returns the vertex of the leaf switch in column x, row y.
func (f Fat2D) Leaf(x, y int) VertexID { return VertexID(f.NumNodes() + y*f.N + x) }

// LeafXY returns the grid position of leaf switch v, ok false when v is not a leaf.
func (f Fat2D) LeafXY(v VertexID) (x, y int, ok bool) {
	i := int(v) - f.NumNodes()
	if i < 0 || i >= f.N*f.N {
		return 0, 0, false
	}
	return i % f.N, i / f.N, true
}

// Row returns the vertex of the row switch of row y.
func (f Fat2D) Row(y int) VertexID { return VertexID(f.NumNodes() + f.N*f.N + y) }

// Col returns the vertex of the column switch of column x.
func (f Fat2D) Col(x int) VertexID { return VertexID(f.NumNodes() + f.N*f.N + f.N + x) }

// NodeLeaf returns the leaf switch of node index i.
func (f Fat2D) NodeLeaf(i int) VertexID { return VertexID(f.NumNodes() + i/f.K) }

// NumVertices returns the number of vertices.
func (f Fat2D) NumVertices() int { return f.NumNodes() + f.N*f.N + 2*f.N }

// Build builds the graph. Node links are segment "node", row links "row", column links "col";
// every link is 100 Gb/s with 0.1 us latency.
func (f Fat2D) Build() (*Graph, error) {
	if f.N < 2 || f.K < 1 || f.N > 256 || f.K > 256 {
		return nil, fmt.Errorf("fat2d: side %d or nodes per leaf %d out of range", f.N, f.K)
	}
	b := &Builder{Name: f.String()}
	nn := f.NumNodes()
	b.Grow(f.NumVertices(), nn+2*f.N*f.N)
	for i := 0; i < nn; i++ {
		b.AddVertex(Node, 0, "")
	}
	for i := 0; i < f.N*f.N; i++ {
		b.AddVertex(Switch, 0, "")
	}
	for i := 0; i < 2*f.N; i++ {
		b.AddVertex(Switch, 1, "")
	}
	for i := 0; i < nn; i++ {
		b.AddLink(VertexID(i), f.NodeLeaf(i), 100000, 0.1, "node")
	}
	for y := 0; y < f.N; y++ {
		for x := 0; x < f.N; x++ {
			b.AddLink(f.Leaf(x, y), f.Row(y), 100000, 0.1, "row")
			b.AddLink(f.Leaf(x, y), f.Col(x), 100000, 0.1, "col")
		}
	}
	b.SetNamer(func(v VertexID) string {
		i := int(v)
		switch {
		case i < nn:
			return "n" + strconv.Itoa(i)
		case i < nn+f.N*f.N:
			x, y, _ := f.LeafXY(v)
			return "leaf" + strconv.Itoa(x) + "-" + strconv.Itoa(y)
		case i < nn+f.N*f.N+f.N:
			return "row" + strconv.Itoa(i-nn-f.N*f.N)
		}
		return "col" + strconv.Itoa(i-nn-f.N*f.N-f.N)
	})
	return b.Build()
}

// Fat2DOf returns the 2-D fat-tree a graph was built from (with or without faults), when its name
// is a fat2d spec and its vertex count matches.
func Fat2DOf(g *Graph) (Fat2D, bool) {
	if !strings.HasPrefix(g.Name, "fat2d:") {
		return Fat2D{}, false
	}
	f, err := ParseFat2D(g.Name)
	if err != nil || f.NumVertices() != g.NumVertices() {
		return Fat2D{}, false
	}
	return f, true
}
