package topology

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPGFTShape(t *testing.T) {
	// The Dmodc paper's figure 1: PGFT(3; 2,2,3; 1,2,2; 1,2,1): 12 nodes.
	p, err := ParsePGFT("pgft:3;2,2,3;1,2,2;1,2,1")
	if err != nil {
		t.Fatal(err)
	}
	got := []int{p.NumAt(0), p.NumAt(1), p.NumAt(2), p.NumAt(3)}
	if diff := cmp.Diff([]int{12, 6, 6, 4}, got); diff != "" {
		t.Errorf("elements per level (-want +got):\n%s", diff)
	}
	g, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	if g.NumVertices() != 28 || g.NumLinks() != 12+6*2*2+6*2 || len(g.Nodes()) != 12 {
		t.Errorf("vertices %d links %d nodes %d", g.NumVertices(), g.NumLinks(), len(g.Nodes()))
	}
	if p.String() != "pgft:3;2,2,3;1,2,2;1,2,1" {
		t.Errorf("String = %s", p)
	}
	// Every level-l switch has m_l*p_l down ports then w_{l+1}*p_{l+1} up ports, in that order.
	for l := 1; l <= 3; l++ {
		for i := 0; i < p.NumAt(l); i++ {
			v := p.FirstAt(l) + VertexID(i)
			ls := g.Links(v)
			if want := p.M[l-1]*p.P[l-1] + p.up(l); len(ls) != want {
				t.Fatalf("switch %s: %d ports, want %d", g.VertexName(v), len(ls), want)
			}
			for port, lk := range ls {
				other := g.Other(lk, v)
				down := port < p.M[l-1]*p.P[l-1]
				if down != (g.Level(other) < g.Level(v)) {
					t.Errorf("switch %s port %d goes to %s", g.VertexName(v), port+1, g.VertexName(other))
				}
				if down {
					a, k := port/p.P[l-1], port%p.P[l-1]
					if p.DownPort(l, a, k) != port+1 {
						t.Errorf("DownPort(%d,%d,%d) = %d, want %d", l, a, k, p.DownPort(l, a, k), port+1)
					}
					// The child's digit l is a.
					ci := int(other - p.FirstAt(l-1))
					if (ci/p.Wprod(l-1))%p.M[l-1] != a {
						t.Errorf("switch %s port %d: child %s has digit %d", g.VertexName(v), port+1, g.VertexName(other), (ci/p.Wprod(l-1))%p.M[l-1])
					}
				}
			}
		}
	}
	// Node 5 = (a3,a2,a1) = (1,0,1) sits on leaf 2, port 2.
	leafLink := g.Links(5)[0]
	if leaf := g.Other(leafLink, 5); leaf != p.FirstAt(1)+2 || g.Link(leafLink).PortB != 2 {
		t.Errorf("node 5 on %s port %d", g.VertexName(leaf), g.Link(leafLink).PortB)
	}
	if q, ok := PGFTOf(g); !ok || q.String() != p.String() {
		t.Errorf("PGFTOf = %v, %v", q, ok)
	}
}

func TestParsePGFTErrors(t *testing.T) {
	for _, bad := range []string{"pgft:", "pgft:3;8,8;1,8,8", "pgft:x;1;1", "pgft:2;8,0;1,8", "pgft:2;8,8;1,8;1", "pgft:9;1,1,1,1,1,1,1,1,1;1,1,1,1,1,1,1,1,1", "pgft:3;1024,1024,1024;1,1,1"} {
		if _, err := ParsePGFT(bad); err == nil {
			t.Errorf("ParsePGFT(%q) accepted", bad)
		} else if !strings.Contains(err.Error(), "pgft") {
			t.Errorf("ParsePGFT(%q): error %q does not say pgft", bad, err)
		}
	}
}

func BenchmarkPGFT65536(b *testing.B) {
	p, _ := ParsePGFT("pgft:3;32,32,64;1,32,32;1,1,1")
	for i := 0; i < b.N; i++ {
		if _, err := p.Build(); err != nil {
			b.Fatal(err)
		}
	}
}
