package topology

import "testing"

func TestFat2D(t *testing.T) {
	f, err := ParseFat2D("fat2d:4,2")
	if err != nil {
		t.Fatal(err)
	}
	g, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes()) != 32 || g.NumVertices() != 32+16+8 || g.NumLinks() != 32+32 {
		t.Fatalf("nodes %d vertices %d links %d", len(g.Nodes()), g.NumVertices(), g.NumLinks())
	}
	leaf := f.Leaf(2, 3)
	if x, y, ok := f.LeafXY(leaf); !ok || x != 2 || y != 3 || g.VertexName(leaf) != "leaf2-3" {
		t.Errorf("leaf (2,3): %d,%d %v %s", x, y, ok, g.VertexName(leaf))
	}
	ls := g.Links(leaf)
	if g.Other(ls[2], leaf) != f.Row(3) || g.Other(ls[3], leaf) != f.Col(2) {
		t.Errorf("leaf ports 3 and 4 are not its row and column switches")
	}
	if g.Other(g.Links(f.Row(3))[2], f.Row(3)) != leaf || g.Other(g.Links(f.Col(2))[3], f.Col(2)) != leaf {
		t.Errorf("row/column switch ports")
	}
	if _, ok := Fat2DOf(g); !ok {
		t.Errorf("Fat2DOf failed")
	}
	for _, bad := range []string{"fat2d:", "fat2d:1", "fat2d:4,0", "fat2d:x"} {
		if _, err := ParseFat2D(bad); err == nil {
			t.Errorf("ParseFat2D(%q) accepted", bad)
		}
	}
}
