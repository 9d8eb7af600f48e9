package bootsrv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// StateFile is the name of the boot-state database in the state directory.
const StateFile = "nodes.db"

var (
	nodesBucket = []byte("nodes")
	metaBucket  = []byte("meta")
	versionKey  = []byte("version")
)

const stateVersion = "1"

// StateStore persists boot states: one record per node. Two backends implement it: Store (bbolt,
// one server, the default) and EtcdStore (a fleet's shared records in etcd).
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

// Store keeps the boot states in a bbolt database: one key per node, so that a flush writes only
// the nodes that changed, in one transaction committed with fsync. bbolt locks the file, so two
// servers cannot share a state directory by mistake.
type Store struct {
	db *bolt.DB
}

// OpenStore opens (creating when missing) the state database in dir.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	path := filepath.Join(dir, StateFile)
	db, err := bolt.Open(path, 0o644, &bolt.Options{
		Timeout: time.Second,
		// Address space, not memory: a map that does not have to grow as the file does spares
		// the flush bbolt's remapping, which copies every cached page out of the old map.
		InitialMmapSize: 256 << 20,
		// Like dhcpd's lease pool: the free list is rebuilt when the file is opened instead of
		// being written with every commit.
		NoFreelistSync: true, FreelistType: bolt.FreelistMapType,
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("state %s: locked by another process (another boot server on this state_dir?)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		if v := meta.Get(versionKey); v != nil && string(v) != stateVersion {
			return fmt.Errorf("version %s, want %s (move the file away to start afresh)", v, stateVersion)
		}
		if err := meta.Put(versionKey, []byte(stateVersion)); err != nil {
			return err
		}
		_, err = tx.CreateBucketIfNotExists(nodesBucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Path returns the database's path.
func (s *Store) Path() string { return s.db.Path() }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Load returns every saved node state.
func (s *Store) Load() ([]NodeStatus, error) {
	var out []NodeStatus
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(nodesBucket).ForEach(func(k, v []byte) error {
			var n NodeStatus
			if err := json.Unmarshal(v, &n); err != nil {
				return fmt.Errorf("node %q: %w", k, err)
			}
			out = append(out, n)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", s.Path(), err)
	}
	return out, nil
}

// Save writes the given nodes' states (replacing their previous ones) in one transaction.
func (s *Store) Save(nodes []NodeStatus) error {
	if len(nodes) == 0 {
		return nil
	}
	// Encode outside the write transaction, and put in key order, which bbolt handles best.
	type kv struct{ k, v []byte }
	recs := make([]kv, len(nodes))
	buf := make([]byte, 0, 1024*len(nodes)) // one allocation for most flushes' records
	for i := range nodes {
		start := len(buf)
		var err error
		if buf, err = appendStatusJSON(buf, &nodes[i]); err != nil {
			return fmt.Errorf("state: node %s: %w", nodes[i].Name, err)
		}
		// Full slice expression: a later append that reallocates buf leaves this record alone.
		recs[i] = kv{[]byte(nodes[i].Name), buf[start:len(buf):len(buf)]}
	}
	slices.SortFunc(recs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(nodesBucket)
		for _, r := range recs {
			if err := b.Put(r.k, r.v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("state %s: %w", s.Path(), err)
	}
	return nil
}

// Delete removes the named nodes' states.
func (s *Store) Delete(names []string) error {
	if len(names) == 0 {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(nodesBucket)
		for _, n := range names {
			if err := b.Delete([]byte(n)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("state %s: %w", s.Path(), err)
	}
	return nil
}
