package yamlerr

import (
	"errors"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

type link struct {
	Segment      string  `yaml:"segment"`
	CapacityMbps float64 `yaml:"capacity_mbps"`
	LatencyUS    float64 `yaml:"latency_us"`
}

type level struct {
	Name   string `yaml:"name"`
	Count  int    `yaml:"count"`
	Uplink *link  `yaml:"uplink,omitempty"`
}

type machine struct {
	Name    string        `yaml:"name"`
	Levels  []level       `yaml:"levels"`
	Timeout time.Duration `yaml:"timeout"`
	Debug   bool          `yaml:"debug"`
	Plain   string
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"string for a float", "name: x\nlevels:\n  - name: a\n    uplink: {segment: N1, capacity_mbps: 1Gb}\n",
			`line 4: levels[0].uplink.capacity_mbps: "1Gb" is not a number`},
		{"unknown field with a near name", "name: x\nlevels:\n  - name: a\n  - name: b\n    uplink:\n      latencyus: 5\n",
			`line 6: levels[1].uplink: unknown field "latencyus" (did you mean latency_us?)`},
		{"unknown field in another case", "name: x\nlevels:\n  - name: a\n    uplink: {LatencyUS: 5}\n",
			`line 4: levels[0].uplink: unknown field "LatencyUS" (did you mean latency_us?)`},
		{"unknown field far from any", "name: x\ncolour: red\n",
			`line 2: unknown field "colour" (fields here: name, levels, timeout, debug, plain)`},
		{"text for a whole number", "levels:\n  - count: many\n", `line 2: levels[0].count: "many" is not a whole number`},
		{"mapping for a list", "levels: {a: 1}\n", `line 1: levels: want a list, not a mapping`},
		{"list for a mapping", "levels:\n  - uplink: [1, 2]\n", `line 2: levels[0].uplink: want a mapping (name: value lines), not a list`},
		{"bad duration", "timeout: 5\n", `line 1: timeout: "5" is not a duration (e.g. 300ms, 2s)`},
		{"bad bool", "debug: maybe\n", `line 1: debug: "maybe" is not true or false`},
		{"syntax", "name: x\nlevels:\n  - name: [a\n", `line 2: invalid YAML: did not find expected ',' or ']'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m machine
			_, err := Decode([]byte(tc.doc), &m)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want an *Error", err, err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n  %s\nwant\n  %s", err, tc.want)
			}
		})
	}
	var m machine
	if _, err := Decode([]byte("# nothing\n"), &m); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty document: %v", err)
	}
	if root, err := Decode([]byte("name: x\nlevels:\n  - {name: a, count: 2}\n"), &m); err != nil || root == nil || m.Levels[0].Count != 2 {
		t.Errorf("good document: %v %+v", err, m)
	}
}

// size is a type with its own unmarshaler that refuses with a ValueError.
type size int

func (s *size) UnmarshalYAML(n *yaml.Node) error {
	if n.Value != "big" {
		return &ValueError{Node: n, Want: "big"}
	}
	*s = 1
	return nil
}

// TestValueError: a refusal of a custom unmarshaler reads like one of a built-in type, with the
// line and the field, not as a syntax error.
func TestValueError(t *testing.T) {
	type part struct {
		Size size `yaml:"size"`
	}
	type doc struct {
		Name  string `yaml:"name"`
		Parts []part `yaml:"parts"`
	}
	tests := []struct {
		name, doc, want string
	}{
		{"top level", "name: x\nparts:\n  - size: big\n  - size: small\n", `line 4: parts[1].size: "small" is not big`},
		{"flow mapping", "parts: [{size: tiny}]\n", `line 1: parts[0].size: "tiny" is not big`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d doc
			_, err := Decode([]byte(tc.doc), &d)
			if _, ok := errors.AsType[*Error](err); !ok || err.Error() != tc.want {
				t.Errorf("error %v (%T), want %s", err, err, tc.want)
			}
		})
	}
}
