package testfix

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/topology"
)

// MiniHierarchy is the hierarchy of the mini preset machine.
func MiniHierarchy(t testing.TB) *topology.Hierarchy {
	t.Helper()
	m, _ := topology.Preset("mini")
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g.Hierarchy()
}

// MiniInventoryCSV lists every node of the mini machine: node i has MAC 52:54:00:00:00:i and IP
// 10.0.0.(10+i).
func MiniInventoryCSV(t testing.TB) string {
	h := MiniHierarchy(t)
	var sb strings.Builder
	sb.WriteString("name,mac,ip,node\n")
	for i := 0; i < h.NumNodes(); i++ {
		fmt.Fprintf(&sb, "node%02d,52:54:00:00:00:%02x,10.0.0.%d,%s\n", i, i, 10+i, h.NodeName(i))
	}
	return sb.String()
}
