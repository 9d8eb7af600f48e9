package routing

import (
	"fmt"

	"github.com/bootfabric/bootfabric/topology"
)

// NoPort marks an entry without a route.
const NoPort = -1

// Tables are forwarding tables: for each switch and destination endpoint, the out port (the graph's
// 1-based port numbering) and the virtual channel of the hop that leaves through it.
//
// Entries are stored switch-major, one byte each when every switch has at most 254 ports (two
// bytes otherwise); virtual channels take another byte per entry only when an engine uses more
// than one.
type Tables struct {
	g      *topology.Graph
	engine string

	switches []topology.VertexID // switch index -> vertex
	swIdx    []int32             // vertex -> switch index, -1 for endpoints
	dests    []topology.VertexID // destination index -> endpoint (nodes, then servers)
	destIdx  []int32             // vertex -> destination index, -1 for switches
	attach   []int32             // destination index -> graph port at its switch (port of its first link there), 0 if detached
	leafOf   []int32             // destination index -> switch index of its leaf, -1 if detached
	attLink  []topology.LinkID   // destination index -> its link to its leaf
	healthy  []bool              // destination index -> routable; nil means every attached endpoint

	p8  []uint8 // 0: no route
	p16 []uint16
	vc  []uint8 // nil: VC 0, or the top bit of p8 when inlineVC
	// inlineVC: every switch has fewer than 128 ports, so the top bit of a p8 entry holds VC 0/1.
	inlineVC bool
	nvc      int
}

// newTables prepares empty tables (every entry NoPort) for g.
func newTables(g *topology.Graph, engine string) *Tables { return reuseTables(g, engine, nil) }

// reuseTables is newTables taking over the entry memory of prev when it has the right size (the
// re-routing case: same fabric, new faults), which saves faulting in fresh pages.
func reuseTables(g *topology.Graph, engine string, prev *Tables) *Tables {
	t := &Tables{g: g, engine: engine, nvc: 1}
	nv := g.NumVertices()
	t.swIdx = make([]int32, nv)
	t.destIdx = make([]int32, nv)
	maxDeg := 0
	for v := 0; v < nv; v++ {
		t.swIdx[v], t.destIdx[v] = -1, -1
		if g.Kind(topology.VertexID(v)) == topology.Switch {
			t.swIdx[v] = int32(len(t.switches))
			t.switches = append(t.switches, topology.VertexID(v))
			maxDeg = max(maxDeg, len(g.Links(topology.VertexID(v))))
		}
	}
	t.dests = append(append(t.dests, g.Nodes()...), g.Servers()...)
	t.attach = make([]int32, len(t.dests))
	t.leafOf = make([]int32, len(t.dests))
	t.attLink = make([]topology.LinkID, len(t.dests))
	for d, v := range t.dests {
		t.destIdx[v] = int32(d)
		t.leafOf[d] = -1
		for _, l := range g.Links(v) {
			if w := g.Other(l, v); g.Kind(w) == topology.Switch {
				t.leafOf[d] = t.swIdx[w]
				t.attach[d] = int32(portOf(g, w, l))
				t.attLink[d] = l
				break
			}
		}
	}
	n := len(t.switches) * len(t.dests)
	// Port 0 (the switch itself in InfiniBand) is never a way to an endpoint, so it marks "no
	// route" and fresh zeroed memory needs no initialisation.
	switch {
	case maxDeg <= 0xff && prev != nil && len(prev.p8) == n:
		t.p8, prev.p8 = prev.p8, nil
		clear(t.p8)
		t.inlineVC = maxDeg < 0x80
	case maxDeg <= 0xff:
		t.p8 = make([]uint8, n)
		adviseHuge(t.p8)
		t.inlineVC = maxDeg < 0x80
	default:
		t.p16 = make([]uint16, n)
	}
	return t
}

// portOf returns the port of link l at v.
func portOf(g *topology.Graph, v topology.VertexID, l topology.LinkID) int {
	lk := g.Link(l)
	if lk.A == v {
		return int(lk.PortA)
	}
	return int(lk.PortB)
}

// Graph returns the graph the tables route.
func (t *Tables) Graph() *topology.Graph { return t.g }

// Engine returns the name of the engine that computed the tables.
func (t *Tables) Engine() string { return t.engine }

// NumVCs returns the number of virtual channels the tables use.
func (t *Tables) NumVCs() int { return t.nvc }

// Switches returns the switches in table order.
func (t *Tables) Switches() []topology.VertexID { return t.switches }

// Dests returns the destination endpoints in table order: the nodes, then the servers.
func (t *Tables) Dests() []topology.VertexID { return t.dests }

// DestIndex returns the destination index of endpoint v, or -1.
func (t *Tables) DestIndex(v topology.VertexID) int { return int(t.destIdx[v]) }

// Healthy reports whether destination d is meant to be reachable: it is attached to a switch and
// the engine did not exclude it (VTFTR excludes the nodes of failed leaves).
func (t *Tables) Healthy(d int) bool {
	if t.leafOf[d] < 0 {
		return false
	}
	return t.healthy == nil || t.healthy[d]
}

// Port returns the out port of switch index s for destination index d, or NoPort.
func (t *Tables) Port(s, d int) int {
	i := s*len(t.dests) + d
	var p int
	if t.p8 != nil {
		p = int(t.p8[i])
		if t.inlineVC {
			p &= 0x7f
		}
	} else {
		p = int(t.p16[i])
	}
	if p == 0 {
		return NoPort
	}
	return p
}

// VC returns the virtual channel of the hop leaving switch index s towards destination index d.
func (t *Tables) VC(s, d int) int {
	i := s*len(t.dests) + d
	switch {
	case t.vc != nil:
		return int(t.vc[i])
	case t.inlineVC:
		return int(t.p8[i] >> 7)
	}
	return 0
}

func (t *Tables) set(s, d, port int) {
	if port < 0 {
		port = 0
	}
	i := s*len(t.dests) + d
	switch {
	case t.p8 != nil && t.inlineVC:
		t.p8[i] = t.p8[i]&0x80 | uint8(port)
	case t.p8 != nil:
		t.p8[i] = uint8(port)
	default:
		t.p16[i] = uint16(port)
	}
}

// setVC sets the virtual channel of an entry. VC 0 and 1 live in the top bit of one-byte entries
// when every switch has fewer than 128 ports, so VTFTR's tables stay at one byte per entry; other
// cases get a byte of their own per entry.
func (t *Tables) setVC(s, d, vc int) {
	i := s*len(t.dests) + d
	if t.vc == nil && t.inlineVC && vc <= 1 {
		t.p8[i] = t.p8[i]&0x7f | uint8(vc)<<7
		t.nvc = max(t.nvc, vc+1)
		return
	}
	if t.vc == nil {
		if vc == 0 {
			return
		}
		t.vc = make([]uint8, len(t.switches)*len(t.dests))
		if t.inlineVC { // move the inline bits out
			for j, x := range t.p8 {
				t.vc[j] = x >> 7
				t.p8[j] = x & 0x7f
			}
			t.inlineVC = false
		}
	}
	t.vc[i] = uint8(vc)
	t.nvc = max(t.nvc, vc+1)
}

// Bytes returns the memory the entries take.
func (t *Tables) Bytes() int { return len(t.p8) + 2*len(t.p16) + len(t.vc) }

// BytesPerEntry returns Bytes divided by the number of (switch, destination) entries.
func (t *Tables) BytesPerEntry() float64 {
	n := len(t.switches) * len(t.dests)
	if n == 0 {
		return 0
	}
	return float64(t.Bytes()) / float64(n)
}

// Route appends the channels from src (any vertex) to dst (an endpoint) by following the tables.
func (t *Tables) Route(buf []topology.Channel, src, dst topology.VertexID) ([]topology.Channel, error) {
	g := t.g
	nv := topology.VertexID(g.NumVertices())
	if src < 0 || src >= nv || dst < 0 || dst >= nv {
		return buf, fmt.Errorf("route %d->%d: vertex out of range", src, dst)
	}
	d := int(t.destIdx[dst])
	if d < 0 {
		return buf, fmt.Errorf("route %s->%s: destination is not an endpoint", g.VertexName(src), g.VertexName(dst))
	}
	if src == dst {
		return buf, nil
	}
	cur := src
	if t.swIdx[cur] < 0 {
		s := int(t.destIdx[src])
		if t.leafOf[s] < 0 {
			return buf, fmt.Errorf("route %s->%s: source is detached: %w", g.VertexName(src), g.VertexName(dst), topology.ErrNoRoute)
		}
		l := t.attLink[s]
		buf = append(buf, topology.ChannelOf(l, g.Link(l).A != src))
		cur = t.switches[t.leafOf[s]]
	}
	for hops := 0; hops <= len(t.switches); hops++ {
		if cur == dst {
			return buf, nil
		}
		s := int(t.swIdx[cur])
		if s < 0 {
			return buf, fmt.Errorf("route %s->%s: reached endpoint %s: %w", g.VertexName(src), g.VertexName(dst), g.VertexName(cur), topology.ErrNoRoute)
		}
		p := t.Port(s, d)
		if p == NoPort || p > len(g.Links(cur)) {
			return buf, fmt.Errorf("route %s->%s: no entry at %s: %w", g.VertexName(src), g.VertexName(dst), g.VertexName(cur), topology.ErrNoRoute)
		}
		l := g.Links(cur)[p-1]
		buf = append(buf, topology.ChannelOf(l, g.Link(l).A != cur))
		cur = g.Other(l, cur)
	}
	return buf, fmt.Errorf("route %s->%s: forwarding loop", g.VertexName(src), g.VertexName(dst))
}

// Engine computes forwarding tables for a graph.
type Engine interface {
	Name() string
	Compute(g *topology.Graph) (*Tables, error)
}

// Options tune engines.
type Options struct {
	// Roots are the root switches of updn; empty means the switches of the top level.
	Roots []topology.VertexID
	// Workers bounds parallelism; 0 means GOMAXPROCS.
	Workers int
	// Progress, when set, is told how far the engine's main loop is (switches or leaves done, of
	// all), every few hundredth of it and possibly from several goroutines at once: for a
	// progress bar on long routings (the paper's machine takes seconds).
	Progress func(done, total int)
}

// Engines returns the names New accepts.
func Engines() []string { return []string{"dmodk", "dmodc", "updn", "minhop", "vtftr"} }

// New returns the engine with the given name.
func New(name string, opt Options) (Engine, error) {
	switch name {
	case "dmodk":
		return Dmodk{Workers: opt.Workers, Progress: opt.Progress}, nil
	case "dmodc":
		return Dmodc{Workers: opt.Workers, Progress: opt.Progress}, nil
	case "updn":
		return UpDown{Roots: opt.Roots, Progress: opt.Progress}, nil
	case "minhop":
		return MinHop{Progress: opt.Progress}, nil
	case "vtftr":
		return VTFTR{}, nil
	}
	return nil, fmt.Errorf("routing engine %q: want one of %v", name, Engines())
}
