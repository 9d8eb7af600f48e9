package bootapi

import (
	"fmt"
	"testing"

	"github.com/bootfabric/bootfabric/nodestate"
)

// TestMerge: one record per node, the highest attempt's; on a tie the server asked first; nodes in
// the order they first appear.
func TestMerge(t *testing.T) {
	n := func(name string, attempt int, st nodestate.State) nodestate.LiveNode {
		return nodestate.LiveNode{Name: name, Attempt: attempt, State: st}
	}
	tests := []struct {
		name  string
		lists [][]nodestate.LiveNode
		want  string
	}{
		{"no server", nil, ""},
		{"one server", [][]nodestate.LiveNode{{n("a", 1, nodestate.Healthy), n("b", 0, nodestate.Pending)}},
			"a:1:healthy@0 b:0:pending@0 "},
		{"disjoint servers keep every node", [][]nodestate.LiveNode{{n("a", 1, nodestate.Kernel)}, {n("b", 2, nodestate.Booted)}},
			"a:1:kernel@0 b:2:booted@1 "},
		{"a later attempt wins, wherever it is", [][]nodestate.LiveNode{{n("a", 1, nodestate.Healthy), n("b", 3, nodestate.NBP)}, {n("a", 2, nodestate.Discover), n("b", 2, nodestate.Healthy)}},
			"a:2:discover@1 b:3:nbp@0 "},
		{"a tie goes to the server asked first", [][]nodestate.LiveNode{{n("a", 2, nodestate.Pending)}, {n("a", 2, nodestate.Healthy)}},
			"a:2:pending@0 "},
		{"an empty answer changes nothing", [][]nodestate.LiveNode{{}, {n("a", 1, nodestate.Bound)}, nil},
			"a:1:bound@1 "},
		{"a server repeating a node is merged too", [][]nodestate.LiveNode{{n("a", 1, nodestate.Bound), n("a", 4, nodestate.Initrd)}},
			"a:4:initrd@0 "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			for _, m := range Merge(tc.lists, func(x *nodestate.LiveNode) (string, int) { return x.Name, x.Attempt }) {
				got += fmt.Sprintf("%s:%d:%s@%d ", m.Node.Name, m.Node.Attempt, m.Node.State, m.From)
			}
			if got != tc.want {
				t.Errorf("Merge = %q, want %q", got, tc.want)
			}
		})
	}
}
