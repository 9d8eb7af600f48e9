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
	// NodeNames, when set, name the nodes in position order instead of their positions (the
	// admin's names of a flat machine, see Flat). A machine file has positions; JSON keeps the
	// names so that a test cluster's state file rebuilds the same namespaces.
	NodeNames []string `yaml:"-" json:"node_names,omitempty"`
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

func badField(field, format string, args ...any) error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

func (m *Machine) check() error {
	if len(m.Levels) == 0 {
		return badField("levels", "at least one level (the compute nodes) is needed")
	}
	seen := levelNames{names: map[string]int{}, prefixes: map[string]int{}, total: 1}
	for i := range m.Levels {
		if err := seen.check(i, &m.Levels[i]); err != nil {
			return err
		}
	}
	if m.Levels[len(m.Levels)-1].Uplink == nil {
		return badField(fmt.Sprintf("levels[%d].uplink", len(m.Levels)-1), "the node level needs an uplink (the node NIC)")
	}
	return m.Servers.check()
}

// levelNames is what checking the levels in order has seen so far: names and prefixes (to the index
// of the level using them) and the product of the counts.
type levelNames struct {
	names, prefixes map[string]int
	total           int
}

func (seen *levelNames) check(i int, l *LevelSpec) error {
	f := fmt.Sprintf("levels[%d]", i)
	if l.Name == "" {
		return badField(f+".name", "missing level name")
	}
	if j, ok := seen.names[l.Name]; ok {
		return badField(f+".name", "%q already names levels[%d]", l.Name, j)
	}
	seen.names[l.Name] = i
	p := l.Prefix
	if p == "" {
		p = defaultPrefix(l.Name)
	}
	if p == "" || strings.IndexFunc(p, func(r rune) bool { return r < 'a' || r > 'z' }) >= 0 {
		return badField(f+".prefix", "prefix %q must be lower-case letters a-z", p)
	}
	if j, ok := seen.prefixes[p]; ok {
		return badField(f+".prefix", "prefix %q already used by levels[%d]; set a distinct prefix", p, j)
	}
	seen.prefixes[p] = i
	if l.Count < 1 {
		return badField(f+".count", "must be at least 1, got %d", l.Count)
	}
	if seen.total > maxNodes/l.Count {
		return badField(f+".count", "machine would exceed %d nodes", maxNodes)
	}
	seen.total *= l.Count
	if l.Uplink != nil {
		return l.Uplink.check(f + ".uplink")
	}
	return nil
}

func (s *ServerSpec) check() error {
	if s.Count < 1 {
		return badField("servers.count", "at least one boot server is needed, got %d", s.Count)
	}
	if s.Count > maxNodes {
		return badField("servers.count", "at most %d boot servers, got %d", maxNodes, s.Count)
	}
	if err := s.NIC.check("servers.nic"); err != nil {
		return err
	}
	if s.PerCascade < 0 {
		return badField("servers.per_cascade", "must not be negative, got %d", s.PerCascade)
	}
	if s.PerCascade > 0 {
		if s.CascadeUplink == nil {
			return badField("servers.cascade_uplink", "needed when per_cascade > 0")
		}
		return s.CascadeUplink.check("servers.cascade_uplink")
	}
	return nil
}

// check reports a link whose label, capacity or latency is missing or out of range; field names the
// link in the file.
func (l *LinkSpec) check(field string) error {
	if l.Segment == "" {
		return badField(field+".segment", "missing segment label")
	}
	if !(l.CapacityMbps > 0) || l.CapacityMbps > 1e9 {
		return badField(field+".capacity_mbps", "must be a positive number of Mb/s, got %v", l.CapacityMbps)
	}
	if l.LatencyUS < 0 || l.LatencyUS > 1e7 {
		return badField(field+".latency_us", "must be between 0 and 1e7 microseconds, got %v", l.LatencyUS)
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
	h, err := NewHierarchy(m.hierarchyLevels())
	if err != nil {
		return nil, err
	}
	if err := h.setNames(m.NodeNames); err != nil {
		return nil, err
	}
	l := newMachineLayout(m, h)
	b := &Builder{Name: m.Name}
	b.Grow(l.size())
	l.addSwitches(b)
	l.addNodes(b)
	l.addServers(b)
	b.SetHierarchy(h)
	b.SetNamer(l.name)
	return b.Build()
}

func (m *Machine) hierarchyLevels() []Level {
	levels := make([]Level, len(m.Levels))
	for i, l := range m.Levels {
		p := l.Prefix
		if p == "" {
			p = defaultPrefix(l.Name)
		}
		levels[i] = Level{Name: l.Name, Prefix: p, Count: l.Count}
	}
	return levels
}

// machineLayout is where Machine.Build puts each vertex; the first* fields are filled as the vertices
// are added.
type machineLayout struct {
	m *Machine
	h *Hierarchy
	// switched lists the levels with switches, outermost first; the node level never has one.
	switched []int
	cascades int
	core     VertexID
	// first[k] is the vertex of the first switch of switched level k.
	first                                []VertexID
	firstNode, firstCascade, firstServer VertexID
}

func newMachineLayout(m *Machine, h *Hierarchy) *machineLayout {
	l := &machineLayout{m: m, h: h}
	for i := 0; i < len(m.Levels)-1; i++ {
		if m.Levels[i].Uplink != nil {
			l.switched = append(l.switched, i)
		}
	}
	if s := m.Servers; s.PerCascade > 0 {
		l.cascades = (s.Count + s.PerCascade - 1) / s.PerCascade
	}
	return l
}

// size returns the number of vertices and links the machine has.
func (l *machineLayout) size() (vertices, links int) {
	s := l.m.Servers
	vertices, links = 1+l.h.NumNodes()+l.cascades+s.Count, l.h.NumNodes()+l.cascades+s.Count
	for _, lv := range l.switched {
		vertices += l.h.Total(lv)
		links += l.h.Total(lv)
	}
	return vertices, links
}

// addSwitches adds the core and the switches of each switched level, each linked to its parent.
func (l *machineLayout) addSwitches(b *Builder) {
	coreLevel := len(l.switched)
	l.core = b.AddVertex(Switch, coreLevel, "")
	l.first = make([]VertexID, len(l.switched))
	for k, lv := range l.switched {
		l.first[k] = VertexID(len(b.kinds))
		up := l.m.Levels[lv].Uplink
		for e := 0; e < l.h.Total(lv); e++ {
			v := b.AddVertex(Switch, coreLevel-1-k, "")
			parent := l.core
			if k > 0 {
				pl := l.switched[k-1]
				parent = l.first[k-1] + VertexID(e*l.h.Span(lv)/l.h.Span(pl))
			}
			b.AddLink(v, parent, up.CapacityMbps, up.LatencyUS, up.Segment)
		}
	}
}

// addNodes adds the compute nodes in position order, each linked to its innermost switch.
func (l *machineLayout) addNodes(b *Builder) {
	l.firstNode = VertexID(len(b.kinds))
	nic := l.m.Levels[len(l.m.Levels)-1].Uplink
	for i := 0; i < l.h.NumNodes(); i++ {
		v := b.AddVertex(Node, 0, "")
		parent := l.core
		if k := len(l.switched) - 1; k >= 0 {
			parent = l.first[k] + VertexID(i/l.h.Span(l.switched[k]))
		}
		b.AddLink(v, parent, nic.CapacityMbps, nic.LatencyUS, nic.Segment)
	}
}

// addServers adds the cascade switches and the boot servers behind them (or on the core).
func (l *machineLayout) addServers(b *Builder) {
	s := l.m.Servers
	l.firstCascade = VertexID(len(b.kinds))
	for c := 0; c < l.cascades; c++ {
		v := b.AddVertex(Switch, len(l.switched)-1, "")
		b.AddLink(v, l.core, s.CascadeUplink.CapacityMbps, s.CascadeUplink.LatencyUS, s.CascadeUplink.Segment)
	}
	l.firstServer = VertexID(len(b.kinds))
	for j := 0; j < s.Count; j++ {
		v := b.AddVertex(Server, 0, "")
		parent := l.core
		if l.cascades > 0 {
			parent = l.firstCascade + VertexID(j/s.PerCascade)
		}
		b.AddLink(v, parent, s.NIC.CapacityMbps, s.NIC.LatencyUS, s.NIC.Segment)
	}
}

func (l *machineLayout) name(v VertexID) string {
	switch {
	case v == l.core:
		return "core"
	case v >= l.firstServer:
		return "bs" + strconv.Itoa(int(v-l.firstServer))
	case v >= l.firstCascade:
		return "cascade" + strconv.Itoa(int(v-l.firstCascade))
	case v >= l.firstNode:
		return l.h.NodeName(int(v - l.firstNode))
	}
	k := sort.Search(len(l.first), func(k int) bool { return l.first[k] > v }) - 1
	return l.h.BlockName(int(v-l.first[k]), l.switched[k]) + "-sw"
}
