package topology

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustBuild(t testing.TB, name string) *Graph {
	t.Helper()
	m, ok := Preset(name)
	if !ok {
		t.Fatalf("no preset %s", name)
	}
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSunwayShape(t *testing.T) {
	g := mustBuild(t, "sunway")
	if got, want := len(g.Nodes()), 40960; got != want {
		t.Errorf("nodes = %d, want %d", got, want)
	}
	if got, want := len(g.Servers()), 160; got != want {
		t.Errorf("servers = %d, want %d", got, want)
	}
	// core + 160 supernode + 5120 board + 8 cascade switches
	if got, want := g.NumVertices(), 1+160+5120+40960+8+160; got != want {
		t.Errorf("vertices = %d, want %d", got, want)
	}
	if !g.IsTree() {
		t.Fatal("sunway is not a tree")
	}
	if diff := cmp.Diff([]string{"N3", "N2", "N1", "N4", "N5"}, g.Segments()); diff != "" {
		t.Errorf("segments (-want +got):\n%s", diff)
	}
}

func TestTreeRouteSegments(t *testing.T) {
	g := mustBuild(t, "sunway")
	r := g.TreeRouter()
	tests := []struct {
		server, node int
		want         []string
	}{
		{0, 0, []string{"N5", "N4", "N3", "N2", "N1"}},
		{159, 40959, []string{"N5", "N4", "N3", "N2", "N1"}},
	}
	for _, tc := range tests {
		path, err := r.Route(nil, g.Servers()[tc.server], g.Nodes()[tc.node])
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range path {
			got = append(got, g.Segment(g.Link(c.Link()).Segment))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("route bs%d->node %d (-want +got):\n%s", tc.server, tc.node, diff)
		}
		if g.ChannelFrom(path[0]) != g.Servers()[tc.server] || g.ChannelTo(path[len(path)-1]) != g.Nodes()[tc.node] {
			t.Errorf("route does not run from server to node")
		}
		for i := 1; i < len(path); i++ {
			if g.ChannelTo(path[i-1]) != g.ChannelFrom(path[i]) {
				t.Errorf("route broken between hops %d and %d", i-1, i)
			}
		}
		back, _ := r.Route(nil, g.Nodes()[tc.node], g.Servers()[tc.server])
		for i := range back {
			if back[i] != path[len(path)-1-i]^1 {
				t.Errorf("reverse route hop %d = %v, want %v", i, back[i], path[len(path)-1-i]^1)
			}
		}
	}
}

func TestNames(t *testing.T) {
	g := mustBuild(t, "sunway")
	h := g.Hierarchy()
	for _, i := range []int{0, 1, 7, 8, 255, 256, 40959} {
		name := h.NodeName(i)
		if got := g.VertexName(g.Nodes()[i]); got != name {
			t.Errorf("vertex name %q != node name %q", got, name)
		}
		j, err := h.ParseNode(name)
		if err != nil || j != i {
			t.Errorf("ParseNode(%q) = %d, %v; want %d", name, j, err, i)
		}
	}
	if got := h.NodeName(40959); got != "c39-s3-b31-n7" {
		t.Errorf("last node = %q", got)
	}
	for _, bad := range []string{"", "c0-s0-b0", "c40-s0-b0-n0", "c0-s0-b0-n8", "c0-s0-b0-x1", "c00-s0-b0-n1", "c-1-s0-b0-n0"} {
		if _, err := h.ParseNode(bad); err == nil {
			t.Errorf("ParseNode(%q) succeeded", bad)
		}
	}
	if got := g.VertexName(g.Servers()[17]); got != "bs17" {
		t.Errorf("server name %q", got)
	}
	if got := g.VertexName(0); got != "core" {
		t.Errorf("core name %q", got)
	}
	p, _, _ := g.Parent(g.Nodes()[9])
	if got := g.VertexName(p); got != "c0-s0-b1-sw" {
		t.Errorf("board switch name %q", got)
	}
}

func TestPresetYAMLRoundTrip(t *testing.T) {
	for _, name := range Presets() {
		m, _ := Preset(name)
		text, err := m.MarshalYAMLText()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(text, name+".yaml")
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, text)
		}
		if diff := cmp.Diff(m, back); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", name, diff)
		}
	}
}

func TestParseErrors(t *testing.T) {
	good, _ := mini().MarshalYAMLText()
	tests := []struct {
		name, yaml, want string
	}{
		{"empty", "", "m.yaml: empty machine description"},
		{"syntax", "levels: [", "m.yaml:1:"},
		{"unknown field", strings.Replace(string(good), "per_cascade", "per_cascad", 1), `m.yaml:27: servers: unknown field "per_cascad" (did you mean per_cascade?)`},
		{"zero servers", strings.Replace(string(good), "count: 4\n  per_cascade", "count: 0\n  per_cascade", 1), "servers.count: at least one boot server"},
		{"zero count", strings.Replace(string(good), "count: 2", "count: 0", 1), "m.yaml:6: levels[0].count: must be at least 1"},
		{"negative capacity", strings.Replace(string(good), "capacity_mbps: 2000", "capacity_mbps: -5", 1), "levels[0].uplink.capacity_mbps: must be a positive"},
		{"no nic", "name: x\nlevels:\n  - name: node\n    count: 4\nservers:\n  count: 1\n  nic: {segment: N5, capacity_mbps: 1}\n", "m.yaml:3: levels[0].uplink: the node level needs an uplink"},
		{"no cascade uplink", "name: x\nlevels:\n  - {name: node, count: 4, uplink: {segment: N1, capacity_mbps: 1}}\nservers:\n  count: 1\n  per_cascade: 1\n  nic: {segment: N5, capacity_mbps: 1}\n", "m.yaml:4: servers.cascade_uplink: needed"},
		{"dup prefix", "name: x\nlevels:\n  - {name: board, count: 2}\n  - {name: blade, count: 4, uplink: {segment: N1, capacity_mbps: 1}}\nservers:\n  count: 1\n  nic: {segment: N5, capacity_mbps: 1}\n", "m.yaml:4: levels[1].prefix: prefix \"b\" already used"},
		{"too big", "name: x\nlevels:\n  - {name: a, count: 100000}\n  - {name: node, count: 100000, uplink: {segment: N1, capacity_mbps: 1}}\nservers:\n  count: 1\n  nic: {segment: N5, capacity_mbps: 1}\n", "levels[1].count: machine would exceed"},
		{"wrong type", strings.Replace(string(good), "count: 2", "count: two", 1), `m.yaml:6: levels[0].count: "two" is not a whole number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "m.yaml")
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %T is not *Error", err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	good, _ := mini().MarshalYAMLText()
	f.Add(good)
	f.Add([]byte("levels: [{name: node, count: 3}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, "fuzz.yaml")
		if err != nil || m.NumNodes() > 1<<16 {
			return
		}
		if _, err := m.Build(); err != nil {
			t.Fatalf("parsed machine does not build: %v", err)
		}
	})
}
