package topology

import (
	"slices"
	"strings"
	"testing"
)

func TestClipBatches(t *testing.T) {
	batches := []Batch{{Label: "all", Nodes: []int{0, 1, 2, 3, 4}}, {Label: "sw1", Nodes: []int{3, 4}}}
	got, err := ClipBatches(batches[:1], 3)
	if err != nil || len(got) != 1 || !slices.Equal(got[0].Nodes, []int{0, 1, 2}) || got[0].Label != "all" {
		t.Errorf("ClipBatches = %v, %v; want all with nodes 0-2", got, err)
	}
	if _, err := ClipBatches(batches, 3); err == nil || err.Error() != "sw1: no node of the inventory's 3, only spare switch ports of the flat machine" {
		t.Errorf("a batch of spare ports alone: %v", err)
	}
}

func TestFindBatch(t *testing.T) {
	batches := []Batch{{Label: "1 board"}, {Label: "2 boards"}, {Label: "3"}}
	for _, tc := range []struct {
		s    string
		want int
		err  string
	}{
		{"2 boards", 1, ""}, {"1", 0, ""}, {"3", 2, ""}, // a label wins over a position
		{"4", 0, `"4" is neither a batch of the ladder ("1 board", "2 boards", "3") nor a position 1-3`},
		{"0", 0, `"0" is neither`}, {"x", 0, `"x" is neither`},
	} {
		got, err := FindBatch(batches, tc.s)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.HasPrefix(err.Error(), tc.err)) {
			t.Errorf("FindBatch(%q) = %d, %v; want %d, %q", tc.s, got, err, tc.want, tc.err)
		}
	}
}
