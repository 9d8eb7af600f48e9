package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/fabricsim/simrun"
)

// TestPlanP2P: --delivery p2p adds the boot by peers beside each row's boot by servers, in the
// table, the CSV and the JSON, the same bytes on every run; on the whole paper machine under
// bcda, 21.09 s (20.48 s of kernel from the servers, 0.61 s of root image) against 102.4 s.
func TestPlanP2P(t *testing.T) {
	args := []string{"plan", "--delivery", "p2p", "--algo", "bcda", "--batch", "1,40cabinets"}
	tests := []struct {
		format string
		want   []string
	}{
		{"table", []string{"delivery p2p: 10 MB from the servers, then the root image (40 MB) by peers", "p2p s", "x server",
			"40 cabinets  40960  bcda", "102.4 - 21.09 20.48 0.61 N3 1 copy per server 4.86"}},
		{"csv", []string{"p2p_seconds,p2p_server_seconds,p2p_root_seconds,p2p_root_bottlenecks,p2p_seeding", "21.0864,20.4800,0.6064,N3,1 copy per server,4.8562"}},
		{"json", []string{`"delivery": "p2p"`, `"schedule": "swarm"`, `"server_copies": 160`}},
	}
	for _, tc := range tests {
		t.Run(tc.format, func(t *testing.T) {
			code, out, errs := bootctl(t, append(args, "--output", tc.format)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			flat := strings.Join(strings.Fields(out), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			_, again, _ := bootctl(t, append(args, "--output", tc.format)...)
			if again != out {
				t.Error("two runs differ")
			}
		})
	}
	code, out, errs := bootctl(t, "plan", "--algo", "bcda", "--batch", "1", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res simrun.Plan
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Delivery.String() != "server" || res.Rows[0].P2P != nil {
		t.Errorf("default delivery %s with p2p %v, want server without", res.Delivery, res.Rows[0].P2P)
	}
}
