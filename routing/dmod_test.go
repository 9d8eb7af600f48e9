package routing

import (
	"math/rand/v2"
	"testing"

	"github.com/bootfabric/bootfabric/topology"
)

func buildPGFT(t testing.TB, spec string) *topology.Graph {
	t.Helper()
	p, err := topology.ParsePGFT(spec)
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// randomPGFT draws small PGFT parameters with single-homed nodes.
func randomPGFT(r *rand.Rand) topology.PGFT {
	for {
		h := 1 + r.IntN(3)
		p := topology.PGFT{M: make([]int, h), W: make([]int, h), P: make([]int, h)}
		for l := 0; l < h; l++ {
			p.M[l] = 1 + r.IntN(5)
			p.W[l] = 1 + r.IntN(4)
			p.P[l] = 1 + r.IntN(3)
		}
		p.W[0], p.P[0] = 1, 1
		if p.NumVertices() < 3000 && p.NumNodes() > 1 {
			return p
		}
	}
}

func TestDmodcEqualsDmodk(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	specs := []string{"pgft:3;8,8,8;1,8,8;1,1,1", "pgft:3;2,2,3;1,2,2;1,2,1", "pgft:2;4,4;1,4;1,2",
		"pgft:2;3,100;1,2;1,1", // 100 groups at the top: two mask words
		"pgft:2;2,300;1,1;1,1", // 300-port top switch: two-byte entries
	}
	for i := 0; i < 60; i++ {
		specs = append(specs, randomPGFT(r).String())
	}
	for _, spec := range specs {
		g := buildPGFT(t, spec)
		a, err := Dmodk{}.Compute(g)
		if err != nil {
			t.Fatalf("%s: dmodk: %v", spec, err)
		}
		b, err := Dmodc{}.Compute(g)
		if err != nil {
			t.Fatalf("%s: dmodc: %v", spec, err)
		}
		diffs := 0
		for s := range a.Switches() {
			for d := range a.Dests() {
				if pa, pb := a.Port(s, d), b.Port(s, d); pa != pb {
					if diffs < 5 {
						t.Errorf("%s: switch %s dest %d: dmodk port %d, dmodc port %d", spec, g.VertexName(a.Switches()[s]), d, pa, pb)
					}
					diffs++
				}
			}
		}
		if diffs > 0 {
			t.Errorf("%s: %d entries differ", spec, diffs)
		}
	}
}

func TestDmodkRoutesArrive(t *testing.T) {
	g := buildPGFT(t, "pgft:3;2,2,3;1,2,2;1,2,1")
	tb, err := Dmodk{}.Compute(g)
	if err != nil {
		t.Fatal(err)
	}
	var buf []topology.Channel
	for _, s := range g.Nodes() {
		for _, d := range g.Nodes() {
			buf, err = tb.Route(buf[:0], s, d)
			if err != nil {
				t.Fatal(err)
			}
			if s == d {
				continue
			}
			if g.ChannelFrom(buf[0]) != s || g.ChannelTo(buf[len(buf)-1]) != d {
				t.Fatalf("%d->%d: path %v does not join them", s, d, buf)
			}
			for i := 1; i < len(buf); i++ {
				if g.ChannelTo(buf[i-1]) != g.ChannelFrom(buf[i]) {
					t.Fatalf("%d->%d: broken path", s, d)
				}
			}
		}
	}
}

func TestTableWidthAndRouteFromSwitch(t *testing.T) {
	g := buildPGFT(t, "pgft:2;2,300;1,1;1,1")
	tb, err := Dmodc{}.Compute(g)
	if err != nil {
		t.Fatal(err)
	}
	if tb.BytesPerEntry() != 2 {
		t.Errorf("300-port switches: %v bytes per entry, want 2", tb.BytesPerEntry())
	}
	g = buildPGFT(t, "pgft:3;4,4,8;1,4,4;1,1,1")
	tb, err = Dmodc{}.Compute(g)
	if err != nil {
		t.Fatal(err)
	}
	if tb.BytesPerEntry() != 1 {
		t.Errorf("%v bytes per entry, want 1", tb.BytesPerEntry())
	}
	top := tb.Switches()[len(tb.Switches())-1]
	path, err := tb.Route(nil, top, g.Nodes()[77])
	if err != nil || len(path) != 3 || g.ChannelFrom(path[0]) != top || g.ChannelTo(path[2]) != g.Nodes()[77] {
		t.Errorf("top switch to node 77: %v, %v", path, err)
	}
	if _, err := tb.Route(nil, g.Nodes()[0], top); err == nil {
		t.Errorf("route to a switch accepted")
	}
}

func TestInlineVCs(t *testing.T) {
	g := buildPGFT(t, "pgft:2;4,4;1,2;1,1")
	tb, err := Dmodc{}.Compute(g)
	if err != nil {
		t.Fatal(err)
	}
	p := tb.Port(0, 9)
	tb.setVC(0, 9, 1)
	if tb.Port(0, 9) != p || tb.VC(0, 9) != 1 || tb.NumVCs() != 2 || tb.BytesPerEntry() != 1 {
		t.Fatalf("inline VC 1: port %d vc %d vcs %d bytes %v", tb.Port(0, 9), tb.VC(0, 9), tb.NumVCs(), tb.BytesPerEntry())
	}
	tb.set(0, 9, p)
	tb.setVC(1, 3, 2) // a third VC moves VCs to their own bytes
	if tb.Port(0, 9) != p || tb.VC(0, 9) != 1 || tb.VC(1, 3) != 2 || tb.NumVCs() != 3 || tb.BytesPerEntry() != 2 {
		t.Fatalf("VC bytes: port %d vc %d,%d vcs %d bytes %v", tb.Port(0, 9), tb.VC(0, 9), tb.VC(1, 3), tb.NumVCs(), tb.BytesPerEntry())
	}
}
