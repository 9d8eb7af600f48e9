package topology

import (
	"fmt"
	"strings"
	"testing"
)

func flatNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("node%02d", i+1)
	}
	return names
}

// TestFlatMachine checks the flat machine of a cluster without a topology file: one switch per 48
// nodes at most, servers on the core, the nodes named as given and found by those names.
func TestFlatMachine(t *testing.T) {
	for _, tc := range []struct {
		nodes, servers, switches, per int
	}{
		{12, 1, 1, 12}, {48, 2, 1, 48}, {49, 1, 2, 25}, {100, 3, 3, 34},
	} {
		m := Flat(flatNames(tc.nodes), tc.servers)
		g, err := m.Build()
		if err != nil {
			t.Fatalf("%d nodes: %v", tc.nodes, err)
		}
		h := g.Hierarchy()
		if h.Total(0) != tc.switches || h.Span(0) != tc.per {
			t.Errorf("%d nodes: %d switches of %d, want %d of %d", tc.nodes, h.Total(0), h.Span(0), tc.switches, tc.per)
		}
		if got := len(g.Servers()); got != tc.servers {
			t.Errorf("%d nodes: %d servers, want %d", tc.nodes, got, tc.servers)
		}
		if got := g.VertexName(g.Nodes()[tc.nodes-1]); got != fmt.Sprintf("node%02d", tc.nodes) {
			t.Errorf("%d nodes: last node named %q", tc.nodes, got)
		}
		if i, err := h.ParseNode("node01"); err != nil || i != 0 {
			t.Errorf("ParseNode(node01) = %d, %v", i, err)
		}
		if tc.switches*tc.per > tc.nodes {
			spare := h.NodeName(tc.nodes)
			if !strings.HasPrefix(spare, "sw") {
				t.Errorf("spare position named %q, want its position", spare)
			}
		}
	}
}

// TestFlatNamesClash refuses a name that is the position name of a spare position: a name must
// find one node.
func TestFlatNamesClash(t *testing.T) {
	names := flatNames(11) // one switch of 11: no spare
	if _, err := Flat(names, 1).Build(); err != nil {
		t.Fatal(err)
	}
	names = append(flatNames(48), "sw1-n24") // 49 on 2 switches of 25: position 49 is sw1-n24
	if _, err := Flat(names, 1).Build(); err == nil || !strings.Contains(err.Error(), `"sw1-n24"`) {
		t.Errorf("clash: err = %v", err)
	}
	if _, err := Flat([]string{"a", "a"}, 1).Build(); err == nil {
		t.Error("duplicate names: no error")
	}
}
