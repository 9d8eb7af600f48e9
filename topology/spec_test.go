package topology

import (
	"slices"
	"strings"
	"testing"
)

func TestOpenGraphSpecs(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		nodes int
	}{
		{"pgft:3;8,8,8;1,8,8;1,1,1", 512},
		{"fat2d:16", 4096},
		{"mini", 32},
		{"testdata/fattree.topo", 4},
	} {
		g, err := OpenGraph(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		if len(g.Nodes()) != tc.nodes {
			t.Errorf("%s: %d nodes, want %d", tc.spec, len(g.Nodes()), tc.nodes)
		}
	}
	for _, bad := range []string{"pgft:1", "fat2d:0", "no-such-thing"} {
		if _, err := OpenGraph(bad); err == nil {
			t.Errorf("OpenGraph(%q) accepted", bad)
		}
	}
}

func FuzzOpenSpec(f *testing.F) {
	for _, s := range []string{"pgft:3;8,8,8;1,8,8;1,1,1", "pgft:2;4,4;1,4", "fat2d:16", "fat2d:4,2", "pgft:1;2;1;1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !strings.HasPrefix(s, "pgft:") && !strings.HasPrefix(s, "fat2d:") {
			return // files and presets are not fuzzed here
		}
		if p, err := ParsePGFT(s); err == nil && strings.HasPrefix(s, "pgft:") {
			if p.NumVertices() > 1<<16 {
				return // valid but too large to build in a fuzz iteration
			}
		}
		if f2, err := ParseFat2D(s); err == nil && f2.NumVertices() > 1<<16 {
			return
		}
		g, err := OpenGraph(s)
		if err == nil && g.NumVertices() == 0 {
			t.Fatal("empty graph without error")
		}
	})
}

func TestLookupSwitches(t *testing.T) {
	f, err := OpenFabric("fat2d:4,2")
	if err != nil {
		t.Fatal(err)
	}
	var sw VertexID = -1
	for v := range VertexID(f.NumVertices()) {
		if f.Kind(v) == Switch {
			sw = v
			break
		}
	}
	name := f.VertexName(sw)
	node := f.VertexName(f.Nodes()[0])
	for _, tc := range []struct {
		list string
		want []VertexID
		err  string
	}{
		{"", nil, ""},
		{name + ", " + name, []VertexID{sw, sw}, ""},
		{"nope", nil, `no switch "nope"`},
		{name + ", " + node, nil, `no switch " ` + node + `"`}, // an endpoint is no root
	} {
		got, err := f.LookupSwitches(tc.list)
		if !slices.Equal(got, tc.want) || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("LookupSwitches(%q) = %v, %v; want %v, %q", tc.list, got, err, tc.want, tc.err)
		}
	}
}
