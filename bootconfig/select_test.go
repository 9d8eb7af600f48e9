package bootconfig

import (
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/internal/testfix"
)

// TestInventorySelect: "all", ranges in their order, and the errors of an empty set, a bad
// expression and names the inventory lacks (three quoted, then a count).
func TestInventorySelect(t *testing.T) {
	inv, err := ParseInventoryCSV([]byte(testfix.FlatInventoryCSV(4)), "inv.csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	first := inv.Nodes[0].Name
	for _, tc := range []struct {
		expr  string
		count int
		err   string
	}{
		{"all", 4, ""},
		{first, 1, ""},
		{"x[1-5]", 0, `"x1", "x2", "x3" and 2 more: not in the inventory inv.csv`},
		{"node[", 0, "node["},
	} {
		nodes, err := inv.Select(tc.expr)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.expr, err, tc.err)
			}
			continue
		}
		if err != nil || len(nodes) != tc.count {
			t.Errorf("%s: %d nodes, %v; want %d", tc.expr, len(nodes), err, tc.count)
		}
	}
}
