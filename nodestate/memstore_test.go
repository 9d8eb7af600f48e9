package nodestate

import (
	"maps"
	"slices"
	"sync"
)

// memStore is a StateStore in memory that keeps each record as the real stores do (written by
// AppendStatusJSON, read back by DecodeNode), so that a tracker test sees what a restart reads.
type memStore struct {
	mu   sync.Mutex
	recs map[string][]byte
}

func newMemStore() *memStore { return &memStore{recs: map[string][]byte{}} }

// Load returns the records in name order, as bbolt's key order gives them.
func (s *memStore) Load() ([]NodeStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []NodeStatus
	for _, k := range slices.Sorted(maps.Keys(s.recs)) {
		n, err := DecodeNode([]byte(k), s.recs[k])
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func (s *memStore) Save(nodes []NodeStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range nodes {
		b, err := AppendStatusJSON(nil, &nodes[i])
		if err != nil {
			return err
		}
		s.recs[nodes[i].Name] = b
	}
	return nil
}

func (s *memStore) Delete(names []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		delete(s.recs, n)
	}
	return nil
}

func (s *memStore) Close() error { return nil }
