package topology

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/internal/yamlerr"
	"gopkg.in/yaml.v3"
)

// LinkSpec describes the links of one kind in a machine description.
type LinkSpec struct {
	Segment      string  `yaml:"segment" json:"segment"`
	CapacityMbps float64 `yaml:"capacity_mbps" json:"capacity_mbps"`
	LatencyUS    float64 `yaml:"latency_us" json:"latency_us"`
}

// LevelSpec describes one hierarchy level. A level with an Uplink has a switch in each of its
// elements, linked to the switch of the nearest enclosing level that has one (or the core); on the
// last level (the compute nodes) the Uplink is the node's NIC.
type LevelSpec struct {
	Name   string    `yaml:"name" json:"name"`
	Prefix string    `yaml:"prefix,omitempty" json:"prefix,omitempty"`
	Count  int       `yaml:"count" json:"count"`
	Uplink *LinkSpec `yaml:"uplink,omitempty" json:"uplink,omitempty"`
}

// ServerSpec describes the boot servers. With PerCascade > 0 they hang off cascade switches, server j
// on cascade j/PerCascade, each cascade linked to the core by CascadeUplink; with PerCascade = 0
// they hang off the core directly.
type ServerSpec struct {
	Count         int       `yaml:"count" json:"count"`
	PerCascade    int       `yaml:"per_cascade" json:"per_cascade"`
	NIC           LinkSpec  `yaml:"nic" json:"nic"`
	CascadeUplink *LinkSpec `yaml:"cascade_uplink,omitempty" json:"cascade_uplink,omitempty"`
}

// Machine is a hierarchical machine description, as written in YAML.
type Machine struct {
	Name        string      `yaml:"name" json:"name"`
	Description string      `yaml:"description,omitempty" json:"description,omitempty"`
	Levels      []LevelSpec `yaml:"levels" json:"levels"`
	Servers     ServerSpec  `yaml:"servers" json:"servers"`
}

// Error is a problem in a machine description, located by file, line and field where known.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var sb strings.Builder
	if e.File != "" {
		sb.WriteString(e.File)
		if e.Line > 0 {
			sb.WriteString(":" + strconv.Itoa(e.Line))
		}
		sb.WriteString(": ")
	} else if e.Line > 0 {
		sb.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Field != "" {
		sb.WriteString(e.Field + ": ")
	}
	sb.WriteString(e.Msg)
	return sb.String()
}

// Presets returns the names of the built-in machines.
func Presets() []string { return []string{"mini", "sunway"} }

// Preset returns a built-in machine by name.
func Preset(name string) (*Machine, bool) {
	switch name {
	case "sunway":
		return sunway(), true
	case "mini":
		return mini(), true
	}
	return nil, false
}

// Load returns the preset with the given name, or else reads the machine description file.
func Load(nameOrPath string) (*Machine, error) {
	if m, ok := Preset(nameOrPath); ok {
		return m, nil
	}
	data, err := os.ReadFile(nameOrPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("topology %q: no such preset (%s) or file", nameOrPath, strings.Join(Presets(), ", "))
		}
		return nil, fmt.Errorf("topology: %w", err)
	}
	return Parse(data, nameOrPath)
}

// Parse decodes and checks a machine description; file names the source in errors, which say
// what is wrong in the file's words (line, field, what it wants), never in Go's.
func Parse(data []byte, file string) (*Machine, error) {
	var m Machine
	root, err := yamlerr.Decode(data, &m)
	if errors.Is(err, yamlerr.ErrEmpty) {
		return nil, &Error{File: file, Msg: "empty machine description"}
	}
	var ye *yamlerr.Error
	if errors.As(err, &ye) {
		return nil, &Error{File: file, Line: ye.Line, Field: ye.Field, Msg: ye.Msg}
	}
	if err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	if err := m.check(); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.File = file
			e.Line = FieldLine(root, e.Field)
		}
		return nil, err
	}
	return &m, nil
}

// FieldLine finds the line of a field path such as "levels[2].uplink.capacity_mbps" in a YAML
// mapping, or the line of its closest existing parent; 0 when unknown. Other packages that check
// YAML files use it to point their errors (an Error) at the line.
func FieldLine(n *yaml.Node, path string) int {
	line := 0
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			break
		}
		key, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			key = part[:i]
			idx, _ = strconv.Atoi(part[i+1 : len(part)-1])
		}
		if n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line = n.Content[i].Line
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return line
		}
		n = next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

func (m *Machine) check() error {
	bad := func(field, format string, args ...any) error {
		return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	checkLink := func(field string, l *LinkSpec) error {
		if l.Segment == "" {
			return bad(field+".segment", "missing segment label")
		}
		if !(l.CapacityMbps > 0) || l.CapacityMbps > 1e9 {
			return bad(field+".capacity_mbps", "must be a positive number of Mb/s, got %v", l.CapacityMbps)
		}
		if l.LatencyUS < 0 || l.LatencyUS > 1e7 {
			return bad(field+".latency_us", "must be between 0 and 1e7 microseconds, got %v", l.LatencyUS)
		}
		return nil
	}
	if len(m.Levels) == 0 {
		return bad("levels", "at least one level (the compute nodes) is needed")
	}
	prefixes := map[string]int{}
	names := map[string]int{}
	total := 1
	for i := range m.Levels {
		l := &m.Levels[i]
		f := fmt.Sprintf("levels[%d]", i)
		if l.Name == "" {
			return bad(f+".name", "missing level name")
		}
		if j, ok := names[l.Name]; ok {
			return bad(f+".name", "%q already names levels[%d]", l.Name, j)
		}
		names[l.Name] = i
		p := l.Prefix
		if p == "" {
			p = defaultPrefix(l.Name)
		}
		if p == "" || strings.IndexFunc(p, func(r rune) bool { return r < 'a' || r > 'z' }) >= 0 {
			return bad(f+".prefix", "prefix %q must be lower-case letters a-z", p)
		}
		if j, ok := prefixes[p]; ok {
			return bad(f+".prefix", "prefix %q already used by levels[%d]; set a distinct prefix", p, j)
		}
		prefixes[p] = i
		if l.Count < 1 {
			return bad(f+".count", "must be at least 1, got %d", l.Count)
		}
		if total > maxNodes/l.Count {
			return bad(f+".count", "machine would exceed %d nodes", maxNodes)
		}
		total *= l.Count
		if l.Uplink != nil {
			if err := checkLink(f+".uplink", l.Uplink); err != nil {
				return err
			}
		}
	}
	if m.Levels[len(m.Levels)-1].Uplink == nil {
		return bad(fmt.Sprintf("levels[%d].uplink", len(m.Levels)-1), "the node level needs an uplink (the node NIC)")
	}
	s := &m.Servers
	if s.Count < 1 {
		return bad("servers.count", "at least one boot server is needed, got %d", s.Count)
	}
	if s.Count > maxNodes {
		return bad("servers.count", "at most %d boot servers, got %d", maxNodes, s.Count)
	}
	if err := checkLink("servers.nic", &s.NIC); err != nil {
		return err
	}
	if s.PerCascade < 0 {
		return bad("servers.per_cascade", "must not be negative, got %d", s.PerCascade)
	}
	if s.PerCascade > 0 {
		if s.CascadeUplink == nil {
			return bad("servers.cascade_uplink", "needed when per_cascade > 0")
		}
		if err := checkLink("servers.cascade_uplink", s.CascadeUplink); err != nil {
			return err
		}
	}
	return nil
}

func defaultPrefix(name string) string {
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' {
			return string(r)
		}
	}
	return ""
}

// Check reports the first problem of a machine description built in code.
func (m *Machine) Check() error { return m.check() }

// MarshalYAMLText writes the machine description as YAML, the form users start from.
func (m *Machine) MarshalYAMLText() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// NumNodes returns the number of compute nodes the description yields.
func (m *Machine) NumNodes() int {
	n := 1
	for _, l := range m.Levels {
		n *= l.Count
	}
	return n
}

// Build checks the description and builds its graph. Vertex layout: the core switch, then the
// switches of each switched level (outermost first), the compute nodes in position order, the
// cascade switches and the boot servers.
func (m *Machine) Build() (*Graph, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	levels := make([]Level, len(m.Levels))
	for i, l := range m.Levels {
		p := l.Prefix
		if p == "" {
			p = defaultPrefix(l.Name)
		}
		levels[i] = Level{Name: l.Name, Prefix: p, Count: l.Count}
	}
	h, err := NewHierarchy(levels)
	if err != nil {
		return nil, err
	}
	last := len(levels) - 1
	// Switched levels, outermost first; the node level never has a switch.
	var switched []int
	for i := 0; i < last; i++ {
		if m.Levels[i].Uplink != nil {
			switched = append(switched, i)
		}
	}
	s := m.Servers
	cascades := 0
	if s.PerCascade > 0 {
		cascades = (s.Count + s.PerCascade - 1) / s.PerCascade
	}
	nv, nl := 1+h.NumNodes()+cascades+s.Count, h.NumNodes()+cascades+s.Count
	for _, l := range switched {
		nv += h.Total(l)
		nl += h.Total(l)
	}
	b := &Builder{Name: m.Name}
	b.Grow(nv, nl)
	coreLevel := len(switched)
	core := b.AddVertex(Switch, coreLevel, "")
	// first[k] is the vertex of the first switch of switched level k.
	first := make([]VertexID, len(switched))
	for k, l := range switched {
		first[k] = VertexID(len(b.kinds))
		up := m.Levels[l].Uplink
		for e := 0; e < h.Total(l); e++ {
			v := b.AddVertex(Switch, coreLevel-1-k, "")
			parent := core
			if k > 0 {
				pl := switched[k-1]
				parent = first[k-1] + VertexID(e*h.Span(l)/h.Span(pl))
			}
			b.AddLink(v, parent, up.CapacityMbps, up.LatencyUS, up.Segment)
		}
	}
	firstNode := VertexID(len(b.kinds))
	nic := m.Levels[last].Uplink
	for i := 0; i < h.NumNodes(); i++ {
		v := b.AddVertex(Node, 0, "")
		parent := core
		if k := len(switched) - 1; k >= 0 {
			parent = first[k] + VertexID(i/h.Span(switched[k]))
		}
		b.AddLink(v, parent, nic.CapacityMbps, nic.LatencyUS, nic.Segment)
	}
	firstCascade := VertexID(len(b.kinds))
	for c := 0; c < cascades; c++ {
		v := b.AddVertex(Switch, coreLevel-1, "")
		b.AddLink(v, core, s.CascadeUplink.CapacityMbps, s.CascadeUplink.LatencyUS, s.CascadeUplink.Segment)
	}
	firstServer := VertexID(len(b.kinds))
	for j := 0; j < s.Count; j++ {
		v := b.AddVertex(Server, 0, "")
		parent := core
		if cascades > 0 {
			parent = firstCascade + VertexID(j/s.PerCascade)
		}
		b.AddLink(v, parent, s.NIC.CapacityMbps, s.NIC.LatencyUS, s.NIC.Segment)
	}
	b.SetHierarchy(h)
	b.SetNamer(func(v VertexID) string {
		switch {
		case v == core:
			return "core"
		case v >= firstServer:
			return "bs" + strconv.Itoa(int(v-firstServer))
		case v >= firstCascade:
			return "cascade" + strconv.Itoa(int(v-firstCascade))
		case v >= firstNode:
			return h.NodeName(int(v - firstNode))
		}
		k := sort.Search(len(first), func(k int) bool { return first[k] > v }) - 1
		return h.BlockName(int(v-first[k]), switched[k]) + "-sw"
	})
	return b.Build()
}
