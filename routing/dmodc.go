package routing

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/bootfabric/bootfabric/topology"
)

// inf is an infinite cost.
const inf = 0xff

// Dmodc is the fault-resilient closed-form fat-tree routing of Gliksberg et al.: Procedure 1
// computes the cost c(s, l) of every switch to every leaf under up-down restrictions and the divider
// Pi_s of every switch; then for destination d on leaf l, switch s picks among the port groups C
// whose neighbour is closer to l: group C[d/Pi_s mod |C|], port group[d/(Pi_s |C|) mod |group|].
// Ranks are the switch levels of the graph. On an intact PGFT it yields Dmodk's tables.
type Dmodc struct {
	Workers int
	// Progress, when set, is told how many switches are routed of all (see Options.Progress).
	Progress func(done, total int)
}

// Name returns "dmodc".
func (Dmodc) Name() string { return "dmodc" }

// Compute builds the tables.
func (e Dmodc) Compute(g *topology.Graph) (*Tables, error) { return e.Recompute(g, nil) }

// Recompute builds the tables reusing the entry memory of prev (which must not be used after),
// as a fabric manager re-routing after faults would.
func (e Dmodc) Recompute(g *topology.Graph, prev *Tables) (*Tables, error) {
	t := reuseTables(g, "dmodc", prev)
	f := prepare(t)
	if len(t.switches) == 0 {
		return nil, fmt.Errorf("dmodc: %s has no switches", g.Name)
	}
	r := &dmodcRun{t: t, f: f, L: len(f.leaves), workers: e.Workers}
	r.byLevel = ranksAscending(f)
	if err := r.splitUpDown(); err != nil {
		return nil, err
	}
	r.dividers()
	r.costs()
	r.routeAll(e.Progress)
	return t, nil
}

// dmodcRun is one Dmodc computation: Procedure 1's ranks, up and down neighbours, dividers Pi
// and costs, then the routes.
type dmodcRun struct {
	t       *Tables
	f       *fabric
	L       int // leaves
	workers int
	byLevel [][]int32 // switches by ascending rank
	up      [][]int32 // up neighbours (switch indices), distinct
	down    [][]int32 // down neighbours
	pi      []int     // divider Pi_s per switch
	cost    []uint8   // c(s, l) at s*L+l
}

// ranksAscending orders the switches by ascending rank (counting sort on levels).
func ranksAscending(f *fabric) [][]int32 {
	minL, maxL := f.level[0], f.level[0]
	for _, l := range f.level {
		minL, maxL = min(minL, l), max(maxL, l)
	}
	byLevel := make([][]int32, maxL-minL+1)
	for s, l := range f.level {
		byLevel[l-minL] = append(byLevel[l-minL], int32(s))
	}
	return byLevel
}

// splitUpDown sorts every switch's neighbours into up and down; a link within a level is refused.
func (r *dmodcRun) splitUpDown() error {
	f := r.f
	S := len(r.t.switches)
	r.up, r.down = make([][]int32, S), make([][]int32, S)
	for s, gs := range f.groups {
		for _, gr := range gs {
			switch nl := f.level[gr.nb]; {
			case nl > f.level[s]:
				r.up[s] = append(r.up[s], gr.nb)
			case nl < f.level[s]:
				r.down[s] = append(r.down[s], gr.nb)
			default:
				g := r.t.g
				return fmt.Errorf("dmodc: switches %s and %s are linked but both on level %d; dmodc needs a ranked fat-tree",
					g.VertexName(r.t.switches[s]), g.VertexName(r.t.switches[gr.nb]), nl)
			}
		}
	}
	return nil
}

// dividers computes Pi_s, propagated upwards: Pi of a switch is the maximum over its down
// neighbours of their Pi times their number of up neighbours (1 at the leaves).
func (r *dmodcRun) dividers() {
	r.pi = make([]int, len(r.t.switches))
	for s := range r.pi {
		r.pi[s] = 1
	}
	for _, lv := range r.byLevel {
		for _, s := range lv {
			p := r.pi[s] * len(r.up[s])
			for _, u := range r.up[s] {
				if r.pi[u] < p {
					r.pi[u] = p
				}
			}
		}
	}
}

// costs computes Procedure 1's costs c(s, l) under up-down restrictions: an upward sweep by
// ascending rank, then a downward one (leaves keep their up-only costs), in independent blocks of
// leaf columns.
func (r *dmodcRun) costs() {
	f, L := r.f, r.L
	cost := make([]uint8, len(r.t.switches)*L)
	for i := range cost {
		cost[i] = inf
	}
	for li, s := range f.leaves {
		cost[int(s)*L+li] = 0
	}
	const block = 512
	nb := (L + block - 1) / block
	parallel(nb, r.workers, func(b int) {
		lo, hi := b*block, min(L, (b+1)*block)
		for _, lv := range r.byLevel {
			for _, s := range lv {
				src := cost[int(s)*L+lo : int(s)*L+hi]
				for _, u := range r.up[s] {
					relax(cost[int(u)*L+lo:int(u)*L+hi], src)
				}
			}
		}
		for k := len(r.byLevel) - 1; k >= 0; k-- {
			for _, s := range r.byLevel[k] {
				if f.leafIx[s] >= 0 {
					continue
				}
				src := cost[int(s)*L+lo : int(s)*L+hi]
				for _, dn := range r.down[s] {
					relax(cost[int(dn)*L+lo:int(dn)*L+hi], src)
				}
			}
		}
	})
	r.cost = cost
}

// dmodcWork is one worker's reusable buffers.
type dmodcWork struct {
	masks []uint64
	C     []int32
	pat8  []uint8
	pat16 []uint16
}

// routeAll routes switch by switch in parallel.
func (r *dmodcRun) routeAll(progress func(done, total int)) {
	S := len(r.t.switches)
	var mu sync.Mutex
	var free []*dmodcWork
	prog := newCounter(progress, S)
	parallel(S, r.workers, func(s int) {
		defer prog.done()
		mu.Lock()
		var w *dmodcWork
		if n := len(free); n > 0 {
			w, free = free[n-1], free[:n-1]
		} else {
			w = &dmodcWork{}
		}
		mu.Unlock()
		defer func() { mu.Lock(); free = append(free, w); mu.Unlock() }()
		r.routeSwitch(s, w)
	})
}

// closerGroups sets, per leaf, one bit per port group of s whose neighbour is closer to the leaf
// than s, building the masks by streaming cost rows; it returns the masks (W words per leaf).
func (r *dmodcRun) closerGroups(s int, w *dmodcWork) (masks []uint64, W int) {
	L, gs := r.L, r.f.groups[s]
	W = (len(gs) + 63) / 64
	if cap(w.masks) < L*W {
		w.masks = make([]uint64, L*W)
	}
	masks = w.masks[:L*W]
	clear(masks)
	mine := r.cost[s*L : (s+1)*L]
	for gi := range gs {
		row := r.cost[int(gs[gi].nb)*L : int(gs[gi].nb)*L+L]
		closerMasks(masks, W, uint64(1)<<(gi&63), gi>>6, row, mine)
	}
	return masks, W
}

// routeSwitch sets switch s's ports: for each leaf, the groups closer to it (C), then formulas
// (3) and (4) over the leaf's destinations.
func (r *dmodcRun) routeSwitch(s int, w *dmodcWork) {
	t, f, L := r.t, r.f, r.L
	D := len(t.dests)
	gs := f.groups[s]
	masks, W := r.closerGroups(s, w)
	mine := r.cost[s*L : (s+1)*L]
	C := w.C[:0]
	prev := -1
	piS := r.pi[s]
	for li := 0; li < L; li++ {
		dl := f.onLeaf[li]
		if int(f.leaves[li]) == s {
			for _, d := range dl {
				t.set(s, int(d), int(t.attach[d]))
			}
			continue
		}
		if mine[li] == inf {
			continue
		}
		m := masks[li*W : li*W+W]
		if prev < 0 || !slices.Equal(m, masks[prev*W:prev*W+W]) {
			C = maskGroups(C[:0], m)
			prev = li
		}
		if len(C) == 0 {
			continue
		}
		if prev == li && piS == 1 { // C changed: new period
			w.pat8 = w.pat8[:0]
			w.pat16 = w.pat16[:0]
			if t.p8 != nil {
				w.pat8 = dmodcPattern(w.pat8, gs, C)
			} else {
				w.pat16 = dmodcPattern(w.pat16, gs, C)
			}
		}
		if t.p8 != nil {
			dmodcFill(t.p8[s*D:(s+1)*D], dl, gs, C, piS, w.pat8)
		} else {
			dmodcFill(t.p16[s*D:(s+1)*D], dl, gs, C, piS, w.pat16)
		}
	}
	w.C = C
}

// maskGroups appends the indices of m's set bits to C.
func maskGroups(C []int32, m []uint64) []int32 {
	for k, x := range m {
		for x != 0 {
			C = append(C, int32(k*64+bits.TrailingZeros64(x)))
			x &= x - 1
		}
	}
	return C
}

// relax lowers dst[i] to src[i]+1 where that is smaller (inf stays inf). Eight bytes at a time:
// inf bytes of src are masked out, inf bytes of dst compare as 0x7f, and the per-byte compare is
// the high bit of (dst|0x80..) - (src+1) - 0x01.., borrow-free while finite src bytes are below
// 0x7e (else that word goes byte by byte).
func relax(dst, src []uint8) {
	const hi, lo, low7 = 0x8080808080808080, 0x0101010101010101, 0x7f7f7f7f7f7f7f7f
	n := len(src)
	dst = dst[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		s := binary.LittleEndian.Uint64(src[i:])
		if s == ^uint64(0) {
			continue // all infinite: nothing to propagate
		}
		x := ^s // inf bytes are zero here
		sInf := ^(((x & low7) + low7) | x) & hi
		sf := s &^ ((sInf >> 7) * 0xff)
		if s&hi != sInf || (sf+2*lo)&hi != 0 {
			relaxBytes(dst[i:i+8], src[i:i+8])
			continue
		}
		s1 := sf + lo
		d := binary.LittleEndian.Uint64(dst[i:])
		dMask := ((d & hi) >> 7) * 0xff
		dc := d&^dMask | dMask&low7
		flags := ((dc | hi) - s1 - lo) & hi &^ sInf
		if flags == 0 {
			continue
		}
		m := (flags >> 7) * 0xff
		binary.LittleEndian.PutUint64(dst[i:], s1&m|d&^m)
	}
	relaxBytes(dst[i:], src[i:])
}

func relaxBytes(dst, src []uint8) {
	dst = dst[:len(src)]
	for i, a := range src {
		if a != inf && a+1 < dst[i] {
			dst[i] = a + 1
		}
	}
}

// dmodcFill computes formulas (3) and (4) for the destinations dl of one leaf into the switch's
// row: group C[d/pi mod |C|], port group[d/(pi |C|) mod |group|]. Runs of consecutive
// destinations, the usual case, are done with counters instead of divisions.
//
// pattern, when not empty, holds the ports of one period for pi = 1 (see dmodcPattern).
func dmodcFill[T uint8 | uint16](row []T, dl []int32, gs []group, C []int32, pi int, pattern []T) {
	nc := len(C)
	if int(dl[len(dl)-1])-int(dl[0]) != len(dl)-1 {
		for _, d := range dl {
			q := int(d) / pi
			gr := &gs[C[q%nc]]
			row[d] = T(gr.ports[(q/nc)%len(gr.ports)])
		}
		return
	}
	d0 := int(dl[0])
	out := row[d0 : d0+len(dl)]
	if pi == 1 && len(pattern) > 0 {
		// Leaf switches: the ports repeat with period |C| |group|; copy the period.
		off := d0 % len(pattern)
		for len(out) > 0 {
			n := copy(out, pattern[off:])
			out = out[n:]
			off = 0
		}
		return
	}
	q := d0 / pi
	r := d0 % pi
	gi := q % nc
	qn := q / nc
	gr := &gs[C[gi]]
	// With groups of one size G, the port index advances by one (mod G) each time gi wraps.
	G := len(gr.ports)
	for _, c := range C {
		if len(gs[c].ports) != G {
			G = 0
			break
		}
	}
	pidx := qn % len(gr.ports)
	port := T(gr.ports[pidx])
	for i := range out {
		out[i] = port
		r++
		if r == pi {
			r = 0
			gi++
			if gi == nc {
				gi = 0
				qn++
				if G > 0 {
					if pidx++; pidx == G {
						pidx = 0
					}
				}
			}
			gr = &gs[C[gi]]
			if G == 0 {
				pidx = qn % len(gr.ports)
			}
			port = T(gr.ports[pidx])
		}
	}
}

// dmodcPattern returns the ports of destinations 0..|C| G - 1 for pi = 1 when every group of C
// has G ports (the sequence repeats from there), or nil.
func dmodcPattern[T uint8 | uint16](buf []T, gs []group, C []int32) []T {
	G := len(gs[C[0]].ports)
	for _, c := range C {
		if len(gs[c].ports) != G {
			return nil
		}
	}
	nc := len(C)
	buf = buf[:0]
	for j := 0; j < nc*G; j++ {
		buf = append(buf, T(gs[C[j%nc]].ports[j/nc]))
	}
	return buf
}

// closerMasks sets bit in masks[li*W+off] for every leaf li where row[li] < mine[li]. Eight leaves
// are compared at once when no cost is infinite: with bytes below 0x80, the high bit of each byte
// of (mine|0x80..) - row - 0x01.. is set exactly where row < mine, and no borrow crosses bytes.
func closerMasks(masks []uint64, W int, bit uint64, off int, row, mine []uint8) {
	const hi, lo = 0x8080808080808080, 0x0101010101010101
	L := len(mine)
	row = row[:L]
	li := 0
	for ; li+8 <= L; li += 8 {
		x := binary.LittleEndian.Uint64(row[li:])
		y := binary.LittleEndian.Uint64(mine[li:])
		var flags uint64
		if (x|y)&hi == 0 {
			flags = ((y | hi) - x - lo) & hi
		} else {
			for k := 0; k < 8; k++ {
				if row[li+k] < mine[li+k] {
					flags |= 0x80 << (8 * k)
				}
			}
		}
		for flags != 0 {
			k := bits.TrailingZeros64(flags) >> 3
			masks[(li+k)*W+off] |= bit
			flags &= flags - 1
		}
	}
	for ; li < L; li++ {
		if row[li] < mine[li] {
			masks[li*W+off] |= bit
		}
	}
}
