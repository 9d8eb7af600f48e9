package nodestate

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestNextOnDiscover: an armed reboot wins over every state (issue 37: a node stuck in nbp, kernel
// or initrd could not be rebooted); unarmed, a DISCOVER mid-boot moves no attempt, and after the
// kernel only the booted system's DHCP client means booted (firmware asking again moved the node
// to booted before).
func TestNextOnDiscover(t *testing.T) {
	fw, ipxe, os := Discovery{From: ClientFirmware}, Discovery{From: ClientIPXE}, Discovery{From: ClientOS}
	armed := Discovery{From: ClientOS, Armed: true}
	for _, tc := range []struct {
		name string
		cur  State
		ev   Event
		d    Discovery
		want State
		chg  bool
	}{
		{"nbp, iPXE after the firmware loaded it", NBP, EvDiscover, ipxe, NBP, false},
		{"nbp, firmware again (or a spoof): the attempt goes on", NBP, EvDiscover, fw, NBP, false},
		{"kernel, booted system", Kernel, EvDiscover, os, Booted, true},
		{"initrd, booted system", Initrd, EvDiscover, os, Booted, true},
		{"kernel, firmware again: not booted", Kernel, EvDiscover, fw, Kernel, false},
		{"initrd, iPXE again: not booted", Initrd, EvDiscover, ipxe, Initrd, false},
		{"kernel, unknown client", Kernel, EvDiscover, Discovery{}, Booted, true},
		{"healthy, firmware: only an event", Healthy, EvDiscover, fw, Healthy, false},
		{"booted, reset on discover", Booted, EvRebootDiscover, fw, Discover, true},
		{"nbp, armed", NBP, EvRebootDiscover, armed, Discover, true},
		{"kernel, armed", Kernel, EvRebootDiscover, armed, Discover, true},
		{"initrd, armed", Initrd, EvRebootDiscover, armed, Discover, true},
		{"discover, armed: a new attempt all the same", Discover, EvRebootDiscover, armed, Discover, true},
		{"bound, firmware retry", Bound, EvDiscover, fw, Discover, true},
		{"failed, any", Failed, EvDiscover, os, Discover, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, chg := NextOnDiscover(tc.cur, tc.ev, tc.d)
			if got != tc.want || chg != tc.chg {
				t.Errorf("NextOnDiscover(%v, %v, %+v) = %v, %v; want %v, %v", tc.cur, tc.ev, tc.d, got, chg, tc.want, tc.chg)
			}
		})
	}
}

// TestArmedRebootMidBoot: through the tracker, a reboot armed while the node is in nbp starts a
// new attempt at its next DISCOVER, whoever sends it, and clears itself.
func TestArmedRebootMidBoot(t *testing.T) {
	nodes := testNodes(t, 1)
	tr, err := NewTracker(nodes, "default", TrackerOptions{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	name := nodes[0].Name
	tr.ObserveDHCP(nodes[0].MAC, []Event{EvDiscover, EvOffer, EvAck}, nodes[0].IP, "dhcp", ClientFirmware)
	if _, _, err := tr.Observe(name, EvScript, "script"); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.RequestReboot(name); err != nil {
		t.Fatal(err)
	}
	tr.ObserveDHCP(nodes[0].MAC, []Event{EvDiscover, EvOffer}, nodes[0].IP, "dhcp", ClientUnknown)
	st, _ := tr.Node(name)
	if st.State != Offered || st.Attempt != 2 || st.RebootRequested || len(st.Served) != 0 {
		t.Errorf("after the armed DISCOVER: %v attempt %d armed %v served %v; want offered, attempt 2, disarmed", st.State, st.Attempt, st.RebootRequested, st.Served)
	}
}

// TestPowerOff: a node the operator powered off is no longer healthy (issue 37: it stayed
// healthy in status, and bootctl boot skipped it): it is pending and marked powered off, its old
// attempt is closed, and its next DISCOVER, armed or not, starts a new attempt and clears the mark.
func TestPowerOff(t *testing.T) {
	nodes := testNodes(t, 1)
	tr, err := NewTracker(nodes, "default", TrackerOptions{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	name := nodes[0].Name
	tr.ObserveDHCP(nodes[0].MAC, []Event{EvDiscover, EvOffer, EvAck}, nodes[0].IP, "dhcp", ClientFirmware)
	for _, ev := range []Event{EvScript, EvKernel, EvInitrd} {
		if _, _, err := tr.Observe(name, ev, ""); err != nil {
			t.Fatal(err)
		}
	}
	tr.ObserveDHCP(nodes[0].MAC, []Event{EvDiscover}, nodes[0].IP, "dhcp", ClientOS)
	if _, err := tr.Report(name, Health{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := tr.Node(name); st.State != Healthy || st.Attempt != 1 {
		t.Fatalf("before: %v attempt %d", st.State, st.Attempt)
	}
	st, err := tr.PowerOff(name)
	if err != nil {
		t.Fatal(err)
	}
	last := st.History[len(st.History)-1]
	if st.State != Pending || !st.PoweredOff || st.AttemptOpen() || last.Event != EvPowerOff || last.From != Healthy {
		t.Errorf("after power off: %v powered off %v open %v, last transition %+v", st.State, st.PoweredOff, st.AttemptOpen(), last)
	}
	if _, err := tr.PowerOff("nobody"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("power off of an unknown node: %v", err)
	}
	tr.ObserveDHCP(nodes[0].MAC, []Event{EvDiscover, EvOffer}, nodes[0].IP, "dhcp", ClientFirmware)
	if st, _ := tr.Node(name); st.State != Offered || st.Attempt != 2 || st.PoweredOff {
		t.Errorf("after its next DISCOVER: %v attempt %d powered off %v; want offered, attempt 2, not off", st.State, st.Attempt, st.PoweredOff)
	}
}
