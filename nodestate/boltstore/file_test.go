package boltstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/nodestate"
)

// TestStateFileSmallAndPrivate: a new state file is created 0600, like the lease database beside
// it, and stays small for a few nodes (bbolt's 16 MiB growth step once made 3 nodes 16.8 MB),
// growing with its contents, before and after a reopen.
func TestStateFileSmallAndPrivate(t *testing.T) {
	for _, tc := range []struct {
		nodes    int
		maxBytes int64
	}{
		{3, 512 << 10},
		{2000, 4 << 20},
	} {
		t.Run(fmt.Sprint(tc.nodes), func(t *testing.T) {
			dir := t.TempDir()
			var nodes []nodestate.NodeStatus
			for i := range tc.nodes {
				nodes = append(nodes, nodestate.NodeStatus{Name: fmt.Sprintf("node%04d", i), State: nodestate.Booted, Profile: "default", Attempt: 1, Since: time.Unix(1700000000, 0)})
			}
			for round := range 2 {
				st, err := Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Save(nodes); err != nil {
					t.Fatal(err)
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				fi, err := os.Stat(filepath.Join(dir, StateFile))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o600 || fi.Size() > tc.maxBytes {
					t.Errorf("round %d: %s is %v and %d bytes; want 0600 and at most %d", round, StateFile, fi.Mode().Perm(), fi.Size(), tc.maxBytes)
				}
			}
		})
	}
}
