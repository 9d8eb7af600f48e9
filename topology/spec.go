package topology

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// Fabric is a graph with the InfiniBand identities fabric tools print: a GUID and a LID per vertex
// and the physical port number of each link end. Graphs that were not imported from a fabric get
// synthetic GUIDs (guidBase + vertex + 1) and LIDs (vertex + 1), and their ports are the graph's.
type Fabric struct {
	*Graph
	guid         []uint64 // nil: synthetic
	portGUID     []uint64 // per vertex, 0 or nil: the node GUID
	lid          []uint16 // nil: synthetic
	physA, physB []uint16 // per link, nil: Link.PortA/PortB
	desc         []string // per vertex node description, nil: the vertex name

	// guidKnown: the GUIDs are the fabric's (read from a fabric file), not synthetic.
	guidKnown bool
	// lidKnown, per vertex: the LID is the fabric's (given by a file), not numbered here.
	lidKnown []bool
	lmc      int // the highest LMC a file gave

	nameOnce sync.Once
	byName   map[string]VertexID
}

// guidBase prefixes synthetic GUIDs.
const guidBase = 0xb00f_ab00_0000_0000

// NewFabric wraps a graph with synthetic identities.
func NewFabric(g *Graph) *Fabric { return &Fabric{Graph: g} }

// GUID returns the node GUID of v (for endpoints, the GUID of their port).
func (f *Fabric) GUID(v VertexID) uint64 {
	if f.guid != nil {
		return f.guid[v]
	}
	return guidBase + uint64(v) + 1
}

// PortGUID returns the GUID of v's port (endpoints have port GUIDs distinct from their node GUID
// in real fabrics), or its node GUID when unknown.
func (f *Fabric) PortGUID(v VertexID) uint64 {
	if f.portGUID != nil && f.portGUID[v] != 0 {
		return f.portGUID[v]
	}
	return f.GUID(v)
}

// LID returns the LID of v (its base LID; switches have one LID on port 0).
func (f *Fabric) LID(v VertexID) int {
	if f.lid != nil {
		return int(f.lid[v])
	}
	return int(v) + 1
}

// Desc returns the node description of v, the name OpenSM and the diagnostics print for it.
func (f *Fabric) Desc(v VertexID) string {
	if f.desc != nil && f.desc[v] != "" {
		return f.desc[v]
	}
	return f.VertexName(v)
}

// HasGUIDs reports whether the GUIDs are the fabric's own (read from an ibnetdiscover or ibsim
// file, or given with SetIdentities), not synthetic ones made up for a spec or a machine file.
func (f *Fabric) HasGUIDs() bool { return f.guidKnown }

// HasLID reports whether the LID of v is the fabric's own, not one numbered here.
func (f *Fabric) HasLID(v VertexID) bool { return f.lidKnown != nil && f.lidKnown[v] }

// LMC returns the highest LID mask control a file gave (0: one LID per port).
func (f *Fabric) LMC() int { return f.lmc }

// LinkPort returns the physical port of link l at its end v.
func (f *Fabric) LinkPort(v VertexID, l LinkID) int {
	lk := f.links[l]
	if f.physA != nil {
		if lk.A == v {
			return int(f.physA[l])
		}
		return int(f.physB[l])
	}
	if lk.A == v {
		return int(lk.PortA)
	}
	return int(lk.PortB)
}

// PhysPort returns the physical port number of graph port p (1-based) of v.
func (f *Fabric) PhysPort(v VertexID, p int) int { return f.LinkPort(v, f.Links(v)[p-1]) }

// LookupSwitches finds the switches of a comma-separated list of names or GUIDs (nil for "").
func (f *Fabric) LookupSwitches(list string) ([]VertexID, error) {
	if list == "" {
		return nil, nil
	}
	var out []VertexID
	for _, name := range strings.Split(list, ",") {
		v, ok := f.Lookup(strings.TrimSpace(name))
		if !ok || f.Kind(v) != Switch {
			return nil, fmt.Errorf("no switch %q", name)
		}
		out = append(out, v)
	}
	return out, nil
}

// Lookup finds a vertex by name or by GUID ("0x..." hex).
func (f *Fabric) Lookup(s string) (VertexID, bool) {
	f.nameOnce.Do(func() {
		if f.byName != nil {
			return
		}
		f.byName = make(map[string]VertexID, f.NumVertices())
		for v := 0; v < f.NumVertices(); v++ {
			f.byName[f.VertexName(VertexID(v))] = VertexID(v)
		}
	})
	if v, ok := f.byName[s]; ok {
		return v, true
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		if g, ok := parseGUID(s); ok {
			if f.guid == nil {
				if g > guidBase && g-guidBase-1 < uint64(f.NumVertices()) {
					return VertexID(g - guidBase - 1), true
				}
				return 0, false
			}
			for v, x := range f.guid {
				if x == g || (f.portGUID != nil && f.portGUID[v] == g) {
					return VertexID(v), true
				}
			}
		}
	}
	return 0, false
}

// OpenGraph opens a topology given as a spec ("pgft:3;8,8,8;1,8,8;1,1,1", "fat2d:16"), an
// ibnetdiscover topology file (recognised by its content), a preset name or a machine YAML file.
func OpenGraph(spec string) (*Graph, error) {
	f, err := OpenFabric(spec)
	if err != nil {
		return nil, err
	}
	return f.Graph, nil
}

// generator is a fabric described by a generator spec (PGFT, Fat2D).
type generator interface{ Build() (*Graph, error) }

// parseGenerator parses spec when it is a generator spec (pgft:..., fat2d:...); ok is false when it is
// not one.
func parseGenerator(spec string) (g generator, ok bool, err error) {
	switch {
	case strings.HasPrefix(spec, "pgft:"):
		g, err = ParsePGFT(spec)
	case strings.HasPrefix(spec, "fat2d:"):
		g, err = ParseFat2D(spec)
	default:
		return nil, false, nil
	}
	return g, true, err
}

// OpenFabric is OpenGraph keeping the fabric identities (GUIDs, LIDs, physical ports).
func OpenFabric(spec string) (*Fabric, error) {
	if gen, ok, err := parseGenerator(spec); ok {
		if err != nil {
			return nil, err
		}
		g, err := gen.Build()
		if err != nil {
			return nil, err
		}
		return NewFabric(g), nil
	}
	if _, ok := Preset(spec); !ok {
		data, err := os.ReadFile(spec)
		if err == nil && LooksLikeIBNetDiscover(data) {
			return ParseIBNetDiscover(bytes.NewReader(data), spec)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("topology: %w", err)
		}
	}
	m, err := Load(spec)
	if err != nil {
		return nil, err
	}
	g, err := m.Build()
	if err != nil {
		return nil, err
	}
	return NewFabric(g), nil
}
