package simrun

import (
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/fabricsim"
)

// TestPlanColumns: the flow, peer delivery and failure columns come with their options only, in
// the table and the CSV, and a row without a peer plan or an scda ratio shows it as such.
func TestPlanColumns(t *testing.T) {
	row := fabricsim.PlanRow{Batch: "1 board", Algo: "bcda", FlowSeconds: 12, Failed: "absent bs1", MovedNodes: 3}
	row.BandwidthMbps, row.BootSeconds = 400, 10
	row.Segments = []fabricsim.SegmentResult{{Name: "N1", MinMbps: 400}}
	for _, tc := range []struct {
		name      string
		plan      Plan
		csvHead   string
		csvRow    string
		tableHave []string
	}{
		{"plain", Plan{Topology: "mini", Segments: []string{"N1"}, Rows: []fabricsim.PlanRow{row}},
			"batch,nodes,algo,N1,bandwidth_mbps,bottlenecks,boot_seconds,speedup_vs_scda", "1 board,0,bcda,400.0000,400.0000,,10.0000,",
			[]string{"mini: 0 nodes, 0 boot servers; image 0 B;", "x scda", "10.0       -"}},
		{"flow", Plan{Segments: []string{"N1"}, Rows: []fabricsim.PlanRow{row}, Flow: true},
			"speedup_vs_scda,flow_mbps,flow_seconds", ",0.0000,12.0000", []string{"flow/analytic", "12.0          1.200"}},
		{"p2p and failures", Plan{Segments: []string{"N1"}, Rows: []fabricsim.PlanRow{row}, Delivery: fabricsim.P2PDelivery,
			Absent: []bool{false, true}, P2PServerBytes: 10e6, P2PRootBytes: 40e6},
			"p2p_speedup_vs_server,failed,moved_nodes", "-,-,-,-,-,-,absent bs1,3",
			[]string{"failed servers: absent bs1 (never up", "delivery p2p: 10 MB from the servers, then the root image (40 MB)", "absent bs1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := tc.plan.CSV()
			head, rec := strings.Join(rows[0], ","), strings.Join(rows[1], ",")
			if !strings.HasSuffix(head, tc.csvHead) || !strings.HasSuffix(rec, tc.csvRow) || len(rows[0]) != len(rows[1]) {
				t.Errorf("CSV:\n%s\n%s\nwant the header to end %q and the row %q", head, rec, tc.csvHead, tc.csvRow)
			}
			var b strings.Builder
			if err := tc.plan.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.tableHave {
				if !strings.Contains(b.String(), want) {
					t.Errorf("table:\n%s\nwant %q", b.String(), want)
				}
			}
		})
	}
}
