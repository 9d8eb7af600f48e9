package boltstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestStoreErrors: a second server on the same state directory, a state file of another version
// and a file that is no database are each refused.
func TestStoreErrors(t *testing.T) {
	dir := t.TempDir()
	store, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := store.Load(); err != nil || got != nil {
		t.Errorf("empty store: %v, %v", got, err)
	}
	// A second server on the same state directory is refused.
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Errorf("second open: %v", err)
	}
	store.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(metaBucket).Put(versionKey, []byte("9")) })
	store.Close()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("version 9: %v", err)
	}
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, StateFile), []byte("not a database at all, not at all"), 0o644)
	if _, err := Open(bad); err == nil {
		t.Error("garbage file accepted")
	}
}
