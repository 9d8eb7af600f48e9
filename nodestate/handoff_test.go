package nodestate

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// gatedStore is a memStore whose first Save after arm waits for a gate: a save in flight, as to
// a slow etcd.
type gatedStore struct {
	*memStore
	armed   atomic.Bool
	entered chan struct{} // closed when the armed Save waits at the gate
	gate    chan struct{}
}

func (s *gatedStore) Save(nodes []NodeStatus) error {
	if s.armed.CompareAndSwap(true, false) {
		close(s.entered)
		<-s.gate
	}
	return s.memStore.Save(nodes)
}

// TestRetrackHandoffKeepsLastChange: an operator's reboot of a node that arrives while the node's
// handoff is being saved is in the record its new holder reads, or is refused (the node is no
// longer here): it is never accepted and then lost. On the old code the handoff's write went out
// with the flush before the node was dropped, and a change accepted during that write went with the
// node (a fleet soak's node, armed on its old holder mid-handoff, then not booted by the new one).
func TestRetrackHandoffKeepsLastChange(t *testing.T) {
	nodes := testNodes(t, 2)
	store := &gatedStore{memStore: newMemStore(), entered: make(chan struct{}), gate: make(chan struct{})}
	// A flush interval, as a server has (no Run loop here): changes wait for a flush, Retrack's.
	tr, err := NewTracker(nodes, "default", TrackerOptions{Store: store, Flush: time.Hour, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	leaving := nodes[1].Name
	if _, _, err := tr.Observe(leaving, EvDiscover, "test"); err != nil { // for the flush to write
		t.Fatal(err)
	}
	// Armed before Retrack starts: the save it makes waits whenever it comes (a send the test
	// had to be ready for was missed under the race detector on a busy host).
	store.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		_, _, err := tr.Retrack(nodes[:1], nil, map[string]string{leaving: "bs1"})
		done <- err
	}()
	select {
	case <-store.entered: // the flush before the drop is writing
	case <-time.After(10 * time.Second):
		t.Fatal("Retrack saved nothing")
	}
	_, rebootErr := tr.RequestReboot(leaving)
	close(store.gate)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Retrack did not return")
	}
	if _, ok := tr.Node(leaving); ok {
		t.Fatalf("%s still tracked after its handoff", leaving)
	}
	recs, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	var rec NodeStatus
	for _, r := range recs {
		if r.Name == leaving {
			rec = r
		}
	}
	if rec.Server != "bs1" {
		t.Errorf("%s's record names holder %q, want bs1", leaving, rec.Server)
	}
	switch {
	case rebootErr == nil && !rec.RebootRequested:
		t.Errorf("the reboot of %s was accepted during its handoff but is not in the record bs1 reads", leaving)
	case rebootErr != nil && !errors.Is(rebootErr, ErrUnknownNode):
		t.Errorf("reboot during the handoff: %v", rebootErr)
	}
}
