package report

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/internal/yamlerr"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/bootfabric/bootfabric/units"
	"gopkg.in/yaml.v3"
)

// Scenario is a what-if: a small set of overrides on the machine description and the plan,
// written as YAML:
//
//	name: N5 at 10 Gb/s                 # required, shown in the report
//	description: boot server NICs on 10 GbE
//	servers:                            # boot servers
//	  count: 320
//	  per_cascade: 40
//	segments:                           # capacity in Mb/s of every link of a segment
//	  N5: 10000
//	failed_servers: [bs3, 17]           # in addition to the baseline's
//	failed_cascades: [0]                # a failed cascade uplink: its servers are unreachable
//	image_size: 100MB
//
// Every field but name is optional; unknown fields are rejected with the file and line.
type Scenario struct {
	Name           string             `yaml:"name" json:"name"`
	Description    string             `yaml:"description,omitempty" json:"description,omitempty"`
	Servers        *ServerOverride    `yaml:"servers,omitempty" json:"servers,omitempty"`
	Segments       map[string]float64 `yaml:"segments,omitempty" json:"segments,omitempty"`
	FailedServers  []string           `yaml:"failed_servers,omitempty" json:"failed_servers,omitempty"`
	FailedCascades []int              `yaml:"failed_cascades,omitempty" json:"failed_cascades,omitempty"`
	ImageSize      string             `yaml:"image_size,omitempty" json:"image_size,omitempty"`

	// File names the source in errors.
	File string `yaml:"-" json:"-"`
	root *yaml.Node
}

// ServerOverride changes the boot servers.
type ServerOverride struct {
	Count      *int `yaml:"count,omitempty" json:"count,omitempty"`
	PerCascade *int `yaml:"per_cascade,omitempty" json:"per_cascade,omitempty"`
}

// LoadScenario reads and checks a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return ParseScenario(data, path)
}

// ParseScenario decodes a scenario with the shared strict decoder (internal/yamlerr), so that its
// errors read like a machine file's: the line, the field as written and what it wants
// (segments.N5: "fast" is not a number; unknown field "segmnets" (did you mean segments?)), never a
// Go type. file names the source in errors, which are *topology.Error.
func ParseScenario(data []byte, file string) (*Scenario, error) {
	s, err := decodeScenario(data, file)
	if err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

// decodeScenario decodes the YAML, errors located in file.
func decodeScenario(data []byte, file string) (*Scenario, error) {
	var s Scenario
	root, err := yamlerr.Decode(data, &s)
	if ye, ok := errors.AsType[*yamlerr.Error](err); ok {
		// A list or a bare word is not a scenario at all: say what one is rather than what the
		// document's top level should have been.
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) > 0 && doc.Content[0].Kind != yaml.MappingNode {
			err = yamlerr.ErrEmpty
		} else {
			return nil, &topology.Error{File: file, Line: ye.Line, Field: ye.Field, Msg: ye.Msg}
		}
	}
	if errors.Is(err, yamlerr.ErrEmpty) {
		return nil, &topology.Error{File: file, Line: 1, Msg: "a scenario is a YAML mapping with at least a name"}
	}
	if err != nil {
		return nil, &topology.Error{File: file, Msg: err.Error()}
	}
	s.File, s.root = file, root
	return &s, nil
}

// check checks every field's value on its own; apply checks them against the machine.
func (s *Scenario) check() error {
	if strings.TrimSpace(s.Name) == "" {
		return s.errorf("name", "missing scenario name")
	}
	if s.Servers != nil {
		if s.Servers.Count != nil && *s.Servers.Count < 1 {
			return s.errorf("servers.count", "at least one boot server is needed, got %d", *s.Servers.Count)
		}
		if s.Servers.PerCascade != nil && *s.Servers.PerCascade < 0 {
			return s.errorf("servers.per_cascade", "must not be negative, got %d", *s.Servers.PerCascade)
		}
	}
	for _, seg := range s.segmentNames() {
		if v := s.Segments[seg]; !(v > 0) || v > 1e9 {
			return s.errorf("segments."+seg, "capacity must be a positive number of Mb/s, got %v", v)
		}
	}
	if s.ImageSize != "" {
		if _, err := units.ParseSize(s.ImageSize); err != nil {
			return s.errorf("image_size", "%v", err)
		}
	}
	return nil
}

// segmentNames returns the overridden segments in sorted order, so that applying and describing
// a scenario never depends on map order.
func (s *Scenario) segmentNames() []string {
	names := make([]string, 0, len(s.Segments))
	for k := range s.Segments {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// errorf returns an error located at the field path (e.g. "segments.N5") of the scenario file.
func (s *Scenario) errorf(field, format string, args ...any) error {
	return &topology.Error{File: s.File, Line: nodeLine(s.root, field), Field: field, Msg: fmt.Sprintf(format, args...)}
}

// nodeLine finds the line of a dotted field path in a YAML mapping, or of its closest parent.
func nodeLine(n *yaml.Node, path string) int {
	if n == nil {
		return 0
	}
	line := n.Line
	for _, key := range strings.Split(path, ".") {
		if n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line, next = n.Content[i].Line, n.Content[i+1]
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// applied is a scenario's machine and plan after the overrides.
type applied struct {
	machine    *topology.Machine
	absent     []bool
	imageBytes float64
	changes    []string
}

// cloneMachine copies a machine description deeply enough that overrides do not touch the original.
func cloneMachine(m *topology.Machine) *topology.Machine {
	c := *m
	c.Levels = slices.Clone(m.Levels)
	for i := range c.Levels {
		if u := c.Levels[i].Uplink; u != nil {
			cu := *u
			c.Levels[i].Uplink = &cu
		}
	}
	if u := m.Servers.CascadeUplink; u != nil {
		cu := *u
		c.Servers.CascadeUplink = &cu
	}
	return &c
}

// links returns pointers to every link description of m, in description order.
func links(m *topology.Machine) []*topology.LinkSpec {
	var out []*topology.LinkSpec
	for i := range m.Levels {
		if m.Levels[i].Uplink != nil {
			out = append(out, m.Levels[i].Uplink)
		}
	}
	out = append(out, &m.Servers.NIC)
	if m.Servers.CascadeUplink != nil {
		out = append(out, m.Servers.CascadeUplink)
	}
	return out
}

// withCapacity returns a copy of m with every link of segment seg at capacity Mb/s.
func withCapacity(m *topology.Machine, seg string, capacity float64) (*topology.Machine, bool) {
	c := cloneMachine(m)
	found := false
	for _, l := range links(c) {
		if l.Segment == seg {
			l.CapacityMbps, found = capacity, true
		}
	}
	return c, found
}

// segmentCapacity returns the capacity of segment seg in m (the first link description with it).
func segmentCapacity(m *topology.Machine, seg string) float64 {
	for _, l := range links(m) {
		if l.Segment == seg {
			return l.CapacityMbps
		}
	}
	return 0
}

// apply returns the baseline with the scenario's overrides, each change described for the report.
func (s *Scenario) apply(base *topology.Machine, baseAbsent []bool, baseImage float64) (*applied, error) {
	m := cloneMachine(base)
	changes := s.applyServers(m)
	m, segChanges, err := s.applySegments(m, base)
	if err != nil {
		return nil, err
	}
	changes = append(changes, segChanges...)
	if err := m.Check(); err != nil {
		var te *topology.Error
		if errors.As(err, &te) {
			return nil, s.errorf(scenarioField(te.Field), "after the overrides, %s: %s", te.Field, te.Msg)
		}
		return nil, s.errorf("", "after the overrides: %v", err)
	}
	absent, failChanges, err := s.failedServers(m, baseAbsent)
	if err != nil {
		return nil, err
	}
	changes = append(changes, failChanges...)
	img := baseImage
	if s.ImageSize != "" {
		img, _ = units.ParseSize(s.ImageSize) // checked when parsed
		changes = append(changes, fmt.Sprintf("image %s -> %s", units.FormatBytes(baseImage), units.FormatBytes(img)))
	}
	if len(changes) == 0 {
		changes = []string{"no change"}
	}
	return &applied{machine: m, absent: absent, imageBytes: img, changes: changes}, nil
}

// applyServers sets the server count and servers per cascade switch of m.
func (s *Scenario) applyServers(m *topology.Machine) []string {
	so := s.Servers
	if so == nil {
		return nil
	}
	var changes []string
	if so.Count != nil && *so.Count != m.Servers.Count {
		changes = append(changes, fmt.Sprintf("boot servers %d -> %d", m.Servers.Count, *so.Count))
		m.Servers.Count = *so.Count
	}
	if so.PerCascade != nil && *so.PerCascade != m.Servers.PerCascade {
		changes = append(changes, fmt.Sprintf("servers per cascade switch %d -> %d", m.Servers.PerCascade, *so.PerCascade))
		m.Servers.PerCascade = *so.PerCascade
	}
	return changes
}

// applySegments sets segment capacities; a segment base does not have is an error naming those
// it has.
func (s *Scenario) applySegments(m, base *topology.Machine) (*topology.Machine, []string, error) {
	var changes []string
	for _, seg := range s.segmentNames() {
		old := segmentCapacity(m, seg)
		var ok bool
		if m, ok = withCapacity(m, seg, s.Segments[seg]); !ok {
			var known []string
			for _, l := range links(base) {
				if !slices.Contains(known, l.Segment) {
					known = append(known, l.Segment)
				}
			}
			return nil, nil, s.errorf("segments."+seg, "the machine has no segment %q (segments: %s)", seg, strings.Join(known, ", "))
		}
		changes = append(changes, fmt.Sprintf("%s %s -> %s", seg, fmtRate(old), fmtRate(s.Segments[seg])))
	}
	return m, changes, nil
}

// failedServers marks the failed servers of m: the baseline's, the scenario's own, and those
// behind its failed cascade switches. At least one must be left.
func (s *Scenario) failedServers(m *topology.Machine, baseAbsent []bool) ([]bool, []string, error) {
	n := m.Servers.Count
	absent := make([]bool, n)
	for i, f := range baseAbsent {
		if f {
			if i >= n {
				return nil, nil, s.errorf("servers.count", "baseline failed server bs%d is beyond the scenario's %d servers", i, n)
			}
			absent[i] = true
		}
	}
	var changes []string
	for _, item := range s.FailedServers {
		i, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(item), "bs"))
		if err != nil || i < 0 || i >= n {
			return nil, nil, s.errorf("failed_servers", "%q is not a server (0-%d or bs0-bs%d)", item, n-1, n-1)
		}
		absent[i] = true
		changes = append(changes, fmt.Sprintf("boot server bs%d failed", i))
	}
	cascadeChanges, err := s.failCascades(m, absent)
	if err != nil {
		return nil, nil, err
	}
	changes = append(changes, cascadeChanges...)
	if !slices.Contains(absent, false) {
		return nil, nil, s.errorf("failed_servers", "every boot server has failed")
	}
	return absent, changes, nil
}

// failCascades marks the servers behind each failed cascade switch's uplink as failed.
func (s *Scenario) failCascades(m *topology.Machine, absent []bool) ([]string, error) {
	if len(s.FailedCascades) == 0 {
		return nil, nil
	}
	n, per := m.Servers.Count, m.Servers.PerCascade
	if per == 0 {
		return nil, s.errorf("failed_cascades", "the machine has no cascade switches (servers.per_cascade is 0)")
	}
	cascades := (n + per - 1) / per
	var changes []string
	for _, c := range s.FailedCascades {
		if c < 0 || c >= cascades {
			return nil, s.errorf("failed_cascades", "cascade %d out of range (0-%d)", c, cascades-1)
		}
		for j := c * per; j < min(n, (c+1)*per); j++ {
			absent[j] = true
		}
		changes = append(changes, fmt.Sprintf("cascade switch %d uplink failed (servers bs%d-bs%d unreachable)", c, c*per, min(n, (c+1)*per)-1))
	}
	return changes, nil
}

// scenarioField maps a machine field that failed its check back to the scenario field that set it.
func scenarioField(machineField string) string {
	switch {
	case strings.HasPrefix(machineField, "servers.count"):
		return "servers.count"
	case strings.HasPrefix(machineField, "servers.per_cascade"), strings.HasPrefix(machineField, "servers.cascade_uplink"):
		return "servers.per_cascade"
	}
	return "segments"
}

// fmtRate writes a capacity in Mb/s as Gb/s when it is a whole number of Gb/s.
func fmtRate(mbps float64) string {
	if mbps >= 1000 && mbps == float64(int64(mbps/1000))*1000 {
		return strconv.FormatFloat(mbps/1000, 'f', -1, 64) + " Gb/s"
	}
	return strconv.FormatFloat(mbps, 'f', -1, 64) + " Mb/s"
}
