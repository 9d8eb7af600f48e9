package topology

import (
	"fmt"
	"io"

	"github.com/bootfabric/bootfabric/internal/texttable"
)

// WriteTable writes m, whose graph is g, as bootctl topology show does: its counts, then a row
// per level, the boot servers and their cascade switches with their uplinks.
func (m *Machine) WriteTable(w io.Writer, g *Graph) error {
	fmt.Fprintf(w, "%s: %s\n", m.Name, m.Description)
	fmt.Fprintf(w, "%d nodes, %d boot servers, %d switches, %d links\n\n", len(g.Nodes()), len(g.Servers()),
		g.NumVertices()-len(g.Nodes())-len(g.Servers()), g.NumLinks())
	t := texttable.New(w)
	t.Row("level", "per parent", "in machine", "nodes each", "uplink", "Mb/s", "latency us")
	h := g.Hierarchy()
	for i, l := range m.Levels {
		seg, capacity, lat := "-", "-", "-"
		if l.Uplink != nil {
			seg, capacity, lat = l.Uplink.Segment, texttable.Float(l.Uplink.CapacityMbps, 0), texttable.Float(l.Uplink.LatencyUS, 1)
		}
		t.Row(l.Name, l.Count, h.Total(i), h.Span(i), seg, capacity, lat)
	}
	s := m.Servers
	t.Row("boot server", "", s.Count, "", s.NIC.Segment, texttable.Float(s.NIC.CapacityMbps, 0), texttable.Float(s.NIC.LatencyUS, 1))
	if s.CascadeUplink != nil {
		t.Row("cascade switch", fmt.Sprintf("%d servers", s.PerCascade), (s.Count+s.PerCascade-1)/s.PerCascade, "", s.CascadeUplink.Segment,
			texttable.Float(s.CascadeUplink.CapacityMbps, 0), texttable.Float(s.CascadeUplink.LatencyUS, 1))
	}
	return t.Flush()
}
