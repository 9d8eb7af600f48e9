package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/fabricsim/simrun"
	"github.com/google/go-cmp/cmp"
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
		{"unknown yaml field", []string{"--topology", unknownField}, unknownField + `:2: unknown field "levelz" (did you mean levels?)`},
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
		{"bad output", []string{"--output", "xml"}, `--output: "xml" is not one of table, json, yaml, csv`},
		{"bad delivery", []string{"--delivery", "p2"}, `--delivery: "p2" is not one of server, p2p (did you mean p2p?)`},
		{"unknown delivery", []string{"--delivery", "torrent"}, `--delivery: "torrent" is not one of server, p2p`},
		{"unknown flag", []string{"--nope"}, `flag provided but not defined: -nope`},
		{"failed server out of range", []string{"--failed-servers", "bs160"}, `"bs160" is not a server`},
		{"dead server unknown name", []string{"--failed-during-boot", "node3"}, `--failed-during-boot: "node3" is not a server (0-159 or bs0-bs159)`},
		{"dead server out of range", []string{"--failed-during-boot", "2,160"}, `--failed-during-boot: "160" is not a server (0-159 or bs0-bs159)`},
		{"dead server negative", []string{"--failed-during-boot", "-1"}, `--failed-during-boot: "-1" is not a server`},
		{"dead server empty item", []string{"--failed-during-boot", "1,,2"}, `--failed-during-boot: "" is not a server`},
		{"absent and dead", []string{"--failed-servers", "1,bs3", "--failed-during-boot", "3"}, `--failed-during-boot: bs3 is also in --failed-servers; a server is either absent (never up) or dead (failed during the boot)`},
		{"all failed, both kinds", []string{"--topology", "mini", "--failed-servers", "0,1", "--failed-during-boot", "bs2,bs3"}, `all 4 boot servers failed; at least one must stay up`},
		{"all dead", []string{"--topology", "mini", "--failed-during-boot", "0,1,2,3"}, `all 4 boot servers failed`},
		{"all absent", []string{"--topology", "mini", "--failed-servers", "0,1,2,3"}, `all 4 boot servers failed`},
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
	var res simrun.Plan
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
	want := "batch,nodes,algo,N1,N2,N3,N4,N5,bandwidth_mbps,bottlenecks,boot_seconds,speedup_vs_scda\nboards 2-3,16,bcda,1000.0000,125.0000,1250.0000,1250.0000,125.0000,125.0000,N2 N5,3.2000,\n"
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

// TestPlanFailedDuringBoot: the issue-12 case through the command line. bs0 absent (dealt around)
// or dead (board 0 moves to bs80) both keep 20 boards at 125 Mb/s, and the rows say which rule.
func TestPlanFailedDuringBoot(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		header  string // the table's failure line
		failed  string // the row's failed cell
		absent  []string
		dead    []string
		moved   int
		checkBW bool
	}{
		{"absent", []string{"--failed-servers", "0"}, "failed servers: absent bs0 (never up: blocks dealt over the live servers)", "absent bs0", []string{"bs0"}, nil, 0, true},
		{"dead", []string{"--failed-during-boot", "0"}, "failed servers: dead bs0 (failed during the boot: only their blocks move, to the least-loaded survivors)", "dead bs0", nil, []string{"bs0"}, 256, true},
		{"both", []string{"--failed-servers", "bs7,bs8,bs9", "--failed-during-boot", "bs0"}, "failed servers: absent bs7-bs9 (never up: blocks dealt over the live servers); dead bs0 (failed during the boot: only their blocks move, to the least-loaded survivors)", "absent bs7-bs9; dead bs0", []string{"bs7", "bs8", "bs9"}, []string{"bs0"}, 264, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"plan", "--algo", "bcda", "--batch", "20"}, tc.args...)
			code, out, errs := bootctl(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 4 {
				t.Fatalf("want 4 lines (machine, failures, head, row):\n%s", out)
			}
			if lines[1] != tc.header {
				t.Errorf("header line %q, want %q", lines[1], tc.header)
			}
			if !strings.HasSuffix(lines[2], " failed") || !strings.HasSuffix(lines[3], "  "+tc.failed) || !strings.Contains(lines[3], " 125.00 ") {
				t.Errorf("table does not show 125 Mb/s and failed %q:\n%s", tc.failed, out)
			}
			code, out, errs = bootctl(t, append(args, "--output", "json")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var res simrun.Plan
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
			r := res.Rows[0]
			got := []any{res.AbsentServers, res.DeadServers, r.Failed, r.MovedNodes, r.BandwidthMbps}
			want := []any{tc.absent, tc.dead, tc.failed, tc.moved, 125.0}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("json (-want +got):\n%s", diff)
			}
		})
	}
	// Without failures the table has no failure line and no failed column.
	_, out, _ := bootctl(t, "plan", "--algo", "bcda", "--batch", "20")
	if strings.Contains(out, "failed") {
		t.Errorf("failure column without failures:\n%s", out)
	}
}

// TestSimulateFailedDuringBoot: simulate takes the same failure flags; a bad one exits 2 with one line.
func TestSimulateFailedDuringBoot(t *testing.T) {
	code, out, errs := bootctl(t, "simulate", "--topology", "mini", "--failed-servers", "1", "--failed-during-boot", "bs1")
	if code != 2 || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "bs1 is also in --failed-servers") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = bootctl(t, "simulate", "--topology", "mini", "--batch", "4", "--failed-during-boot", "0", "--output", "json")
	if code != 0 || !strings.Contains(out, "\"batch\"") {
		t.Errorf("exit %d: %s\n%.300s", code, errs, out)
	}
	if code, _, errs := bootctl(t, "report", "--failed-during-boot", "0"); code != 2 || !strings.Contains(errs, "flag provided but not defined") {
		t.Errorf("report accepted --failed-during-boot: exit %d %s", code, errs)
	}
}
