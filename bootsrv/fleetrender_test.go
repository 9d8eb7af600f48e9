package bootsrv

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFleetTables: what `fleet apply` and `fleet status` print says what happened and lists
// every server, with "-" where a cell has nothing.
func TestFleetTables(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		write func(*strings.Builder) error
		want  []string
	}{
		{"dry run", (&FleetApplyResult{Fleet: "f", DryRun: true, SHA256: "abc", Bytes: 10, Nodes: 1, Mapping: "bcda",
			Servers: []FleetServerRow{{Name: "bs0", Address: "10.0.0.1", Nodes: 1, Failed: true}}}).writeTo,
			[]string{"fleet f: dry run, nothing written; sha256 abc (10 bytes)\n", "1 server, 1 node (bcda), 0 profiles\n", "failed_servers"}},
		{"applied", (&FleetApplyResult{Fleet: "f", Changed: true, Number: 2, Revision: 9, Key: "k1",
			Applied: []ServerVerdict{{Name: "bs0", State: VerdictApplied}}}).writeTo,
			[]string{"configuration 2 applied (etcd revision 9), signed by key k1", "servers: applied by bs0\n"}},
		{"status", (&FleetStatus{Fleet: "f", Number: 1, Revision: 3, SHA256: "0123456789abcdef", Nodes: 4, Unowned: 4, Takeovers: 1,
			Servers: []FleetServerStatus{{Name: "bs0", State: FleetDead, LastSeen: at}},
			Recent:  []FleetTakeover{{Seq: 1, TakeoverEvent: TakeoverEvent{From: "bs0", To: "bs1", At: at}}}}).writeTo,
			[]string{"sha256 0123456789ab; 4 nodes", "no live server owns 4 of the 4 nodes", "2026-03-04T05:06:07Z", "takeovers: 1\n", "MID-BOOT"}},
	} {
		var b strings.Builder
		err := tc.write(&b)
		missing := slices.DeleteFunc(slices.Clone(tc.want), func(s string) bool { return strings.Contains(b.String(), s) })
		if err != nil || len(missing) > 0 {
			t.Errorf("%s: %v; missing %q in\n%s", tc.name, err, missing, b.String())
		}
	}
}

func (r *FleetApplyResult) writeTo(b *strings.Builder) error { return r.WriteTable(b) }
func (st *FleetStatus) writeTo(b *strings.Builder) error     { return st.WriteTable(b) }
