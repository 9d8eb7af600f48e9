package routing

import (
	"fmt"

	"github.com/bootfabric/bootfabric/topology"
)

// VTFTR routes a 2-D fat-tree (topology.Fat2D) around failed leaf switches (Liu et al., 2022).
//
// The base is dimension-ordered XY routing: along the source's row to the leaf in the destination's
// column, then along that column. When that intermediate leaf has failed, YX (column first, then
// row: no extra hop); when both intermediates have failed, a misroute along the source row to a
// leaf of a fault-free column, down that column to the destination row, then along the row
// (row-column-row: two extra hops). Columns with a failed leaf are never chosen for misroutes, so a
// detour never meets a known fault.
//
// Tables are destination-based, so the choice is made where it is taken: a leaf picks XY, YX or
// the misroute; a row switch whose XY target has failed sends the packet to the misroute column.
// Virtual channel 1 is the fault-tolerant channel: the row hops in the destination's row (the
// only hops that can follow a column-to-row turn) use it for destinations whose column holds a
// failed leaf; everything else uses VC 0. VC 0 then only has row-to-column turns and VC 1 only row
// hops, so both channel-dependency graphs are acyclic.
type VTFTR struct{}

// Name returns "vtftr".
func (VTFTR) Name() string { return "vtftr" }

// Compute builds the tables. Failed leaves are leaves without links; other faults are refused.
func (VTFTR) Compute(g *topology.Graph) (*Tables, error) {
	f, ok := topology.Fat2DOf(g)
	if !ok {
		return nil, fmt.Errorf("vtftr: %q is not a 2-D fat-tree (fat2d:N)", g.Name)
	}
	v, err := newVTFTRFabric(g, f)
	if err != nil {
		return nil, err
	}
	t := newTables(g, "vtftr")
	v.t = t
	t.healthy = make([]bool, len(t.dests))
	for d, ep := range t.dests {
		xd, yd, _ := f.LeafXY(f.NodeLeaf(int(ep)))
		if v.failed[yd*v.n+xd] || t.leafOf[d] < 0 {
			continue
		}
		t.healthy[d] = true
		// The fault-tolerant channel: row hops in the destination's row when its column holds a
		// failed leaf (the only hops that can follow a column-to-row turn of a misroute).
		vcRow := 0
		if v.colFaulty[xd] {
			vcRow = 1
		}
		v.routeLeaves(d, xd, yd, vcRow)
		v.routeRows(d, xd, yd, vcRow)
		v.routeColumns(d, yd)
	}
	return t, nil
}

// vtftrFabric is a 2-D fat-tree's failed leaves and the ports VTFTR uses.
type vtftrFabric struct {
	g         *topology.Graph
	f         topology.Fat2D
	t         *Tables
	n         int
	failed    []bool // leaf (x, y) at y*n+x
	colFaulty []bool
	goodCols  []int   // columns without a failed leaf, for misroutes
	rowPort   [][]int // row switch y -> port to leaf x
	colPort   [][]int // column switch x -> port to leaf y
	leafRow   []int   // leaf (x, y) -> port to its row switch
	leafCol   []int   // leaf (x, y) -> port to its column switch
}

// newVTFTRFabric finds the failed leaves, refuses other faults and maps the ports.
func newVTFTRFabric(g *topology.Graph, f topology.Fat2D) (*vtftrFabric, error) {
	n := f.N
	v := &vtftrFabric{g: g, f: f, n: n, failed: make([]bool, n*n), colFaulty: make([]bool, n)}
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			leaf := f.Leaf(x, y)
			switch {
			case len(g.Links(leaf)) == 0:
				v.failed[y*n+x] = true
				v.colFaulty[x] = true
			case v.portTo(leaf, f.Row(y)) == NoPort || v.portTo(leaf, f.Col(x)) == NoPort:
				return nil, fmt.Errorf("vtftr: leaf %s lost a row or column link; vtftr handles failed leaf switches only", g.VertexName(leaf))
			}
		}
	}
	for i := 0; i < n; i++ {
		if len(g.Links(f.Row(i))) == 0 || len(g.Links(f.Col(i))) == 0 {
			return nil, fmt.Errorf("vtftr: row or column switch %d failed; vtftr handles failed leaf switches only", i)
		}
	}
	for x := 0; x < n; x++ {
		if !v.colFaulty[x] {
			v.goodCols = append(v.goodCols, x)
		}
	}
	v.mapPorts()
	return v, nil
}

// mapPorts fills the port tables.
func (v *vtftrFabric) mapPorts() {
	f, n := v.f, v.n
	v.rowPort, v.colPort = make([][]int, n), make([][]int, n)
	for i := 0; i < n; i++ {
		v.rowPort[i], v.colPort[i] = make([]int, n), make([]int, n)
		for j := 0; j < n; j++ {
			v.rowPort[i][j] = v.portTo(f.Row(i), f.Leaf(j, i))
			v.colPort[i][j] = v.portTo(f.Col(i), f.Leaf(i, j))
		}
	}
	v.leafRow, v.leafCol = make([]int, n*n), make([]int, n*n)
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			v.leafRow[y*n+x] = v.portTo(f.Leaf(x, y), f.Row(y))
			v.leafCol[y*n+x] = v.portTo(f.Leaf(x, y), f.Col(x))
		}
	}
}

// portTo returns the port of a to b (faults renumber ports, so links are scanned).
func (v *vtftrFabric) portTo(a, b topology.VertexID) int {
	for p, l := range v.g.Links(a) {
		if v.g.Other(l, a) == b {
			return p + 1
		}
	}
	return NoPort
}

// up reports whether leaf (x, y) works.
func (v *vtftrFabric) up(x, y int) bool { return !v.failed[y*v.n+x] }

// misrouteCol picks the column of a misroute from row y to row yd for destination d: a fault-free
// column (spread by d), else any column whose two leaves are up, else -1.
func (v *vtftrFabric) misrouteCol(y, yd, d int) int {
	if len(v.goodCols) > 0 {
		return v.goodCols[d%len(v.goodCols)]
	}
	for i := 0; i < v.n; i++ {
		x := (d + i) % v.n
		if v.up(x, y) && v.up(x, yd) {
			return x
		}
	}
	return -1
}

// routeLeaves sets every working leaf's port to destination d on leaf (xd, yd): XY when the
// leaf in the source row and destination column works, else YX when the one in the destination
// row and source column works, else the first hop of a row-column-row misroute.
func (v *vtftrFabric) routeLeaves(d, xd, yd, vcRow int) {
	t := v.t
	for y := 0; y < v.n; y++ {
		for x := 0; x < v.n; x++ {
			if v.failed[y*v.n+x] {
				continue
			}
			s := int(t.swIdx[v.f.Leaf(x, y)])
			rp, cp := v.leafRow[y*v.n+x], v.leafCol[y*v.n+x]
			switch {
			case x == xd && y == yd:
				t.set(s, d, int(t.attach[d]))
			case y == yd:
				t.set(s, d, rp)
				t.setVC(s, d, vcRow)
			case x == xd:
				t.set(s, d, cp)
			case v.up(xd, y):
				t.set(s, d, rp) // XY
			case v.up(x, yd):
				t.set(s, d, cp) // YX
			default:
				if v.misrouteCol(y, yd, d) >= 0 {
					t.set(s, d, rp) // misroute, continued by the row switch
				}
			}
		}
	}
}

// routeRows sets the row switches' ports: to the destination column, or to the misroute column
// when the leaf there has failed.
func (v *vtftrFabric) routeRows(d, xd, yd, vcRow int) {
	t := v.t
	for y := 0; y < v.n; y++ {
		s := int(t.swIdx[v.f.Row(y)])
		switch {
		case y == yd:
			t.set(s, d, v.rowPort[y][xd])
			t.setVC(s, d, vcRow)
		case v.up(xd, y):
			t.set(s, d, v.rowPort[y][xd])
		default:
			if xm := v.misrouteCol(y, yd, d); xm >= 0 {
				t.set(s, d, v.rowPort[y][xm])
			}
		}
	}
}

// routeColumns sets the column switches' ports down to the destination row.
func (v *vtftrFabric) routeColumns(d, yd int) {
	t := v.t
	for x := 0; x < v.n; x++ {
		if v.up(x, yd) {
			t.set(int(t.swIdx[v.f.Col(x)]), d, v.colPort[x][yd])
		}
	}
}
