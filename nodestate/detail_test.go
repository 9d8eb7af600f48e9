package nodestate

import (
	"strings"
	"testing"
)

// TestDetailMarks: a node the operator powered off and an armed reboot show in the detail, before
// its error or last detail, and in the power and reboot marks.
func TestDetailMarks(t *testing.T) {
	off := []Transition{{From: Healthy, To: Pending, Event: EvPowerOff, Detail: "powered off by the operator"}}
	long := strings.Repeat("x", 70)
	for _, tc := range []struct {
		name          string
		n             NodeStatus
		detail        string
		power, reboot string
	}{
		{"plain", NodeStatus{State: Healthy}, "", "", ""},
		{"last detail", NodeStatus{State: Booted, History: []Transition{{Detail: "kernel fetched"}}}, "kernel fetched", "", ""},
		{"long error", NodeStatus{State: Failed, Error: long}, long[:57] + "...", "", ""},
		{"powered off", NodeStatus{State: Pending, PoweredOff: true, History: off}, "powered off", "off", ""},
		{"off and armed", NodeStatus{State: Pending, PoweredOff: true, RebootRequested: true, History: off}, "powered off, reboot armed", "off", "armed"},
		{"armed, failed", NodeStatus{State: Failed, RebootRequested: true, Error: "kernel: timeout"}, "reboot armed; kernel: timeout", "", "armed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.n.Detail(); got != tc.detail {
				t.Errorf("detail %q, want %q", got, tc.detail)
			}
			if p, r := tc.n.Marks(); p != tc.power || r != tc.reboot {
				t.Errorf("marks %q %q, want %q %q", p, r, tc.power, tc.reboot)
			}
		})
	}
}
