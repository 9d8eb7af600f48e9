package nodestate

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/prometheus/client_golang/prometheus"
)

// flakyStore fails every Save while down, and records what it saved.
type flakyStore struct {
	mu     sync.Mutex
	down   bool
	failed int // saves refused while down
	saved  map[string]State
}

func (s *flakyStore) Load() ([]NodeStatus, error) { return nil, nil }
func (s *flakyStore) Save(nodes []NodeStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		s.failed++
		return errors.New("store unreachable")
	}
	for _, n := range nodes {
		s.saved[n.Name] = n.State
	}
	return nil
}
func (s *flakyStore) Delete([]string) error { return nil }
func (s *flakyStore) Close() error          { return nil }

func (s *flakyStore) set(down bool) { s.mu.Lock(); s.down = down; s.mu.Unlock() }
func (s *flakyStore) failures() int { s.mu.Lock(); defer s.mu.Unlock(); return s.failed }
func (s *flakyStore) state(name string) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saved[name]
}

// TestTrackerRetriesFailedSave: the last changes made while the store is unreachable are saved
// once it is back, though nothing changes after them.
func TestTrackerRetriesFailedSave(t *testing.T) {
	store := &flakyStore{saved: map[string]State{}}
	tr, err := NewTracker(testNodes(t, 2), "default", TrackerOptions{Store: store, Flush: 10 * time.Millisecond, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	defer func() { cancel(); <-done }()

	store.set(true)
	if _, err := tr.Report("node00", Health{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	// A few saves fail: the tracker tried, and the store refused, more than once.
	testfix.WaitFor(t, "three failed saves", 5*time.Second, func() bool { return store.failures() >= 3 })
	if got := store.state("node00"); got == Healthy {
		t.Fatal("saved while the store was down")
	}
	store.set(false)
	testfix.WaitFor(t, "the change made while the store was down saved", 2*time.Second, func() bool { return store.state("node00") == Healthy })
}
