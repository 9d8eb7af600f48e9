package nodestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeClock advances one second at every reading.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { c.t = c.t.Add(time.Second); return c.t }

// testNodes returns n nodes: node i is nodeNN with MAC 52:54:00:00:i/256:i%256 and IP
// 10.0.0.(10+i) (carried into the third byte past 245).
func testNodes(t testing.TB, n int) []Node {
	t.Helper()
	out := make([]Node, n)
	for i := range out {
		mac, err := net.ParseMAC(fmt.Sprintf("52:54:00:00:%02x:%02x", i/256, i%256))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = Node{Name: fmt.Sprintf("node%02d", i), MAC: mac, IP: netip.AddrFrom4([4]byte{10, byte((10 + i) >> 16), byte((10 + i) >> 8), byte(10 + i)}), Position: fmt.Sprintf("n%d", i)}
	}
	return out
}

// TestTrackerRestart: a tracker records a boot (node00 healthy, node01 failed) in its store; a new
// tracker on the same store sees the same states; a DISCOVER restarts a healthy node's boot only
// once a reboot was asked for; an inventory change drops or restarts what no longer matches.
func TestTrackerRestart(t *testing.T) {
	store := newMemStore()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)}
	nodes := testNodes(t, 3)
	tr, err := NewTracker(nodes, "default", TrackerOptions{Store: store, Flush: 0, Now: clock.now, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	bootNode00Node01(t, tr)
	before := tr.Nodes()
	checkBootRecords(t, before)

	// Restart: a new tracker on the same store sees the same states.
	tr2, err := NewTracker(nodes, "default", TrackerOptions{Store: store, Now: clock.now, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, tr2.Nodes()); diff != "" {
		t.Errorf("after restart (-before +after):\n%s", diff)
	}
	if got := testutil.ToFloat64(tr2.gauge.WithLabelValues("failed")); got != 1 {
		t.Errorf("failed gauge after restart = %v", got)
	}
	checkRebootRequest(t, tr2)
	checkInventoryChange(t, tr2, store, nodes)
}

// bootNode00Node01 boots node00 to healthy and fails node01's transfer; an unknown node and an
// unknown health status are refused; the gauges count one healthy and one pending node.
func bootNode00Node01(t *testing.T, tr *Tracker) {
	for _, ev := range []Event{EvDiscover, EvOffer, EvAck, EvProbe, EvNBP, EvScript, EvKernel, EvInitrd, EvDiscover} {
		if _, _, err := tr.Observe("node00", ev, ev.String()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tr.Report("node00", Health{Status: "ok", Details: json.RawMessage(`{"load":0.1}`)}); err != nil {
		t.Fatal(err)
	}
	tr.Observe("node01", EvDiscover, "")
	tr.Observe("node01", EvTransferFailed, "tftp ipxe.efi: timeout")
	if _, _, err := tr.Observe("nobody", EvDiscover, ""); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("unknown node: %v", err)
	}
	if _, err := tr.Report("node02", Health{Status: "maybe"}); err == nil {
		t.Error("status maybe accepted")
	}
	if got := testutil.ToFloat64(tr.gauge.WithLabelValues("healthy")); got != 1 {
		t.Errorf("healthy gauge = %v", got)
	}
	if got := testutil.ToFloat64(tr.gauge.WithLabelValues("pending")); got != 1 {
		t.Errorf("pending gauge = %v", got)
	}
}

// checkBootRecords checks what bootNode00Node01 left: node00 healthy in its first attempt with
// its report and a timestamp for each state, later for each later state; node01 failed with the
// transfer's error.
func checkBootRecords(t *testing.T, nodes []NodeStatus) {
	n0 := nodes[0]
	if n0.State != Healthy || n0.Attempt != 1 || len(n0.Times) != 8 || n0.Health == nil || string(n0.Health.Details) != `{"load":0.1}` {
		t.Errorf("node00 = %+v", n0)
	}
	for i, s := range States()[2:Healthy] {
		if prev := States()[i+1]; !n0.Times[s].After(n0.Times[prev]) {
			t.Errorf("entered %v at %v, not after %v at %v", s, n0.Times[s], prev, n0.Times[prev])
		}
	}
	if nodes[1].State != Failed || nodes[1].Error != "tftp ipxe.efi: timeout" {
		t.Errorf("node01 = %+v", nodes[1])
	}
}

// checkRebootRequest: a DISCOVER of the healthy node is only an event; once the operator asked
// for a reboot it starts a new attempt with fresh timestamps, and the request is spent.
func checkRebootRequest(t *testing.T, tr *Tracker) {
	tr.Observe("node00", EvDiscover, "")
	if n, _ := tr.Node("node00"); n.State != Healthy || n.LastEvent != EvDiscover {
		t.Errorf("after a DISCOVER nobody asked for: %+v", n)
	}
	if _, err := tr.RequestReboot("node00"); err != nil {
		t.Fatal(err)
	}
	tr.Observe("node00", EvDiscover, "")
	if n, _ := tr.Node("node00"); n.State != Discover || n.Attempt != 2 || len(n.Times) != 1 || n.RebootRequested {
		t.Errorf("after reboot: %+v", n)
	}
}

// checkInventoryChange flushes tr and opens a tracker on an inventory where node00's MAC changed
// and node02 is gone: node00 starts afresh, node01 keeps its state, node02's record is dropped.
func checkInventoryChange(t *testing.T, tr *Tracker, store *memStore, nodes []Node) {
	changed := nodes[0]
	changed.MAC = append([]byte(nil), nodes[0].MAC...)
	changed.MAC[5] = 0xee
	tr.Flush()
	tr3, err := NewTracker([]Node{changed, nodes[1]}, "default", TrackerOptions{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if got := tr3.Nodes(); len(got) != 2 || got[0].State != Pending || got[1].State != Failed {
		t.Errorf("after inventory change: %+v", got)
	}
	saved, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(saved) != 2 || byName(saved)["node02"].Name != "" {
		t.Errorf("saved after inventory change: %d nodes (node02 should be gone)", len(saved))
	}
}

func TestTrackerBatchedFlush(t *testing.T) {
	store := newMemStore()
	tr, err := NewTracker(testNodes(t, 2), "default", TrackerOptions{Store: store, Flush: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	tr.Observe("node00", EvDiscover, "")
	// Written within the flush interval, without stopping.
	testfix.WaitFor(t, "node00's discover saved", 5*time.Second, func() bool {
		saved, err := store.Load()
		return err == nil && len(saved) == 2 && byName(saved)["node00"].State == Discover
	})
	tr.Observe("node01", EvDiscover, "")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	saved, _ := store.Load()
	if n := byName(saved)["node01"]; n.State != Discover {
		t.Errorf("last change not saved at stop: %+v", n)
	}
	// After Stop, changes stay in memory (the store may be closed).
	tr.Stop()
	store.Close()
	if _, _, err := tr.Observe("node01", EvOffer, ""); err != nil {
		t.Errorf("observe after stop: %v", err)
	}
}

func byName(list []NodeStatus) map[string]NodeStatus {
	m := map[string]NodeStatus{}
	for _, n := range list {
		m[n.Name] = n
	}
	return m
}

func TestLearnIP(t *testing.T) {
	tr, _ := NewTracker(testNodes(t, 1), "default", TrackerOptions{})
	a := netip.MustParseAddr("192.168.5.5")
	tr.LearnIP("node00", a)
	if name, ok := tr.NameByIP(a); !ok || name != "node00" {
		t.Errorf("NameByIP = %q, %v", name, ok)
	}
	if _, ok := tr.NameByIP(netip.MustParseAddr("10.0.0.10")); ok {
		t.Error("old address still maps")
	}
}

func TestSummarize(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := func(s State, boot time.Duration) NodeStatus {
		n := NodeStatus{State: s, Times: map[State]time.Time{}}
		if boot > 0 {
			n.Times[Discover] = at
			n.Times[Healthy] = at.Add(boot)
		}
		return n
	}
	tests := []struct {
		name   string
		nodes  []NodeStatus
		health HealthSummary
		boot   *DurationStats
	}{
		{"none seen", []NodeStatus{node(Pending, 0), node(Pending, 0)}, HealthSummary{Status: "pending", Pending: 2}, nil},
		{"booting", []NodeStatus{node(Pending, 0), node(Kernel, 0), node(Healthy, 3*time.Second)}, HealthSummary{Status: "booting", Pending: 1, Booting: 1, Healthy: 1}, &DurationStats{1, 3, 3, 3}},
		{"degraded", []NodeStatus{node(Failed, 0), node(Healthy, 2*time.Second)}, HealthSummary{Status: "degraded", Failed: 1, Healthy: 1}, &DurationStats{1, 2, 2, 2}},
		{"healthy", []NodeStatus{node(Healthy, time.Second), node(Healthy, 4*time.Second)}, HealthSummary{Status: "healthy", Healthy: 2}, &DurationStats{2, 1, 2.5, 4}},
	}
	for _, tc := range tests {
		s := Summarize(tc.nodes, "bs0", 0, at)
		if diff := cmp.Diff(tc.health, s.Health); diff != "" {
			t.Errorf("%s: health (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(tc.boot, s.BootSeconds); diff != "" {
			t.Errorf("%s: boot seconds (-want +got):\n%s", tc.name, diff)
		}
		total := 0
		for _, c := range s.States {
			total += c
		}
		if total != len(tc.nodes) || len(s.States) != int(numStates) {
			t.Errorf("%s: states %v", tc.name, s.States)
		}
	}
}

// TestAddressSettled is issue 25's point 3 at the tracker: in pool mode a spoofed REQUEST with a
// booted node's MAC was acknowledged at another address and moved the node's recorded address,
// and with it the node's identity. An ACK moves the address only while the attempt has not gone
// past its DHCP exchange; the operator's reboot starts an attempt that may move it again.
func TestAddressSettled(t *testing.T) {
	node := testNodes(t, 1)[0]
	node.IP = netip.Addr{} // pool mode: the address comes from DHCP
	tr, err := NewTracker([]Node{node}, "default", TrackerOptions{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	first, second, third := netip.MustParseAddr("10.1.0.5"), netip.MustParseAddr("10.1.0.66"), netip.MustParseAddr("10.1.0.7")
	for _, step := range []struct {
		what   string
		do     func()
		wantIP netip.Addr
	}{
		{"first ACK", func() { tr.ObserveDHCP(node.MAC, []Event{EvDiscover, EvOffer, EvAck}, first, "", ClientUnknown) }, first},
		{"iPXE fetched its script", func() { tr.Observe(node.Name, EvScript, "") }, first},
		{"ACK elsewhere mid-boot", func() { tr.ObserveDHCP(node.MAC, []Event{EvAck}, second, "", ClientUnknown) }, first},
		{"healthy", func() { tr.Report(node.Name, Health{Status: "ok"}) }, first},
		{"ACK elsewhere when healthy", func() { tr.ObserveDHCP(node.MAC, []Event{EvDiscover, EvOffer, EvAck}, second, "", ClientUnknown) }, first},
		{"operator's reboot", func() { tr.RequestReboot(node.Name) }, first},
		{"ACK in the new attempt", func() { tr.ObserveDHCP(node.MAC, []Event{EvDiscover, EvOffer, EvAck}, third, "", ClientUnknown) }, third},
	} {
		step.do()
		st, _ := tr.Node(node.Name)
		if got, _ := tr.NameByIP(step.wantIP); st.IP != step.wantIP.String() || got != node.Name {
			t.Errorf("%s: node at %q (by address %v: %q), want %v", step.what, st.IP, step.wantIP, got, step.wantIP)
		}
	}
	if got, ok := tr.NameByIP(second); ok {
		t.Errorf("the spoofed address names %s", got)
	}
}

// TestDownloadsNeedAnAttempt: where the server answers DHCP, a download from a node in no attempt
// (its address taken by another host, or its DHCP exchange lost in a crash) moves nothing, and its
// next DISCOVER starts the attempt that the downloads then move on; with DHCP off the downloads
// are the only sign of a boot and move the node.
func TestDownloadsNeedAnAttempt(t *testing.T) {
	for _, tc := range []struct {
		dhcp bool
		want []State // after NBP, kernel, DISCOVER, NBP
	}{
		{true, []State{Pending, Pending, Discover, NBP}},
		{false, []State{NBP, Kernel, Booted, Booted}},
	} {
		n := testNodes(t, 1)[0]
		tr, err := NewTracker([]Node{n}, "default", TrackerOptions{Registerer: prometheus.NewRegistry(), DHCPStartsBoots: tc.dhcp})
		if err != nil {
			t.Fatal(err)
		}
		var got []State
		for _, ev := range []Event{EvNBP, EvKernel, EvDiscover, EvNBP} {
			tr.Observe(n.Name, ev, "")
			st, _ := tr.State(n.Name)
			got = append(got, st)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("DHCP answered here %v (-want +got):\n%s", tc.dhcp, diff)
		}
	}
}

// TestHealthStatus: the aggregate status of every mix of states ("booting" used to describe a
// machine of which one node was healthy and the rest not yet seen, with nothing booting).
func TestHealthStatus(t *testing.T) {
	for _, tc := range []struct {
		events [][]Event // per node, the events it saw
		want   string
	}{
		{[][]Event{nil, nil}, HealthPending},
		{[][]Event{{EvDiscover, EvHealthOK}, nil}, HealthPartial},
		{[][]Event{{EvDiscover, EvHealthOK}, {EvDiscover}}, HealthBooting},
		{[][]Event{{EvDiscover, EvHealthOK}, {EvDiscover, EvHealthOK}}, HealthHealthy},
		{[][]Event{{EvDiscover, EvHealthFailed}, nil}, HealthDegraded},
	} {
		nodes := testNodes(t, len(tc.events))
		tr, err := NewTracker(nodes, "default", TrackerOptions{Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		for i, evs := range tc.events {
			for _, ev := range evs {
				tr.Observe(nodes[i].Name, ev, "")
			}
		}
		if got := tr.Summary().Health.Status; got != tc.want {
			t.Errorf("%v: %s, want %s", tc.events, got, tc.want)
		}
	}
}
