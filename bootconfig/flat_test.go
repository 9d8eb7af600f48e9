package bootconfig

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/internal/testfix"
)

// TestInventoryFlat parses an inventory with no topology: the nodes take the rows' order under
// their own names, and the flat machine finds them by those names.
func TestInventoryFlat(t *testing.T) {
	inv, err := ParseInventoryCSV([]byte(testfix.FlatInventoryCSV(12)), "inv.csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := FlatHierarchy(inv)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range inv.Nodes {
		if n.Index != i || n.Position != n.Name {
			t.Errorf("row %d: %s at index %d, position %q", i, n.Name, n.Index, n.Position)
		}
		if k, err := h.ParseNode(n.Name); err != nil || k != i {
			t.Errorf("flat machine: %s at %d, %v; want %d", n.Name, k, err, i)
		}
	}
	if got := h.NumNodes(); got != 12 {
		t.Errorf("flat machine of %d nodes, want 12", got)
	}
}

// TestInventoryFlatPosition refuses a position where there is no topology to hold it, naming the
// file, the line and the field.
func TestInventoryFlatPosition(t *testing.T) {
	data := "name,mac,node\nnode01,52:54:00:00:01:01,\nnode02,52:54:00:00:01:02,s0-b0-n1\n"
	_, err := ParseInventoryCSV([]byte(data), "inv.csv", nil)
	want := `inv.csv:3: node: position "s0-b0-n1" given, but the configuration names no topology`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want %s...", err, want)
	}
}

// TestFleetDocFlat: a fleet without a topology publishes no topology file; its servers rebuild the
// same flat machine from the embedded inventory, with ncda dealing the nodes one by one.
func TestFleetDocFlat(t *testing.T) {
	f := newFleetFixture(t)
	fl := strings.NewReplacer("topology: machine.yaml\n", "", "mapping: bcda\n", "").Replace(fleetYAML)
	testfix.WriteFile(t, f.fleet, []byte(fl))
	var inv strings.Builder
	inv.WriteString("name,mac,ip\n")
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&inv, "web-%d,52:54:00:00:02:%02x,10.0.0.%d\n", i, i, 20+i)
	}
	testfix.WriteFile(t, f.inv, []byte(inv.String()))
	doc, err := LoadFleetFile(f.fleet)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Topology != (FleetFile{}) || doc.Mapping != "ncda" {
		t.Errorf("topology %+v, mapping %q; want none and ncda", doc.Topology, doc.Mapping)
	}
	back := roundTrip(t, doc)
	m, err := back.Machine()
	if err != nil {
		t.Fatal(err)
	}
	if i, err := m.Hierarchy.ParseNode("web-4"); err != nil || i != 3 {
		t.Errorf("web-4 at %d, %v; want 3", i, err)
	}
	c, err := back.Materialize(t.TempDir(), "bs1", LocalSettings{StateDir: "s", Images: "i"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Topology != "" || c.Mapping != "ncda" {
		t.Errorf("materialized topology %q, mapping %q; want none and ncda", c.Topology, c.Mapping)
	}
}

// TestInventoryNameNoPosition: with a topology, a node named outside it and given no position is
// refused with both ways out.
func TestInventoryNameNoPosition(t *testing.T) {
	_, err := ParseInventoryCSV([]byte("name,mac\nnode01,52:54:00:00:01:01\n"), "inv.csv", testfix.MiniHierarchy(t))
	want := `inv.csv:2: node: node name "node01": want 3 parts like "s0-b0-n0"; give its position in a node column, or leave topology out of the configuration to serve a flat machine`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Errorf("%T is not an *Error (file:line for the CLI's exit 2)", err)
	}
}
