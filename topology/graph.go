package topology

import (
	"errors"
	"fmt"
)

// Kind says what a vertex is.
type Kind uint8

const (
	// Node is a compute node, an endpoint that boots.
	Node Kind = iota
	// Server is a boot server, an endpoint that serves boots.
	Server
	// Switch forwards traffic between its links.
	Switch
)

func (k Kind) String() string {
	switch k {
	case Node:
		return "node"
	case Server:
		return "server"
	case Switch:
		return "switch"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// VertexID identifies a vertex of a Graph; IDs are dense from 0.
type VertexID int32

// LinkID identifies a link of a Graph; IDs are dense from 0.
type LinkID int32

// SegmentID identifies a segment label of a Graph (see Graph.Segment).
type SegmentID uint16

// Channel is one direction of a full-duplex link: 2*link for traffic from A to B, 2*link+1 for B to A.
// Sharing is counted per channel because the two directions of a link do not compete.
type Channel int32

// ChannelOf returns the channel of link l in the direction leaving vertex from.
func ChannelOf(l LinkID, reverse bool) Channel {
	if reverse {
		return Channel(2*l + 1)
	}
	return Channel(2 * l)
}

// Link returns the link the channel belongs to.
func (c Channel) Link() LinkID { return LinkID(c >> 1) }

// Reverse reports whether the channel carries traffic from B to A.
func (c Channel) Reverse() bool { return c&1 == 1 }

// Link is a full-duplex link between two vertices. In trees A is the child and B the parent.
type Link struct {
	A, B VertexID
	// PortA and PortB are the 1-based port numbers at each end, in the order links were added there.
	PortA, PortB uint16
	CapacityMbps float64
	LatencyUS    float64
	Segment      SegmentID
}

// Graph is an immutable machine graph. Build one with a Builder or a Machine.
type Graph struct {
	Name string

	kinds    []Kind
	levels   []int8 // switch level, 0 for the lowest switches; -1 for endpoints
	names    []string
	links    []Link
	adjStart []int32 // CSR: adjacency of v is adjLinks[adjStart[v]:adjStart[v+1]]
	adjLinks []LinkID
	nodes    []VertexID
	servers  []VertexID
	segments []string

	// Tree information, set when the graph is a tree (see TreeRouter).
	up    []LinkID // link to the parent, -1 at the root
	depth []int32

	hier *Hierarchy
	// namer names vertices that have no explicit name (the nodes of large hierarchical machines).
	namer func(VertexID) string
}

// NumVertices returns the number of vertices.
func (g *Graph) NumVertices() int { return len(g.kinds) }

// NumLinks returns the number of links.
func (g *Graph) NumLinks() int { return len(g.links) }

// NumChannels returns the number of channels, two per link.
func (g *Graph) NumChannels() int { return 2 * len(g.links) }

// Kind returns the kind of vertex v.
func (g *Graph) Kind(v VertexID) Kind { return g.kinds[v] }

// Level returns the switch level of v (0 for the lowest switches), or -1 for an endpoint.
func (g *Graph) Level(v VertexID) int { return int(g.levels[v]) }

// VertexName returns the name of vertex v.
func (g *Graph) VertexName(v VertexID) string {
	if int(v) < len(g.names) && g.names[v] != "" {
		return g.names[v]
	}
	if g.namer != nil {
		if s := g.namer(v); s != "" {
			return s
		}
	}
	return fmt.Sprintf("%s%d", g.kinds[v], v)
}

// Link returns link l.
func (g *Graph) Link(l LinkID) Link { return g.links[l] }

// Links returns the IDs of the links at v, in port order (port p is Links(v)[p-1]).
func (g *Graph) Links(v VertexID) []LinkID { return g.adjLinks[g.adjStart[v]:g.adjStart[v+1]] }

// Other returns the vertex at the other end of link l from v.
func (g *Graph) Other(l LinkID, v VertexID) VertexID {
	if g.links[l].A == v {
		return g.links[l].B
	}
	return g.links[l].A
}

// Nodes returns the compute nodes in position order; node index i is Nodes()[i].
func (g *Graph) Nodes() []VertexID { return g.nodes }

// Servers returns the boot servers; server index j is Servers()[j].
func (g *Graph) Servers() []VertexID { return g.servers }

// Segments returns the segment labels; SegmentID s is Segments()[s].
func (g *Graph) Segments() []string { return g.segments }

// Segment returns the label of segment s.
func (g *Graph) Segment(s SegmentID) string { return g.segments[s] }

// Hierarchy returns the named levels of a hierarchical machine, or nil.
func (g *Graph) Hierarchy() *Hierarchy { return g.hier }

// ChannelCapacity returns the capacity in Mb/s of channel c.
func (g *Graph) ChannelCapacity(c Channel) float64 { return g.links[c.Link()].CapacityMbps }

// ChannelFrom returns the vertex channel c leaves.
func (g *Graph) ChannelFrom(c Channel) VertexID {
	if c.Reverse() {
		return g.links[c.Link()].B
	}
	return g.links[c.Link()].A
}

// ChannelTo returns the vertex channel c enters.
func (g *Graph) ChannelTo(c Channel) VertexID {
	if c.Reverse() {
		return g.links[c.Link()].A
	}
	return g.links[c.Link()].B
}

// Router gives the route between two vertices. Implementations: Graph.TreeRouter for trees, and the
// routing package's engines for fabrics with choices.
type Router interface {
	// Route appends to buf the channels that traffic from src to dst crosses, in order, and returns
	// the extended slice.
	Route(buf []Channel, src, dst VertexID) ([]Channel, error)
}

// ErrNoRoute is returned (wrapped) when two vertices are not connected.
var ErrNoRoute = errors.New("no route")

// Builder assembles a Graph. The zero Builder is ready to use.
type Builder struct {
	Name     string
	kinds    []Kind
	levels   []int8
	names    []string
	links    []Link
	segIndex map[string]SegmentID
	segments []string
	degree   []int32
	hier     *Hierarchy
	namer    func(VertexID) string
}

// AddVertex adds a vertex and returns its ID. name may be empty when SetNamer names it.
func (b *Builder) AddVertex(k Kind, level int, name string) VertexID {
	id := VertexID(len(b.kinds))
	b.kinds = append(b.kinds, k)
	if k != Switch {
		level = -1
	}
	b.levels = append(b.levels, int8(level))
	b.degree = append(b.degree, 0)
	if name != "" || b.names != nil {
		for len(b.names) < int(id) {
			b.names = append(b.names, "")
		}
		b.names = append(b.names, name)
	}
	return id
}

// Grow reserves room for n more vertices and m more links.
func (b *Builder) Grow(n, m int) {
	if cap(b.kinds)-len(b.kinds) < n {
		b.kinds = append(make([]Kind, 0, len(b.kinds)+n), b.kinds...)
		b.levels = append(make([]int8, 0, len(b.levels)+n), b.levels...)
		b.degree = append(make([]int32, 0, len(b.degree)+n), b.degree...)
	}
	if cap(b.links)-len(b.links) < m {
		b.links = append(make([]Link, 0, len(b.links)+m), b.links...)
	}
}

// SegmentID returns the ID of the segment label, adding it if new.
func (b *Builder) SegmentID(label string) SegmentID {
	if b.segIndex == nil {
		b.segIndex = map[string]SegmentID{}
	}
	if s, ok := b.segIndex[label]; ok {
		return s
	}
	s := SegmentID(len(b.segments))
	b.segIndex[label] = s
	b.segments = append(b.segments, label)
	return s
}

// AddLink adds a full-duplex link from a to b (in trees a is the child) and returns its ID. Ports
// are numbered in the order links are added at each vertex.
func (b *Builder) AddLink(a, c VertexID, capacityMbps, latencyUS float64, segment string) LinkID {
	id := LinkID(len(b.links))
	seg := b.SegmentID(segment)
	b.degree[a]++
	b.degree[c]++
	b.links = append(b.links, Link{A: a, B: c, PortA: uint16(b.degree[a]), PortB: uint16(b.degree[c]),
		CapacityMbps: capacityMbps, LatencyUS: latencyUS, Segment: seg})
	return id
}

// SetHierarchy attaches named levels; nodes must have been added in position order.
func (b *Builder) SetHierarchy(h *Hierarchy) { b.hier = h }

// index checks every link's ends, capacity and latency, and builds the per-vertex link lists.
func (g *Graph) index() error {
	n := len(g.kinds)
	g.adjStart = make([]int32, n+1)
	for i, l := range g.links {
		if l.A < 0 || int(l.A) >= n || l.B < 0 || int(l.B) >= n || l.A == l.B {
			return fmt.Errorf("link %d: bad ends %d-%d", i, l.A, l.B)
		}
		if !(l.CapacityMbps > 0) {
			return fmt.Errorf("link %d (%s-%s): capacity must be positive, got %v", i, g.VertexName(l.A), g.VertexName(l.B), l.CapacityMbps)
		}
		if l.LatencyUS < 0 {
			return fmt.Errorf("link %d (%s-%s): latency must not be negative, got %v", i, g.VertexName(l.A), g.VertexName(l.B), l.LatencyUS)
		}
		g.adjStart[l.A+1]++
		g.adjStart[l.B+1]++
	}
	for v := 0; v < n; v++ {
		g.adjStart[v+1] += g.adjStart[v]
	}
	g.adjLinks = make([]LinkID, 2*len(g.links))
	fill := make([]int32, n)
	for i, l := range g.links {
		// Links were added in port order at each vertex, so filling in link order keeps port order.
		g.adjLinks[g.adjStart[l.A]+fill[l.A]] = LinkID(i)
		fill[l.A]++
		g.adjLinks[g.adjStart[l.B]+fill[l.B]] = LinkID(i)
		fill[l.B]++
	}
	return nil
}

// SetNamer names the vertices that have no explicit name.
func (b *Builder) SetNamer(f func(VertexID) string) { b.namer = f }

// Build freezes the graph. It checks link ends and capacities, and records parent links when the
// graph is a tree (connected, links = vertices - 1).
func (b *Builder) Build() (*Graph, error) {
	n := len(b.kinds)
	g := &Graph{Name: b.Name, kinds: b.kinds, levels: b.levels, names: b.names, links: b.links,
		segments: b.segments, hier: b.hier, namer: b.namer}
	if err := g.index(); err != nil {
		return nil, err
	}
	for v, k := range b.kinds {
		switch k {
		case Node:
			g.nodes = append(g.nodes, VertexID(v))
		case Server:
			g.servers = append(g.servers, VertexID(v))
		}
	}
	if len(b.links) == n-1 && n > 0 {
		g.makeTree()
	}
	return g, nil
}
