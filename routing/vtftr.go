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
	n := f.N
	t := newTables(g, "vtftr")
	// port[v][w] for the few neighbours that matter, found by scanning links (faults renumber ports).
	portTo := func(v, w topology.VertexID) int {
		for p, l := range g.Links(v) {
			if g.Other(l, v) == w {
				return p + 1
			}
		}
		return NoPort
	}
	failed := make([]bool, n*n)
	colFaulty := make([]bool, n)
	rowFaulty := make([]bool, n)
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			leaf := f.Leaf(x, y)
			deg := len(g.Links(leaf))
			switch {
			case deg == 0:
				failed[y*n+x] = true
				colFaulty[x], rowFaulty[y] = true, true
			case portTo(leaf, f.Row(y)) == NoPort || portTo(leaf, f.Col(x)) == NoPort:
				return nil, fmt.Errorf("vtftr: leaf %s lost a row or column link; vtftr handles failed leaf switches only", g.VertexName(leaf))
			}
		}
	}
	for i := 0; i < n; i++ {
		if len(g.Links(f.Row(i))) == 0 || len(g.Links(f.Col(i))) == 0 {
			return nil, fmt.Errorf("vtftr: row or column switch %d failed; vtftr handles failed leaf switches only", i)
		}
	}
	var goodCols []int
	for x := 0; x < n; x++ {
		if !colFaulty[x] {
			goodCols = append(goodCols, x)
		}
	}
	ok2 := func(x, y int) bool { return !failed[y*n+x] }
	// misrouteCol picks the column of a misroute from row y to row yd for destination d: a
	// fault-free column (spread by d), else any column whose two leaves are up.
	misrouteCol := func(y, yd, d int) int {
		if len(goodCols) > 0 {
			return goodCols[d%len(goodCols)]
		}
		for i := 0; i < n; i++ {
			x := (d + i) % n
			if ok2(x, y) && ok2(x, yd) {
				return x
			}
		}
		return -1
	}
	t.healthy = make([]bool, len(t.dests))
	rowPort := make([][]int, n) // row switch y -> port to leaf x
	colPort := make([][]int, n) // column switch x -> port to leaf y
	for i := 0; i < n; i++ {
		rowPort[i], colPort[i] = make([]int, n), make([]int, n)
		for j := 0; j < n; j++ {
			rowPort[i][j] = portTo(f.Row(i), f.Leaf(j, i))
			colPort[i][j] = portTo(f.Col(i), f.Leaf(i, j))
		}
	}
	leafRow, leafCol := make([]int, n*n), make([]int, n*n)
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			leafRow[y*n+x] = portTo(f.Leaf(x, y), f.Row(y))
			leafCol[y*n+x] = portTo(f.Leaf(x, y), f.Col(x))
		}
	}
	for d, v := range t.dests {
		leaf := f.NodeLeaf(int(v))
		xd, yd, _ := f.LeafXY(leaf)
		if failed[yd*n+xd] || t.leafOf[d] < 0 {
			continue
		}
		t.healthy[d] = true
		vcRow := 0
		if colFaulty[xd] {
			vcRow = 1
		}
		// Leaves.
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				if failed[y*n+x] {
					continue
				}
				s := int(t.swIdx[f.Leaf(x, y)])
				rp, cp := leafRow[y*n+x], leafCol[y*n+x]
				switch {
				case x == xd && y == yd:
					t.set(s, d, int(t.attach[d]))
				case y == yd:
					t.set(s, d, rp)
					t.setVC(s, d, vcRow)
				case x == xd:
					t.set(s, d, cp)
				case ok2(xd, y):
					t.set(s, d, rp) // XY
				case ok2(x, yd):
					t.set(s, d, cp) // YX
				default:
					if misrouteCol(y, yd, d) >= 0 {
						t.set(s, d, rp) // misroute, continued by the row switch
					}
				}
			}
		}
		// Row switches.
		for y := 0; y < n; y++ {
			s := int(t.swIdx[f.Row(y)])
			switch {
			case y == yd:
				t.set(s, d, rowPort[y][xd])
				t.setVC(s, d, vcRow)
			case ok2(xd, y):
				t.set(s, d, rowPort[y][xd])
			default:
				if xm := misrouteCol(y, yd, d); xm >= 0 {
					t.set(s, d, rowPort[y][xm])
				}
			}
		}
		// Column switches.
		for x := 0; x < n; x++ {
			if ok2(x, yd) {
				t.set(int(t.swIdx[f.Col(x)]), d, colPort[x][yd])
			}
		}
	}
	return t, nil
}
