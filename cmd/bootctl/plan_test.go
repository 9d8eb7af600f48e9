package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bootctl runs the command line in-process and returns its exit status, stdout and stderr.
func bootctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"bootctl"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlanBadInput(t *testing.T) {
	zeroCount := writeFile(t, "zero.yaml", "name: x\nlevels:\n  - name: board\n    count: 0\n  - {name: node, count: 2, uplink: {segment: N1, capacity_mbps: 1000}}\nservers:\n  count: 1\n  nic: {segment: N5, capacity_mbps: 1000}\n")
	zeroServers := writeFile(t, "noservers.yaml", "name: x\nlevels:\n  - {name: board, count: 2, uplink: {segment: N2, capacity_mbps: 1000}}\n  - {name: node, count: 2, uplink: {segment: N1, capacity_mbps: 1000}}\nservers:\n  count: 0\n  nic: {segment: N5, capacity_mbps: 1000}\n")
	syntax := writeFile(t, "syntax.yaml", "name: x\nlevels:\n  - name: [board\n")
	unknownField := writeFile(t, "unknown.yaml", "name: x\nlevelz: []\n")
	names := writeFile(t, "nodes.txt", "c0-s0-b0-n0\n# a comment\nc0-s0-b0-n9\n")
	tests := []struct {
		name string
		args []string
		want string // in the one line on stderr
	}{
		{"unknown algorithm", []string{"--algo", "xyz"}, `--algo: unknown algorithm "xyz"`},
		{"algorithm needing a missing level", []string{"--topology", "mini", "--algo", "cyclic:cabinet"}, `no level "cabinet"`},
		{"unknown unit", []string{"--unit", "rack"}, `--unit: unknown unit "rack"`},
		{"unknown unit in batch", []string{"--batch", "3racks"}, `unknown unit "racks"`},
		{"malformed yaml", []string{"--topology", syntax}, syntax + ":2:"},
		{"unknown yaml field", []string{"--topology", unknownField}, unknownField + ":2: field levelz not found"},
		{"inconsistent yaml", []string{"--topology", zeroCount}, zeroCount + ":4: levels[0].count: must be at least 1"},
		{"zero servers", []string{"--topology", zeroServers}, zeroServers + ":6: servers.count: at least one boot server"},
		{"missing topology", []string{"--topology", "nosuch"}, `topology "nosuch": no such preset`},
		{"batch larger than machine", []string{"--batch", "41cabinets"}, `more than the machine's 40 cabinets`},
		{"range past the machine", []string{"--batch", "5000-5200"}, `the machine has 5120 boards`},
		{"fractional nodes", []string{"--batch", "0.3"}, `not a whole number of nodes`},
		{"unknown node name", []string{"--batch", "@" + names}, names + `:3: node name "c0-s0-b0-n9": node 9 out of range`},
		{"missing batch file", []string{"--batch", "@/nonexistent/x"}, `no such file`},
		{"image size without unit", []string{"--image-size", "50"}, `--image-size: size "50": want a number and a unit`},
		{"image size bad unit", []string{"--image-size", "50Mb"}, `unknown unit "Mb"`},
		{"bad output", []string{"--output", "xml"}, `--output: "xml" is not one of table, json, csv`},
		{"unknown flag", []string{"--nope"}, `flag provided but not defined: -nope`},
		{"failed server out of range", []string{"--failed-servers", "bs160"}, `"bs160" is not a server`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := bootctl(t, append([]string{"plan"}, tc.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", code, errs)
			}
			if out != "" {
				t.Errorf("stdout not empty: %q", out)
			}
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			if len(lines) != 1 {
				t.Errorf("stderr has %d lines, want 1:\n%s", len(lines), errs)
			}
			if !strings.Contains(errs, tc.want) {
				t.Errorf("stderr %q does not contain %q", errs, tc.want)
			}
		})
	}
}

func TestPlanDefaultJSON(t *testing.T) {
	code, out, errs := bootctl(t, "plan", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res planJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Nodes != 40960 || res.Servers != 160 {
		t.Errorf("machine %d nodes %d servers", res.Nodes, res.Servers)
	}
	// 11 batches of the paper's ladder x 4 algorithms.
	if len(res.Rows) != 44 {
		t.Fatalf("%d rows, want 44", len(res.Rows))
	}
	for _, r := range res.Rows {
		if r.Batch == "32 boards" && r.Algo == "bcda" && r.SpeedupVsSCDA != 20 {
			t.Errorf("bcda/scda at one supernode = %v, want 20", r.SpeedupVsSCDA)
		}
		if r.Batch == "40 cabinets" && r.SpeedupVsSCDA != 1 {
			t.Errorf("%s/scda at the whole machine = %v, want 1", r.Algo, r.SpeedupVsSCDA)
		}
	}
}

func TestPlanTableAndCSV(t *testing.T) {
	code, out, errs := bootctl(t, "plan", "--algo", "scda,bcda", "--batch", "1,32,1cabinet,40cabinets")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 11 {
			rows[strings.Join(f[:len(f)-11], " ")+"/"+f[len(f)-10]] = strings.Join(f[len(f)-9:], " ")
		}
	}
	for key, want := range map[string]string{
		"32 boards/bcda":   "1000.00 125.00 78.13 125.00 125.00 78.13 N3 5.1 20.00",
		"32 boards/scda":   "1000.00 125.00 78.13 78.13 3.91 3.91 N5 102.4 1.00",
		"40 cabinets/bcda": "1000.00 125.00 78.13 3.91 3.91 3.91 N4,N5 102.4 1.00",
	} {
		if rows[key] != want {
			t.Errorf("row %s = %q, want %q\n%s", key, rows[key], want, out)
		}
	}
	code, out, _ = bootctl(t, "plan", "--algo", "bcda", "--batch", "2-3", "--output", "csv")
	if code != 0 {
		t.Fatal(code)
	}
	want := "batch,nodes,algo,N1,N2,N3,N4,N5,bandwidth_mbps,bottlenecks,boot_seconds,speedup_vs_scda\nboards 2-3,16,bcda,1000.0000,125.0000,1250.0000,1250.0000,125.0000,125.0000,N2 N5,3.2000,0.0000\n"
	if out != want {
		t.Errorf("csv:\n%s\nwant:\n%s", out, want)
	}
}

func TestTopologyShowYAMLRoundTrip(t *testing.T) {
	code, out, errs := bootctl(t, "topology", "show", "sunway", "--output", "yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	p := writeFile(t, "sunway.yaml", out)
	code, a, _ := bootctl(t, "plan", "--topology", p, "--output", "json")
	_, b, _ := bootctl(t, "plan", "--output", "json")
	if code != 0 || a != b {
		t.Errorf("plan from the written YAML differs from the preset's")
	}
	if code, _, _ := bootctl(t, "topology", "show"); code != 2 {
		t.Errorf("topology show without an argument exits %d, want 2", code)
	}
}
