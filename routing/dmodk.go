package routing

import (
	"fmt"

	"github.com/bootfabric/bootfabric/topology"
)

// Dmodk is Zahavi's D-mod-K routing on an intact PGFT (built by topology.PGFT with w1 = p1 = 1):
// a level-l switch routes destination d down when d is below it, to the child on d's digit l,
// parallel link d/W_l mod p_l; otherwise up through port index u = d/W_l mod (w_{l+1} p_{l+1}),
// parent u mod w_{l+1}, parallel link u / w_{l+1}, where W_l = w_1...w_l.
type Dmodk struct {
	Workers int
	// Progress, when set, is told how many switches are routed of all (see Options.Progress).
	Progress func(done, total int)
}

// Name returns "dmodk".
func (Dmodk) Name() string { return "dmodk" }

// Compute builds the tables.
func (e Dmodk) Compute(g *topology.Graph) (*Tables, error) {
	p, ok := topology.PGFTOf(g)
	if !ok {
		return nil, fmt.Errorf("dmodk: %q is not an intact PGFT spec: dmodk routes pgft: specs (give a simulated or real fabric's identities with --lids), dmodc degraded and other fat-trees", g.Name)
	}
	if p.W[0] != 1 || p.P[0] != 1 {
		return nil, fmt.Errorf("dmodk: %s: nodes must have a single link (w1 = p1 = 1)", p)
	}
	t := newTables(g, "dmodk")
	var levels []dmodkLevel
	for l := 1; l <= p.Height(); l++ {
		levels = append(levels, dmodkLevel{l, int(p.FirstAt(l)), p.NumAt(l), p.Wprod(l), p.Mprod(l), p.Mprod(l - 1)})
	}
	N := p.NumNodes()
	prog := newCounter(e.Progress, len(t.switches))
	parallel(len(t.switches), e.Workers, func(s int) {
		defer prog.done()
		v := int(t.switches[s])
		var L dmodkLevel
		for _, x := range levels {
			if v >= x.first && v < x.first+x.n {
				L = x
			}
		}
		row := make([]uint16, N)
		if L.level < p.Height() {
			dmodkUp(row, p, L)
		}
		dmodkDown(row, p, L, v-L.first)
		for d, port := range row {
			t.set(s, d, int(port))
		}
	})
	return t, nil
}

// dmodkLevel is one level l of the PGFT: its first switch vertex and number of switches,
// W_l = w_1...w_l, M_l = m_1...m_l and M_{l-1}.
type dmodkLevel struct{ level, first, n, wprod, mprod, mprodBelow int }

// dmodkUp fills a level-L switch's row with its up ports: port index u = d/W_l mod (w_{l+1}
// p_{l+1}), advanced every W_l destinations.
func dmodkUp(row []uint16, p topology.PGFT, L dmodkLevel) {
	l := L.level
	wp := p.W[l] * p.P[l]
	upPorts := make([]uint16, wp)
	for u := range upPorts {
		upPorts[u] = uint16(p.UpPort(l, u%p.W[l], u/p.W[l]))
	}
	r, u := 0, 0
	for d := range row {
		row[d] = upPorts[u]
		if r++; r == L.wprod {
			r = 0
			if u++; u == wp {
				u = 0
			}
		}
	}
}

// dmodkDown sets the down ports of the i-th switch of level L over its own block of destinations
// (digits above l equal to its own): the child on d's digit l, parallel link d/W_l mod p_l.
func dmodkDown(row []uint16, p topology.PGFT, L dmodkLevel, i int) {
	l := L.level
	above := i / L.wprod
	for d := above * L.mprod; d < (above+1)*L.mprod; d++ {
		a := (d / L.mprodBelow) % p.M[l-1]
		k := 0
		if l > 1 {
			k = (d / L.wprod) % p.P[l-1]
		}
		row[d] = uint16(p.DownPort(l, a, k))
	}
}
