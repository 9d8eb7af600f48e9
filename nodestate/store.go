package nodestate

import (
	"encoding/json"
	"fmt"
)

// StateStore persists boot states: one record per node. Two backends implement it, each in a
// package of its own so that a reader of states links neither: boltstore (a bbolt file, one
// server, the default) and etcdstore (a fleet's shared records in etcd).
type StateStore interface {
	// Load returns every saved node state.
	Load() ([]NodeStatus, error)
	// Save writes the given nodes' states, replacing their previous ones.
	Save(nodes []NodeStatus) error
	// Delete removes the named nodes' states.
	Delete(names []string) error
	// Close releases the store.
	Close() error
}

// DecodeNode decodes one saved node record, checking it names the node of its key and a known
// state.
func DecodeNode(k, v []byte) (NodeStatus, error) {
	var n NodeStatus
	if err := json.Unmarshal(v, &n); err != nil {
		return NodeStatus{}, fmt.Errorf("node %q: %w", k, err)
	}
	if n.Name != string(k) {
		return NodeStatus{}, fmt.Errorf("node %q: the record names %q", k, n.Name)
	}
	if n.State >= numStates {
		return NodeStatus{}, fmt.Errorf("node %q: invalid state %d", k, n.State)
	}
	for i, tr := range n.History {
		if tr.Event == 0 || tr.Event >= numEvents {
			return NodeStatus{}, fmt.Errorf("node %q: history[%d]: no event", k, i)
		}
	}
	return n, nil
}
