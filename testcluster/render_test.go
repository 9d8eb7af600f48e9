package testcluster

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSummariesTable: cluster status in table mode is a table, one row per server.
func TestSummariesTable(t *testing.T) {
	sums := []ServerSummary{
		{Server: "bs0", IP: "10.0.0.1", Summary: json.RawMessage(`{"server":"bs0","nodes":16,"health":{"status":"healthy","healthy":16},"boot_seconds":{"count":16,"min":1.23,"median":2.5,"max":3.75}}`)},
		{Server: "bs1", IP: "10.0.0.2", Summary: json.RawMessage(`{"server":"bs1","nodes":16,"health":{"status":"booting","healthy":3,"booting":13}}`)},
	}
	var b strings.Builder
	if err := WriteSummaries(&b, sums); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || strings.Contains(b.String(), "{") {
		t.Fatalf("not a table of 2 servers:\n%s", b.String())
	}
	for i, want := range []string{"server ip nodes health healthy failed booting pending boot s min median max",
		"bs0 10.0.0.1 16 healthy 16 0 0 0 1.2 2.5 3.8", "bs1 10.0.0.2 16 booting 3 0 13 0 - - -"} {
		if got := strings.Join(strings.Fields(lines[i]), " "); got != want {
			t.Errorf("line %d: %q, want %q", i, got, want)
		}
	}
}

// TestMeasurementsTable: a row per mapping, the speed-up of the second over the first, and with
// nodes a table per mapping.
func TestMeasurementsTable(t *testing.T) {
	rs := []*Measurement{{Algo: "scda", Measured: 20, Predicted: 10, Nodes: []NodeCompare{{Node: "n0", Measured: 20}}}, {Algo: "bcda", Measured: 10, Predicted: 10}}
	for _, tc := range []struct {
		nodes bool
		want  string
	}{{false, "bcda/scda speed-up: measured 2.00, predicted 1.00 (+100.0%)\n"}, {true, "\nscda\n"}} {
		var b strings.Builder
		if err := WriteMeasurements(&b, rs, tc.nodes); err != nil || !strings.Contains(b.String(), tc.want) || strings.Contains(b.String(), "\nbcda\n") != tc.nodes {
			t.Errorf("nodes %v: %v, no %q in\n%s", tc.nodes, err, tc.want, b.String())
		}
	}
}
