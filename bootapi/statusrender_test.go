package bootapi

import (
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/nodestate"
)

// TestStatusTables: the table shows each node's time in its state as of now, its detail, the
// unknown nodes and the servers that did not answer; the CSV the same nodes with their marks.
func TestStatusTables(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	res := &Status{Summary: nodestate.Summary{Server: "all", Nodes: 1}, ByState: map[nodestate.State]int{nodestate.Failed: 1},
		Nodes:       []nodestate.NodeStatus{{Name: "n0", State: nodestate.Failed, Since: now.Add(-90 * time.Second), Error: "kernel: timeout", PoweredOff: true}},
		Unknown:     []UnknownNode{{Name: "n1", Reason: "no live server owns it"}},
		Unreachable: []ServerFailure{{URL: "http://b", Error: "refused"}}, UnknownCount: 1, Fleet: "f", Members: []FleetMember{{Name: "bs0"}}}
	for _, tc := range []struct {
		name  string
		write func(*strings.Builder) error
		want  []string
	}{
		{"table", func(b *strings.Builder) error { return res.WriteTable(b, now) },
			[]string{"all: 1 nodes, health", "by state: failed 1, unknown 1\n", "fleet f: 1 live servers (bs0)\n", "NOT ANSWERING: http://b (refused)\n",
				"1m30s ago", "powered off; kernel: timeout", "no live server owns it"}},
		{"csv", func(b *strings.Builder) error { return res.WriteCSV(b) },
			[]string{"node,server,state,since", "n0,,failed,2025-12-31T23:59:30Z,0,,,,kernel: timeout,off,\n", "n1,,unknown,,,,,,no live server owns it,,\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := tc.write(&b); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.want {
				if !strings.Contains(b.String(), s) {
					t.Errorf("no %q in\n%s", s, b.String())
				}
			}
		})
	}
}
