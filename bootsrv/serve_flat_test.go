package bootsrv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/internal/testfix"
)

// TestServerFlat serves an inventory of plain names with no topology: the configuration is valid,
// the mapping defaults to ncda and the one server owns every node.
func TestServerFlat(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.dir, "flat.csv"), []byte(testfix.FlatInventoryCSV(12)), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.server(t, func(c *bootconfig.Config) {
		c.Topology, c.Mapping = "", "" // the fixture's bcda needs boards
		c.Inventory = filepath.Join(f.dir, "flat.csv")
	})
	if s.cfg.Mapping != "ncda" {
		t.Errorf("mapping = %q, want ncda", s.cfg.Mapping)
	}
	owned := s.Authority().Owned()
	if len(owned) != 12 || owned[0].Name != "node01" || owned[11].Name != "node12" {
		t.Errorf("owned %d nodes (%v...), want node01..node12", len(owned), owned[0].Name)
	}
}
