// Package etcdstore keeps node states in a fleet's etcd records (records/nodes/NAME), shared by
// every server of the fleet. Its writes go through the server's membership, so that a server
// fenced out of the fleet writes nothing; it is apart from nodestate so that a reader of states
// links no etcd.
package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/nodestate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// nodeRecords is the record kind of boot states in a fleet's etcd keys.
const nodeRecords = "nodes"

// Store keeps boot states in a fleet's etcd records (records/nodes/NAME), shared by every
// server of the fleet: a server that takes a node over reads the dead owner's last record and
// resumes from it. Writes go through the server's membership (fleet.PutRecordsIfMember), so a
// server fenced out of the fleet writes nothing more. The fleet client is the caller's to close.
type Store struct {
	c       *fleet.Client
	m       *fleet.Membership
	timeout time.Duration
	// written counts node records written (one per node per save), for the fleet's
	// bootfabric_fleet_state_records_written_total.
	written atomic.Int64
}

// New returns the store of fleet client c writing as member m. A nil m is refused: a
// store that is not a member has no right to write.
func New(c *fleet.Client, m *fleet.Membership) (*Store, error) {
	if c == nil || m == nil {
		return nil, errors.New("boot states in etcd: a fleet client and a membership are required")
	}
	return &Store{c: c, m: m, timeout: 10 * time.Second}, nil
}

// Load implements StateStore: every node record of the fleet. A read that timed out is tried
// again within the store's timeout: a server starting while etcd answers slowly (a busy host)
// should start, not fail on its first slow answer.
func (s *Store) Load() ([]nodestate.NodeStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	for {
		nodes, err := LoadAll(ctx, s.c)
		if err == nil || !timedOut(err) || ctx.Err() != nil {
			return nodes, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// timedOut says whether err is a request that ran out of time (its own, or etcd's answer saying so).
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

// LoadAll reads every node record of a fleet.
func LoadAll(ctx context.Context, c *fleet.Client) ([]nodestate.NodeStatus, error) {
	recs, err := c.Records(ctx, nodeRecords)
	if err != nil {
		return nil, fmt.Errorf("boot states in etcd: %w", err)
	}
	out := make([]nodestate.NodeStatus, 0, len(recs))
	for name, b := range recs {
		var n nodestate.NodeStatus
		if err := json.Unmarshal(b, &n); err != nil {
			return nil, fmt.Errorf("boot states in etcd: node %q: %w", name, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// Save implements StateStore.
func (s *Store) Save(nodes []nodestate.NodeStatus) error {
	if len(nodes) == 0 {
		return nil
	}
	recs := make(map[string][]byte, len(nodes))
	for i := range nodes {
		b, err := nodestate.AppendStatusJSON(nil, &nodes[i])
		if err != nil {
			return fmt.Errorf("state: node %s: %w", nodes[i].Name, err)
		}
		recs[nodes[i].Name] = b
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := s.c.PutRecordsIfMember(ctx, s.m, nodeRecords, recs); err != nil {
		return fmt.Errorf("boot states to etcd: %w", err)
	}
	s.written.Add(int64(len(recs)))
	return nil
}

// Delete implements StateStore.
func (s *Store) Delete(names []string) error {
	if len(names) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := s.c.DeleteRecords(ctx, nodeRecords, names); err != nil {
		return fmt.Errorf("boot states in etcd: %w", err)
	}
	return nil
}

// Close implements StateStore; the fleet client stays open.
func (s *Store) Close() error { return nil }

// Written returns how many node records the store has written (one per node per save).
func (s *Store) Written() int64 { return s.written.Load() }

// Store is the tracker's store in a fleet.
var _ nodestate.StateStore = (*Store)(nil)
