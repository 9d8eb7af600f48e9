package nodestate

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestTrackerLogsTransitions: every change of a node's state, from DHCP, a download or a health
// report, is one info line naming the node and both states; an event that changes nothing logs
// nothing.
func TestTrackerLogsTransitions(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)}
	nodes := testNodes(t, 1)
	tr, err := NewTracker(nodes, "default", TrackerOptions{Now: clock.now, Registerer: prometheus.NewRegistry(), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	name := nodes[0].Name
	// One DHCP request bringing two events moves the node twice: two lines.
	tr.ObserveDHCP(nodes[0].MAC, []Event{EvDiscover, EvOffer}, netip.Addr{}, "dhcp", ClientUnknown)
	tr.ObserveDHCP(nodes[0].MAC, []Event{EvOffer}, netip.Addr{}, "dhcp", ClientUnknown) // a retransmit: no change
	for _, ev := range []Event{EvAck, EvNBP, EvScript, EvKernel, EvInitrd, EvInitrd} {
		if _, _, err := tr.Observe(name, ev, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tr.Report(name, Health{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, e := range logs.FilterMessage("node state").All() {
		if e.Level != zapcore.InfoLevel {
			t.Errorf("logged at %s, want info", e.Level)
		}
		f := e.ContextMap()
		got = append(got, fmt.Sprintf("%v %v->%v", f["node"], f["from"], f["to"]))
	}
	st, _ := tr.Node(name)
	for _, h := range st.History {
		want = append(want, fmt.Sprintf("%s %s->%s", name, h.From, h.To))
	}
	if len(want) != 7 || want[len(want)-1] != name+" initrd->healthy" {
		t.Fatalf("history %v: want 7 steps to healthy", want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state lines (-history +log):\n%s", diff)
	}
}
