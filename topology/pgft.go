package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// PGFT describes a parallel generalised fat-tree PGFT(h; m1..mh; w1..wh; p1..ph): level 0 holds the
// nodes, levels 1..h the switches; a level-l element has M[l-1] children, W[l] parents (W[l-1] is
// w_l, the number of parents of a level-(l-1) element) and P[l-1] parallel links to each child.
//
// Numbering is the standard mixed-radix one, digit 1 least significant: a level-l element is
// (a_h..a_{l+1}; b_l..b_1) with a_k < m_k and b_k < w_k, and its index is
// b_1 + w_1(b_2 + ... + w_l(a_{l+1} + m_{l+1}(...))). Node d is therefore (a_h..a_1) with a_1 its
// port on its leaf switch.
type PGFT struct {
	M, W, P []int
}

// maxPGFTNodes bounds a PGFT so that a typo cannot exhaust memory.
const maxPGFTNodes = 1 << 22

// ParsePGFT parses "pgft:3;8,8,8;1,8,8;1,1,1" (the "pgft:" prefix is optional). The p list may be
// left out, meaning no parallel links.
func ParsePGFT(spec string) (PGFT, error) {
	s := strings.TrimPrefix(strings.TrimSpace(spec), "pgft:")
	parts := strings.Split(s, ";")
	if len(parts) != 3 && len(parts) != 4 {
		return PGFT{}, fmt.Errorf("pgft %q: want h;m1,..,mh;w1,..,wh[;p1,..,ph]", spec)
	}
	h, err := strconv.Atoi(strings.TrimSpace(parts[0]))
	if err != nil || h < 1 || h > 8 {
		return PGFT{}, fmt.Errorf("pgft %q: height %q must be an integer from 1 to 8", spec, parts[0])
	}
	var p PGFT
	if p.M, err = pgftList(spec, parts[1], "m", h); err != nil {
		return PGFT{}, err
	}
	if p.W, err = pgftList(spec, parts[2], "w", h); err != nil {
		return PGFT{}, err
	}
	if len(parts) == 4 {
		if p.P, err = pgftList(spec, parts[3], "p", h); err != nil {
			return PGFT{}, err
		}
	} else {
		p.P = make([]int, h)
		for i := range p.P {
			p.P[i] = 1
		}
	}
	return p, p.Check()
}

// pgftList parses one of a PGFT spec's comma-separated arity lists (what is "m", "w" or "p"), which
// needs h values from 1 to 1024.
func pgftList(spec, list, what string, h int) ([]int, error) {
	f := strings.Split(list, ",")
	if len(f) != h {
		return nil, fmt.Errorf("pgft %q: %s list %q needs %d values", spec, what, list, h)
	}
	out := make([]int, h)
	for k, x := range f {
		v, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil || v < 1 || v > 1024 {
			return nil, fmt.Errorf("pgft %q: %s%d = %q must be an integer from 1 to 1024", spec, what, k+1, x)
		}
		out[k] = v
	}
	return out, nil
}

// Check reports a PGFT whose sizes are inconsistent or too large.
func (p PGFT) Check() error {
	h := len(p.M)
	if h < 1 || len(p.W) != h || len(p.P) != h {
		return fmt.Errorf("pgft: m, w and p need the same length h >= 1")
	}
	for l := 0; l <= h; l++ {
		n := 1
		for k := 0; k < h; k++ {
			for _, f := range []int{p.M[k], p.W[k], p.P[k]} {
				if f < 1 {
					return fmt.Errorf("pgft %s: every arity must be at least 1", p)
				}
			}
		}
		for k := l; k < h; k++ {
			n *= p.M[k]
			if n > maxPGFTNodes {
				return fmt.Errorf("pgft %s: more than %d elements at level %d", p, maxPGFTNodes, l)
			}
		}
		for k := 0; k < l; k++ {
			n *= p.W[k]
			if n > maxPGFTNodes {
				return fmt.Errorf("pgft %s: more than %d elements at level %d", p, maxPGFTNodes, l)
			}
		}
		if l > 0 && (p.M[l-1]*p.P[l-1]+p.up(l) > 65535) {
			return fmt.Errorf("pgft %s: level %d switches would have more than 65535 ports", p, l)
		}
	}
	return nil
}

// up returns the number of up ports of a level-l element.
func (p PGFT) up(l int) int {
	if l >= len(p.M) {
		return 0
	}
	return p.W[l] * p.P[l]
}

// String returns the canonical spec, e.g. "pgft:3;8,8,8;1,8,8;1,1,1".
func (p PGFT) String() string {
	j := func(v []int) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = strconv.Itoa(x)
		}
		return strings.Join(s, ",")
	}
	return fmt.Sprintf("pgft:%d;%s;%s;%s", len(p.M), j(p.M), j(p.W), j(p.P))
}

// Height returns h.
func (p PGFT) Height() int { return len(p.M) }

// NumAt returns the number of elements at level l (level 0: nodes).
func (p PGFT) NumAt(l int) int {
	n := 1
	for k := l; k < len(p.M); k++ {
		n *= p.M[k]
	}
	for k := 0; k < l; k++ {
		n *= p.W[k]
	}
	return n
}

// NumNodes returns the number of nodes.
func (p PGFT) NumNodes() int { return p.NumAt(0) }

// FirstAt returns the vertex ID of the first element of level l: nodes come first, then the
// switches level by level, each level in index order.
func (p PGFT) FirstAt(l int) VertexID {
	v := 0
	for k := 0; k < l; k++ {
		v += p.NumAt(k)
	}
	return VertexID(v)
}

// NumVertices returns the number of vertices of the built graph.
func (p PGFT) NumVertices() int { return int(p.FirstAt(len(p.M) + 1)) }

// NumLinks returns the number of links of the built graph.
func (p PGFT) NumLinks() int {
	n := 0
	for l := 0; l < len(p.M); l++ {
		n += p.NumAt(l) * p.W[l] * p.P[l]
	}
	return n
}

// Wprod returns w_1 * ... * w_l.
func (p PGFT) Wprod(l int) int {
	n := 1
	for k := 0; k < l; k++ {
		n *= p.W[k]
	}
	return n
}

// Mprod returns m_1 * ... * m_l.
func (p PGFT) Mprod(l int) int {
	n := 1
	for k := 0; k < l; k++ {
		n *= p.M[k]
	}
	return n
}

// DownPort returns the port of a level-l switch (l >= 1) towards its child a (0 <= a < m_l) on
// parallel link k: down ports come first, child by child.
func (p PGFT) DownPort(l, a, k int) int { return 1 + a*p.P[l-1] + k }

// UpPort returns the port of a level-l element towards its parent b (0 <= b < w_{l+1}) on parallel
// link k: up ports follow the down ports, parent by parent.
func (p PGFT) UpPort(l, b, k int) int {
	down := 0
	if l > 0 {
		down = p.M[l-1] * p.P[l-1]
	}
	return 1 + down + b*p.P[l] + k
}

// Parent returns the index at level l+1 of parent b of the level-l element i.
func (p PGFT) Parent(l, i, b int) int {
	low := p.Wprod(l)      // b_1..b_l
	lo, hi := i%low, i/low // hi = (a_h..a_{l+1})
	return lo + low*(b+p.W[l]*(hi/p.M[l]))
}

// Build builds the PGFT's graph: vertices in FirstAt order, links level by level so that every
// switch has its down ports first. Node links belong to segment "L1", links between levels l and
// l+1 to "L<l+1>"; every link is 100 Gb/s with 0.1 us latency.
func (p PGFT) Build() (*Graph, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	h := len(p.M)
	b := &Builder{Name: p.String()}
	b.Grow(p.NumVertices(), p.NumLinks())
	for l := 0; l <= h; l++ {
		k := Switch
		if l == 0 {
			k = Node
		}
		for i, n := 0, p.NumAt(l); i < n; i++ {
			b.AddVertex(k, l-1, "")
		}
	}
	for l := 0; l < h; l++ {
		seg := "L" + strconv.Itoa(l+1)
		segID := b.SegmentID(seg)
		first, up := p.FirstAt(l), p.FirstAt(l+1)
		for i, n := 0, p.NumAt(l); i < n; i++ {
			for par := 0; par < p.W[l]; par++ {
				pv := up + VertexID(p.Parent(l, i, par))
				for k := 0; k < p.P[l]; k++ {
					// Inline AddLink: the segment is already known.
					a := first + VertexID(i)
					b.degree[a]++
					b.degree[pv]++
					b.links = append(b.links, Link{A: a, B: pv, PortA: uint16(b.degree[a]), PortB: uint16(b.degree[pv]),
						CapacityMbps: 100000, LatencyUS: 0.1, Segment: segID})
				}
			}
		}
	}
	b.SetNamer(func(v VertexID) string {
		for l := h; l >= 0; l-- {
			if f := p.FirstAt(l); v >= f {
				if l == 0 {
					return "n" + strconv.Itoa(int(v))
				}
				return "s" + strconv.Itoa(l) + "-" + strconv.Itoa(int(v-f))
			}
		}
		return ""
	})
	return b.Build()
}

// PGFTOf returns the PGFT a graph was built from, when its name is a PGFT spec and its vertices and
// links are those of the intact PGFT (a graph with faults applied does not qualify).
func PGFTOf(g *Graph) (PGFT, bool) {
	if !strings.HasPrefix(g.Name, "pgft:") {
		return PGFT{}, false
	}
	p, err := ParsePGFT(g.Name)
	if err != nil || p.NumVertices() != g.NumVertices() || p.NumLinks() != g.NumLinks() {
		return PGFT{}, false
	}
	return p, true
}
