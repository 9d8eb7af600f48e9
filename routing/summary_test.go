package routing

import (
	"strings"
	"testing"
	"time"
)

// TestSummaryTable: the compute time is a row only when it is given (timings), and the dump's
// rows only with a dump.
func TestSummaryTable(t *testing.T) {
	rep := &Report{Switches: 8, Endpoints: 16, Healthy: 16, Valid: true, VCs: 1, DeadlockFree: true}
	for _, tc := range []struct {
		name     string
		sum      Summary
		have     []string
		haveNone []string
	}{
		{"plain", Summary{Topology: "pgft", Engine: "dmodc", Report: rep},
			[]string{"topology  pgft", "endpoints  16 (16 healthy)", "deadlock free  true"}, []string{"compute", "dump"}},
		{"timed, dumped", Summary{Report: rep, Took: 1500 * time.Nanosecond, DumpFiles: []string{"a", "a.sl"}, DumpCheck: &DumpCheck{Paths: 240}},
			[]string{"compute  2µs", "dump  a, a.sl", "dump read back  240 pairs"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := tc.sum.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			flat := strings.Join(strings.Fields(b.String()), " ")
			for _, want := range tc.have {
				if !strings.Contains(flat, strings.Join(strings.Fields(want), " ")) {
					t.Errorf("table:\n%s\nwant %q", b.String(), want)
				}
			}
			for _, not := range tc.haveNone {
				if strings.Contains(b.String(), not) {
					t.Errorf("table:\n%s\nhas %q", b.String(), not)
				}
			}
		})
	}
}
