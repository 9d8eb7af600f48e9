package bootsrv

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
)

// TestFleetLateHandoff: a handoff written after its receiver last applied the rule (the peer that
// wrote it reacted to a change of the live set later than the receiver did) names a server that
// tracks nothing of the node, while the rule's owner waits for that server to let go. The named
// server finds the stale record on a re-check and hands the node on. On the old code only a new
// change of the live set made it look again: the node was answered by nobody (TestFleetChaos, on
// a loaded machine: four nodes unanswered for the test's whole 20 s).
func TestFleetLateHandoff(t *testing.T) {
	ec := etcdtest.Start(t, etcdtest.Options{Members: 1})
	f := newFixture(t)
	bs0 := startFleetMember(t, f, ec.Endpoints, 0)
	bs1 := startFleetMember(t, f, ec.Endpoints, 1)
	dead := []int{2, 3}
	testfix.WaitFor(t, "both answer the rule's nodes", 10*time.Second, func() bool {
		return slices.Equal(bs0.tracked(), ruleOwned(t, bs0.srv, 0, dead)) && slices.Equal(bs1.tracked(), ruleOwned(t, bs1.srv, 1, dead))
	})
	name := bs1.tracked()[0]
	recs, err := bs0.srv.fleet.loadRecords()
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := recs[name]
	if !ok {
		st, _ := bs1.srv.Tracker().Node(name)
		rec = st
	}
	// The late handoff: bs0 is named holder of a node it does not track.
	rec.Server = "bs0"
	if err := bs0.srv.fleet.store.Save([]nodestate.NodeStatus{rec}); err != nil {
		t.Fatal(err)
	}
	var holder string
	defer func() {
		if t.Failed() {
			t.Logf("%s: the holder its record in etcd names: %q; bs0 answers it: %v", name, holder, slices.Contains(bs0.tracked(), name))
		}
	}()
	took := testfix.WaitFor(t, fmt.Sprintf("%s handed on to bs1", name), 10*time.Second, func() bool {
		holder = bs0.srv.fleet.holders([]string{name})[name]
		return holder == "bs1" && slices.Contains(bs1.tracked(), name) && !slices.Contains(bs0.tracked(), name)
	})
	t.Logf("%s back with bs1 in %v", name, took)
}
