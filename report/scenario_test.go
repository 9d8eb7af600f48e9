package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/topology"
	"github.com/google/go-cmp/cmp"
)

func TestParseScenarioErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		line int
		want string
	}{
		{"unknown top-level field", "name: x\nsegmnets:\n  N5: 10000\n", 2, `s.yaml:2: unknown field "segmnets" (did you mean segments?)`},
		{"unknown server field", "name: x\nservers:\n  count: 3\n  nic_mbps: 10\n", 4, `s.yaml:4: servers: unknown field "nic_mbps" (fields here: count, per_cascade)`},
		{"missing name", "segments:\n  N5: 10000\n", 1, "missing scenario name"},
		{"zero servers", "name: x\nservers:\n  count: 0\n", 3, "at least one boot server"},
		{"negative per cascade", "name: x\nservers:\n  per_cascade: -1\n", 3, "must not be negative"},
		{"zero capacity", "name: x\nsegments:\n  N5: 0\n", 3, "positive number of Mb/s"},
		{"capacity not a number", "name: x\nsegments:\n  N5: fast\n", 3, `s.yaml:3: segments.N5: "fast" is not a number`},
		{"count not a whole number", "name: x\nservers:\n  count: many\n", 3, `s.yaml:3: servers.count: "many" is not a whole number`},
		{"list for failed servers", "name: x\nfailed_servers: bs3\n", 2, `s.yaml:2: failed_servers: "bs3" is not a list`},
		{"bare word", "hello\n", 1, "YAML mapping"},
		{"image without unit", "name: x\nimage_size: 100\n", 2, "want a number and a unit"},
		{"not a mapping", "- a\n- b\n", 1, "YAML mapping"},
		{"bad yaml", "name: [x\n", 0, "invalid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScenario([]byte(tc.yaml), "s.yaml")
			var te *topology.Error
			if !errors.As(err, &te) {
				t.Fatalf("error %v (%T), want a *topology.Error", err, err)
			}
			if te.File != "s.yaml" || (tc.line > 0 && te.Line != tc.line) {
				t.Errorf("located at %s:%d, want s.yaml:%d (%v)", te.File, te.Line, tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if tc.line > 0 && !strings.HasPrefix(err.Error(), "s.yaml:") {
				t.Errorf("error %q does not start with the file and line", err)
			}
		})
	}
}

func TestApplyErrors(t *testing.T) {
	base, _ := topology.Preset("mini")
	for _, tc := range []struct {
		name string
		yaml string
		line int
		want string
	}{
		{"unknown segment", "name: x\nsegments:\n  N9: 10\n", 3, `no segment "N9"`},
		{"failed server out of range", "name: x\nfailed_servers: [bs7]\n", 2, `"bs7" is not a server`},
		{"failed cascade out of range", "name: x\nfailed_cascades: [5]\n", 2, "cascade 5 out of range"},
		{"all failed", "name: x\nfailed_servers: [0, 1, 2, 3]\n", 2, "every boot server has failed"},
		{"no cascades", "name: x\nservers:\n  per_cascade: 0\nfailed_cascades: [0]\n", 4, "no cascade switches"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseScenario([]byte(tc.yaml), "s.yaml")
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.apply(base, nil, 50e6)
			var te *topology.Error
			if !errors.As(err, &te) || te.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want line %d and %q", err, tc.line, tc.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	base, _ := topology.Preset("sunway")
	s, err := ParseScenario([]byte(`name: everything
servers:
  count: 320
  per_cascade: 40
segments:
  N5: 10000
  N4: 40000
failed_servers: [bs3, 17]
failed_cascades: [7]
image_size: 100MB
`), "all.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ap, err := s.apply(base, []bool{true}, 50e6)
	if err != nil {
		t.Fatal(err)
	}
	m := ap.machine
	if m.Servers.Count != 320 || m.Servers.PerCascade != 40 || m.Servers.NIC.CapacityMbps != 10000 || m.Servers.CascadeUplink.CapacityMbps != 40000 {
		t.Errorf("servers after apply: %+v (uplink %+v)", m.Servers, m.Servers.CascadeUplink)
	}
	if base.Servers.Count != 160 || base.Servers.NIC.CapacityMbps != 1000 || base.Servers.CascadeUplink.CapacityMbps != 20000 {
		t.Errorf("apply changed the baseline: %+v", base.Servers)
	}
	// bs0 from the baseline, bs3, bs17, cascade 7's 40.
	wantFailed := make([]bool, 320)
	for _, i := range []int{0, 3, 17} {
		wantFailed[i] = true
	}
	for i := 280; i < 320; i++ {
		wantFailed[i] = true
	}
	if diff := cmp.Diff(wantFailed, ap.absent); diff != "" {
		t.Errorf("failed servers (-want +got):\n%s", diff)
	}
	if ap.imageBytes != 100e6 {
		t.Errorf("image %v, want 100e6", ap.imageBytes)
	}
	want := []string{"boot servers 160 -> 320", "servers per cascade switch 20 -> 40", "N4 20 Gb/s -> 40 Gb/s", "N5 1 Gb/s -> 10 Gb/s",
		"boot server bs3 failed", "boot server bs17 failed", "cascade switch 7 uplink failed (servers bs280-bs319 unreachable)", "image 50 MB -> 100 MB"}
	if diff := cmp.Diff(want, ap.changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

// TestExampleScenarios checks that the committed examples parse and apply to the paper's machine.
func TestExampleScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "scenarios", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want at least 3 example scenarios, found %v (%v)", files, err)
	}
	base, _ := topology.Preset("sunway")
	for _, f := range files {
		s, err := LoadScenario(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if _, err := s.apply(base, nil, 50e6); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := LoadScenario(filepath.Join(t.TempDir(), "none.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
}

// TestFailedServerScenario checks that a failed server shows in the results: under bcda its boards
// go elsewhere, so some server serves more nodes and large batches slow down.
func TestFailedServerScenario(t *testing.T) {
	cfg := paperConfig(t, false, false)
	s, err := ParseScenario([]byte("name: bs0 down\nfailed_servers: [bs0]\n"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Scenarios = []*Scenario{s}
	rep := buildReport(t, cfg)
	if got := rep.Scenarios[0].Failed; got != 1 {
		t.Errorf("failed servers %d, want 1", got)
	}
	base := findRow(t, rep.Baseline, "40 cabinets", "bcda").BootSeconds
	after := findRow(t, rep.Scenarios[0], "40 cabinets", "bcda").BootSeconds
	if !(after > base) {
		t.Errorf("whole machine with bs0 failed: %v s, want more than the baseline's %v s", after, base)
	}
}
