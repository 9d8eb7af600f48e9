package nodestate

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// manualClock reads the time it was set to.
type manualClock struct{ t time.Time }

func (c *manualClock) now() time.Time { return c.t }

// TestTrackerLazyDHCPSave: a DHCP handshake alone is saved within lazyFlush, not with the next
// flush; any later state (a boot file) and a health report go out with the next flush and take
// the handshake with them; Flush (shutdown) saves everything.
func TestTrackerLazyDHCPSave(t *testing.T) {
	clock := &manualClock{t: time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)}
	store := &flakyStore{saved: map[string]State{}}
	nodes := testNodes(t, 3)
	tr, err := NewTracker(nodes, "default", TrackerOptions{Store: store, Flush: time.Second, Now: clock.now, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Flush(); err != nil { // the first save records every node
		t.Fatal(err)
	}
	due := func() error { return tr.flush(clock.now().Add(-lazyFlush)) }
	a, b, c := nodes[0], nodes[1], nodes[2]
	for _, n := range nodes {
		if !tr.ObserveDHCP(n.MAC, []Event{EvDiscover, EvOffer}, netip.Addr{}, "dhcp discover: offered", ClientUnknown) {
			t.Fatalf("%s not tracked by MAC", n.Name)
		}
	}
	tr.ObserveDHCP(a.MAC, []Event{EvAck}, netip.Addr{}, "dhcp request: acked", ClientUnknown)
	clock.t = clock.t.Add(time.Second)
	if err := due(); err != nil {
		t.Fatal(err)
	}
	want := map[string]State{a.Name: Pending, b.Name: Pending, c.Name: Pending}
	if diff := cmp.Diff(want, store.saved); diff != "" {
		t.Fatalf("after 1 s the handshakes must wait (-want +saved):\n%s", diff)
	}
	// b gets its boot file: urgent, saved by the next flush with its whole record.
	if _, _, err := tr.Observe(b.Name, EvNBP, "tftp ipxe.efi"); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Report(c.Name, Health{Status: "failed"}); err != nil {
		t.Fatal(err)
	}
	if err := due(); err != nil {
		t.Fatal(err)
	}
	want = map[string]State{a.Name: Pending, b.Name: NBP, c.Name: Failed}
	if diff := cmp.Diff(want, store.saved); diff != "" {
		t.Fatalf("urgent changes (-want +saved):\n%s", diff)
	}
	clock.t = clock.t.Add(lazyFlush)
	if err := due(); err != nil {
		t.Fatal(err)
	}
	want[a.Name] = Bound
	if diff := cmp.Diff(want, store.saved); diff != "" {
		t.Fatalf("after lazyFlush the handshake is saved (-want +saved):\n%s", diff)
	}
	tr.ObserveDHCP(a.MAC, []Event{EvDiscover, EvOffer}, netip.Addr{}, "dhcp discover: offered", ClientUnknown)
	if err := tr.Flush(); err != nil {
		t.Fatal(err)
	}
	want[a.Name] = Offered
	if diff := cmp.Diff(want, store.saved); diff != "" {
		t.Fatalf("Flush saves lazy changes at once (-want +saved):\n%s", diff)
	}
}

// TestTrackerLazySaveFailure: lazy changes whose save failed are saved by a later flush.
func TestTrackerLazySaveFailure(t *testing.T) {
	clock := &manualClock{t: time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)}
	store := &flakyStore{saved: map[string]State{}}
	nodes := testNodes(t, 1)
	tr, err := NewTracker(nodes, "default", TrackerOptions{Store: store, Flush: time.Second, Now: clock.now, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Flush(); err != nil {
		t.Fatal(err)
	}
	tr.ObserveDHCP(nodes[0].MAC, []Event{EvDiscover, EvOffer}, netip.Addr{}, "", ClientUnknown)
	store.set(true)
	if err := tr.Flush(); err == nil {
		t.Fatal("save to a store that is down succeeded")
	}
	store.set(false)
	due := func() error { return tr.flush(clock.now().Add(-lazyFlush)) }
	clock.t = clock.t.Add(time.Second)
	if err := due(); err != nil {
		t.Fatal(err)
	}
	if got := store.state(nodes[0].Name); got != Pending {
		t.Fatalf("saved %v: a failed lazy save must stay lazy", got)
	}
	clock.t = clock.t.Add(lazyFlush)
	if err := due(); err != nil {
		t.Fatal(err)
	}
	if got := store.state(nodes[0].Name); got != Offered {
		t.Fatalf("saved %v after lazyFlush, want offered", got)
	}
}

// TestTrackerDHCPRetryHistory: a node that loops in DHCP (a handshake, then DISCOVER again, no
// boot file) keeps its last boot in the history and one handshake, however long it loops; the
// attempt counter counts the loops.
func TestTrackerDHCPRetryHistory(t *testing.T) {
	nodes := testNodes(t, 1)
	clock := &fakeClock{t: time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)}
	// reset_on_discover: the loops' DISCOVERs start new attempts even from healthy (without it,
	// or the operator's reboot request, they would only be events).
	tr, err := NewTracker(nodes, "default", TrackerOptions{Now: clock.now, Registerer: prometheus.NewRegistry(), ResetOnDiscover: true})
	if err != nil {
		t.Fatal(err)
	}
	name := nodes[0].Name
	for _, ev := range []Event{EvDiscover, EvOffer, EvAck, EvNBP, EvDiscover, EvOffer, EvAck, EvScript, EvKernel, EvInitrd, EvDiscover, EvHealthOK} {
		if _, _, err := tr.Observe(name, ev, ""); err != nil {
			t.Fatal(err)
		}
	}
	booted, _ := tr.Node(name)
	for i := 0; i < 100; i++ {
		for _, ev := range []Event{EvDiscover, EvOffer, EvAck} {
			tr.Observe(name, ev, "")
		}
	}
	n, _ := tr.Node(name)
	type step struct{ From, To State }
	var got []step
	for _, h := range n.History {
		got = append(got, step{h.From, h.To})
	}
	var want []step
	for _, h := range booted.History {
		want = append(want, step{h.From, h.To})
	}
	want = append(want, step{Healthy, Discover}, step{Bound, Discover}, step{Discover, Offered}, step{Offered, Bound})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("history after 100 DHCP loops (-want +got):\n%s", diff)
	}
	if n.Attempt != booted.Attempt+100 {
		t.Fatalf("attempt %d, want %d", n.Attempt, booted.Attempt+100)
	}
	// A reboot of a healthy node is a new attempt that keeps the old boot's entries.
	if want[len(want)-5].To != Healthy {
		t.Fatalf("the last boot's healthy entry is not kept: %v", want)
	}
}
