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

// FlatInventoryCSV lists n nodes named node01.. with no position column, as an admin of a cluster
// without a modelled network writes them.
func FlatInventoryCSV(n int) string {
	var sb strings.Builder
	sb.WriteString("name,mac\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, "node%02d,52:54:00:00:01:%02x\n", i, i)
	}
	return sb.String()
}
