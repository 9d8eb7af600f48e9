package nodestate

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNext(t *testing.T) {
	type step struct {
		from    State
		ev      Event
		to      State
		changed bool
	}
	tests := []struct {
		name string
		step
	}{
		{"first discover", step{Pending, EvDiscover, Discover, true}},
		{"repeated discover before offer", step{Discover, EvDiscover, Discover, false}},
		{"offer", step{Discover, EvOffer, Offered, true}},
		{"offer without a seen discover", step{Pending, EvOffer, Offered, true}},
		{"discover again after offer retries", step{Offered, EvDiscover, Discover, true}},
		{"ack", step{Offered, EvAck, Bound, true}},
		{"discover after ack retries", step{Bound, EvDiscover, Discover, true}},
		{"nbp over tftp", step{Bound, EvNBP, NBP, true}},
		{"tsize probe changes nothing", step{Bound, EvProbe, Bound, false}},
		{"tsize probe in nbp changes nothing", step{NBP, EvProbe, NBP, false}},
		{"ipxe's own discover keeps nbp", step{NBP, EvDiscover, NBP, false}},
		{"ipxe's offer keeps nbp", step{NBP, EvOffer, NBP, false}},
		{"ipxe's ack keeps nbp", step{NBP, EvAck, NBP, false}},
		{"script fetch is nbp", step{Bound, EvScript, NBP, true}},
		{"script after nbp", step{NBP, EvScript, NBP, false}},
		{"kernel", step{NBP, EvKernel, Kernel, true}},
		{"initrd", step{Kernel, EvInitrd, Initrd, true}},
		{"kernel again after initrd", step{Initrd, EvKernel, Initrd, false}},
		{"http boot skips nbp", step{Bound, EvKernel, Kernel, true}},
		{"kernel's discover after initrd is booted", step{Initrd, EvDiscover, Booted, true}},
		{"kernel's discover without initrd is booted", step{Kernel, EvDiscover, Booted, true}},
		{"booted kernel's offer", step{Booted, EvOffer, Booted, false}},
		{"booted kernel's ack", step{Booted, EvAck, Booted, false}},
		{"health ok", step{Booted, EvHealthOK, Healthy, true}},
		{"health ok before booted", step{Initrd, EvHealthOK, Healthy, true}},
		{"health ok from pending", step{Pending, EvHealthOK, Healthy, true}},
		{"health failed", step{Booted, EvHealthFailed, Failed, true}},
		{"health failed of healthy", step{Healthy, EvHealthFailed, Failed, true}},
		{"health ok of failed", step{Failed, EvHealthOK, Healthy, true}},
		{"repeated health ok", step{Healthy, EvHealthOK, Healthy, false}},
		{"renewal of healthy (ack)", step{Healthy, EvAck, Healthy, false}},
		{"discover of healthy is an event", step{Healthy, EvDiscover, Healthy, false}},
		{"discover of booted is an event", step{Booted, EvDiscover, Booted, false}},
		{"asked-for reboot of healthy restarts", step{Healthy, EvRebootDiscover, Discover, true}},
		{"asked-for reboot of booted restarts", step{Booted, EvRebootDiscover, Discover, true}},
		{"asked-for reboot while the kernel loads is booted", step{Kernel, EvRebootDiscover, Booted, true}},
		{"asked-for reboot of nbp waits", step{NBP, EvRebootDiscover, NBP, false}},
		{"discover of failed restarts", step{Failed, EvDiscover, Discover, true}},
		{"transfer failure fails", step{NBP, EvTransferFailed, Failed, true}},
		{"transfer failure while bound", step{Bound, EvTransferFailed, Failed, true}},
		{"retried transfer recovers", step{Failed, EvNBP, NBP, true}},
		{"retried kernel recovers", step{Failed, EvKernel, Kernel, true}},
		{"stray failure of a healthy node", step{Healthy, EvTransferFailed, Healthy, false}},
		{"stray failure of a booted node", step{Booted, EvTransferFailed, Booted, false}},
		{"refused transfer moves nothing", step{Bound, EvTransferRefused, Bound, false}},
		{"refused transfer of a booting node", step{NBP, EvTransferRefused, NBP, false}},
		{"probe of failed", step{Failed, EvProbe, Failed, false}},
		{"unknown event", step{Bound, Event(200), Bound, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			to, changed := Next(tc.from, tc.ev)
			if got := (step{tc.from, tc.ev, to, changed}); got != tc.step {
				t.Errorf("Next(%v, %v) = %v, %v; want %v, %v", tc.from, tc.ev, to, changed, tc.to, tc.changed)
			}
		})
	}
}

// TestNextBootSequences runs whole boots through Next.
func TestNextBootSequences(t *testing.T) {
	tests := []struct {
		name   string
		events []Event
		want   []State // state after each event
	}{
		{
			name: "BIOS PXE then iPXE over HTTP",
			events: []Event{EvDiscover, EvOffer, EvAck, EvNBP, EvDiscover, EvOffer, EvAck, EvScript, EvKernel, EvInitrd,
				EvDiscover, EvOffer, EvAck, EvHealthOK},
			want: []State{Discover, Offered, Bound, NBP, NBP, NBP, NBP, NBP, Kernel, Initrd,
				Booted, Booted, Booted, Healthy},
		},
		{
			name:   "UEFI tsize probe then the real transfer",
			events: []Event{EvDiscover, EvOffer, EvAck, EvProbe, EvNBP},
			want:   []State{Discover, Offered, Bound, Bound, NBP},
		},
		{
			name:   "spoofed discover of a healthy node",
			events: []Event{EvHealthOK, EvDiscover, EvOffer, EvAck},
			want:   []State{Healthy, Healthy, Healthy, Healthy},
		},
		{
			name:   "asked-for reboot of a healthy node",
			events: []Event{EvHealthOK, EvRebootDiscover, EvOffer, EvAck},
			want:   []State{Healthy, Discover, Offered, Bound},
		},
		{
			name:   "udhcpc, curl tftp, health",
			events: []Event{EvDiscover, EvOffer, EvAck, EvNBP, EvHealthOK},
			want:   []State{Discover, Offered, Bound, NBP, Healthy},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []State
			s := Pending
			for _, ev := range tc.events {
				s, _ = Next(s, ev)
				got = append(got, s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStateText(t *testing.T) {
	for _, s := range States() {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back State
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("%v: round trip gave %v, %v", s, back, err)
		}
	}
	if _, err := ParseState("bogus"); err == nil {
		t.Error("ParseState(bogus) succeeded")
	}
	for ev := EvDiscover; ev < numEvents; ev++ {
		b, _ := json.Marshal(ev)
		var back Event
		if err := json.Unmarshal(b, &back); err != nil || back != ev {
			t.Errorf("%v: round trip gave %v, %v", ev, back, err)
		}
	}
}
