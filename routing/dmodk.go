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
	h := p.Height()
	N := p.NumNodes()
	type lv struct{ level, first, n, wprod, mprod, mprodBelow int }
	var levels []lv
	for l := 1; l <= h; l++ {
		levels = append(levels, lv{l, int(p.FirstAt(l)), p.NumAt(l), p.Wprod(l), p.Mprod(l), p.Mprod(l - 1)})
	}
	// Switch indices follow vertex order, and the PGFT's switches are its only switches, so
	// switch index = vertex - N.
	prog := newCounter(e.Progress, len(t.switches))
	parallel(len(t.switches), e.Workers, func(s int) {
		defer prog.done()
		v := int(t.switches[s])
		var L lv
		for _, x := range levels {
			if v >= x.first && v < x.first+x.n {
				L = x
			}
		}
		i := v - L.first
		l := L.level
		row := make([]uint16, N)
		if l < h {
			// Up: u = d/W_l mod (w_{l+1} p_{l+1}), advanced every W_l destinations.
			wp := p.W[l] * p.P[l]
			upPorts := make([]uint16, wp)
			for u := range upPorts {
				upPorts[u] = uint16(p.UpPort(l, u%p.W[l], u/p.W[l]))
			}
			r, u := 0, 0
			for d := 0; d < N; d++ {
				row[d] = upPorts[u]
				if r++; r == L.wprod {
					r = 0
					if u++; u == wp {
						u = 0
					}
				}
			}
		}
		// Down, over the switch's own block of destinations (digits above l equal to its own).
		above := i / L.wprod
		for d := above * L.mprod; d < (above+1)*L.mprod; d++ {
			a := (d / L.mprodBelow) % p.M[l-1]
			k := 0
			if l > 1 {
				k = (d / L.wprod) % p.P[l-1]
			}
			row[d] = uint16(p.DownPort(l, a, k))
		}
		for d, port := range row {
			t.set(s, d, int(port))
		}
	})
	return t, nil
}
