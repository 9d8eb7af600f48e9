package main

import (
	"strings"
	"testing"
)

// TestReportP2P: --delivery p2p adds the peer delivery section beside the boot by servers, in
// Markdown, HTML, CSV and JSON; bad values exit 2.
func TestReportP2P(t *testing.T) {
	args := []string{"report", "--flow=false", "--algo", "bcda", "--batch", "1,40cabinets", "--delivery", "p2p", "--out", "-"}
	tests := []struct {
		format string
		want   []string
	}{
		{"markdown", []string{"## Peer delivery", "| 40 cabinets | 40960 | bcda | 102.40 | 21.09 | 20.48 | 0.61 | N3 | 1 copy per server | 4.86 |"}},
		{"html", []string{"<h2>Peer delivery</h2>", "<td>21.09</td>"}},
		{"csv", []string{"p2p_seconds,p2p_root_bottlenecks,p2p_seeding", ",21.0864,N3,1 copy per server"}},
		{"json", []string{`"delivery": "p2p"`, `"schedule": "swarm"`}},
	}
	for _, tc := range tests {
		t.Run(tc.format, func(t *testing.T) {
			code, out, errs := bootctl(t, append(args, "-o", tc.format)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s output lacks %q", tc.format, w)
				}
			}
		})
	}
	code, out, _ := bootctl(t, "report", "--flow=false", "--algo", "bcda", "--batch", "1", "--out", "-", "-o", "markdown")
	if code != 0 || strings.Contains(out, "Peer delivery") {
		t.Errorf("default delivery (exit %d): the peer delivery section is there", code)
	}
	code, _, errs := bootctl(t, "report", "--delivery", "pp2", "--out", "-", "-o", "json")
	if code != 2 || !strings.Contains(errs, `--delivery: "pp2" is not one of server, p2p (did you mean p2p?)`) {
		t.Errorf("bad delivery: exit %d, %q", code, errs)
	}
}
