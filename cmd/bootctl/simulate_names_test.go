package main

import (
	"strings"
	"testing"
)

// TestSimulateDHCPTimeName: --dhcp-time, the name bootctl boot gives the same parameter, sets the
// DHCP time; the old --dhcp still does the same, hidden from help; both at once are refused.
func TestSimulateDHCPTimeName(t *testing.T) {
	base := []string{"--topology", "mini", "--files", "image=10MB:none", "--health", "0s", "-o", "json"}
	outputs := map[string]string{}
	for _, tc := range []struct{ name, flag, value string }{
		{"new 2s", "--dhcp-time", "2s"}, {"old 2s", "--dhcp", "2s"}, {"new 0s", "--dhcp-time", "0s"},
	} {
		code, out, errs := simCtl(t, append(base, tc.flag, tc.value)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, errs)
		}
		outputs[tc.name] = out
	}
	if outputs["new 2s"] != outputs["old 2s"] {
		t.Error("--dhcp 2s and --dhcp-time 2s simulate different boots")
	}
	if outputs["new 2s"] == outputs["new 0s"] {
		t.Error("--dhcp-time changes nothing")
	}
	code, _, errs := simCtl(t, append(base, "--dhcp", "1s", "--dhcp-time", "1s")...)
	if code != 2 || !strings.Contains(errs, "--dhcp is the old name of --dhcp-time: give one") {
		t.Errorf("both names: exit %d, %q", code, errs)
	}
	_, help, _ := simCtl(t, "--help")
	if !strings.Contains(help, "--dhcp-time") || strings.Contains(help, "--dhcp value") {
		t.Errorf("help shows:\n%s", help)
	}
}
