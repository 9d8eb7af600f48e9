package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// simCtl runs bootctl simulate in-process and returns the exit status, stdout and stderr.
func simCtl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"bootctl", "simulate"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func simFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSimulateBadInput(t *testing.T) {
	arrivals := simFile(t, "arr.txt", "s0-b0-n0 0\n# comment\ns0-b0-n7 1.5\n")
	badTime := simFile(t, "time.txt", "s0-b0-n0 soon\n")
	zeroCap := simFile(t, "zero.yaml", "name: x\nlevels:\n  - {name: board, count: 2, uplink: {segment: N2, capacity_mbps: 0}}\n  - {name: node, count: 2, uplink: {segment: N1, capacity_mbps: 1000}}\nservers:\n  count: 1\n  nic: {segment: N5, capacity_mbps: 1000}\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"negative size", []string{"--files", "kernel=-10MB"}, `--files: kernel: size "-10MB"`},
		{"size without unit", []string{"--files", "kernel=10"}, `want a number and a unit`},
		{"malformed files", []string{"--files", "kernel"}, `want NAME=SIZE`},
		{"duplicate file", []string{"--files", "a=1MB,a=2MB"}, `named twice`},
		{"unknown protocol", []string{"--protocol", "ftp"}, `--protocol: unknown protocol "ftp"`},
		{"unknown file protocol", []string{"--files", "k=1MB:nfs"}, `k: unknown protocol "nfs"`},
		{"bad blksize", []string{"--blksize", "4"}, `--blksize: 4 is not 8..65464`},
		{"bad windowsize", []string{"--windowsize", "0"}, `--windowsize: 0`},
		{"negative rtt", []string{"--rtt", "-1ms"}, `--rtt: -1ms must not be negative`},
		{"negative server cap", []string{"--server-cap", "-3"}, `--server-cap`},
		{"zero capacity", []string{"--topology", zeroCap}, `capacity_mbps`},
		{"bad ramp", []string{"--arrival", "ramp:0"}, `rate must be a positive number`},
		{"bad ramp number", []string{"--arrival", "ramp:x"}, `want ramp:N`},
		{"missing arrival file", []string{"--arrival", "/nonexistent/arr"}, `not all, ramp:N or an existing file`},
		{"unknown node in arrivals", []string{"--topology", "mini", "--arrival", arrivals}, arrivals + `:3: unknown node`},
		{"bad arrival time", []string{"--topology", "mini", "--arrival", badTime}, badTime + `:1: time "soon"`},
		{"arrival list vs batch", []string{"--topology", "mini", "--batch", "1", "--arrival", simFile(t, "a.txt", "s0-b0-n0 0\n")}, `has no arrival time`},
		{"bad time step", []string{"--time-step", "fast"}, `--time-step: "fast"`},
		{"bad output", []string{"--output", "xml"}, `--output: "xml" is not one of table, json, yaml, csv`},
		{"unknown algorithm", []string{"--algo", "xyz"}, `unknown algorithm "xyz"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := simCtl(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
				t.Errorf("stderr has %d lines, want one: %q", n+1, stderr)
			}
		})
	}
}

func TestSimulateOutputs(t *testing.T) {
	code, out, stderr := simCtl(t, "--topology", "mini", "--batch", "2")
	if code != 0 || !strings.Contains(out, "batch time 17.122 s") || !strings.Contains(out, "N2") {
		t.Fatalf("table: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = simCtl(t, "--topology", "mini", "--algo", "scda,bcda", "--batch", "1,2", "--protocol", "http")
	if code != 0 || strings.Count(out, "\n") != 6 {
		t.Fatalf("summary: exit %d\n%s", code, out)
	}
	code, out, _ = simCtl(t, "--topology", "mini", "--batch", "1", "--output", "csv", "--arrival", "ramp:2", "--time-step", "0")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 || !strings.HasPrefix(lines[2], "1 board,bcda,s0-b0-n1,bs0,0.5,") {
		t.Fatalf("csv: exit %d\n%s", code, out)
	}
	arr := simFile(t, "arr.txt", "s0-b0-n0 0\ns1-b3-n3, 2s\n")
	code, out, stderr = simCtl(t, "--topology", "mini", "--arrival", arr, "--output", "json", "--files", "image=10MB:none", "--dhcp", "0s", "--health", "0s")
	if code != 0 {
		t.Fatalf("json: exit %d %s", code, stderr)
	}
	var doc simJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	r := doc.Runs[0].Result
	// Each node alone on its path: 10 MB at 100 Mb/s = 0.8 s; the second arrives at 2 s.
	if r.Nodes != 2 || r.NodeResults[1].Name != "s1-b3-n3" || math.Abs(r.NodeResults[0].DoneSeconds-0.8) > 1e-9 || math.Abs(r.BatchSeconds-2.8) > 1e-9 {
		t.Errorf("json result: %+v", r.NodeResults)
	}
}

func TestSimulateDeterministicJSON(t *testing.T) {
	args := []string{"--topology", "mini", "--algo", "all", "--batch", "1,3,8", "--arrival", "ramp:10", "--output", "json"}
	_, a, _ := simCtl(t, args...)
	_, b, _ := simCtl(t, args...)
	if a != b || len(a) < 1000 {
		t.Fatalf("two runs differ (or are empty: %d bytes)", len(a))
	}
}

func TestSimulateFailBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown server", []string{"--fail", "bs9@1s"}, `--fail "bs9@1s": "bs9" is not a boot server (0-3 or bs0-bs3)`},
		{"negative time", []string{"--fail", "bs1@-1s"}, `--fail "bs1@-1s": time "-1s" must not be negative`},
		{"bad time", []string{"--fail", "bs1@soon"}, `--fail "bs1@soon": time "soon": want a duration`},
		{"missing @", []string{"--fail", "bs1"}, `--fail "bs1": want SERVER@TIME`},
		{"negative detection", []string{"--fail", "bs1@1s", "--detect", "-1s"}, `--detect: -1s must not be negative`},
		{"same server twice", []string{"--fail", "bs1@1s,1@2s"}, `--fail "1@2s": bs1 fails twice`},
		{"same server twice, repeated flag", []string{"--fail", "bs1@1s", "--fail", "bs1@2s"}, `bs1 fails twice`},
		{"all servers", []string{"--fail", "0@1,1@1,2@1,3@1"}, `--fail: all 4 boot servers would be down`},
		{"all servers with absent ones", []string{"--failed-servers", "0,1", "--fail", "2@1,3@1"}, `--fail: all 4 boot servers would be down (2 fail, 2 down from the start)`},
		{"absent server", []string{"--failed-servers", "2", "--fail", "bs2@1s"}, `bs2 is down from the start (--failed-servers)`},
		{"detection without failure", []string{"--detect", "1s"}, `--detect needs --fail`},
		{"multicast", []string{"--fail", "bs1@1s", "--delivery", "multicast"}, `unicast delivery only`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := simCtl(t, append([]string{"--topology", "mini", "--batch", "1"}, tc.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
				t.Errorf("stderr has %d lines, want one: %q", n+1, stderr)
			}
		})
	}
}

// TestSimulateFail: one node per server of the mini machine, one 10 MB file, no DHCP or health
// time: each node alone takes 0.8 s at 100 Mb/s. bs3 fails at 0.4 s, half-way: its node starts
// over at 0.4 + 3 s on its new owner (the fleet's rule) and finishes at 4.2 s; the others are done
// at 0.8 s and stay.
func TestSimulateFail(t *testing.T) {
	arr := simFile(t, "arr.txt", "s0-b0-n0 0\ns0-b1-n0 0\ns0-b2-n0 0\ns0-b3-n0 0\n")
	base := []string{"--topology", "mini", "--arrival", arr, "--files", "image=10MB:none", "--dhcp", "0s", "--health", "0s"}
	m, _ := topology.Preset("mini")
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	al, _ := mapping.ParseAlgo("bcda", g.Hierarchy())
	owners, _, err := mapping.Owners(g.Hierarchy(), al, 4, nil, []bool{false, false, false, true})
	if err != nil {
		t.Fatal(err)
	}
	node, _ := g.Hierarchy().ParseNode("s0-b3-n0")
	own := g.VertexName(g.Servers()[owners.Server[node]])

	code, out, stderr := simCtl(t, append(base, "--fail", "bs3@0.4s", "--output", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc simJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	r := doc.Runs[0].Result
	f := r.Failure
	for i, nr := range r.NodeResults {
		want, server := 0.8, "bs"+string(rune('0'+i))
		if i == 3 {
			want, server = 4.2, own
		}
		if math.Abs(nr.DoneSeconds-want) > 1e-9 || nr.Server != server || f.Nodes[i].Restarted != (i == 3) {
			t.Errorf("%+v %+v, want done at %v on %s", nr, f.Nodes[i], want, server)
		}
	}
	st := f.Servers[0]
	if math.Abs(f.BatchSeconds-4.2) > 1e-9 || math.Abs(f.BaselineBatchSeconds-0.8) > 1e-9 || st.Server != "bs3" || st.MidBoot != 1 ||
		st.NotStarted != 0 || st.Done != 0 || len(st.NewOwners) != 1 || st.NewOwners[0].Server != own || st.DetectedSeconds != 3.4 {
		t.Errorf("summary %+v", f)
	}
	if !strings.Contains(out, `"restarted": true`) || !strings.Contains(out, `"servers": [`) {
		t.Errorf("node results without takeover:\n%s", out)
	}

	code, out, _ = simCtl(t, append(base, "--fail", "3@0.4")...)
	for _, want := range []string{"batch time 4.200 s\n", "batch time 4.200 s with them, 0.800 s without (+3.400 s); nodes taken over 1, restarted 1",
		"bs3 0.400 3.400 1 0 0 " + own + " (1)"} {
		if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	// After the end: the JSON is the run without failures', apart from the summary, which says so.
	_, plain, _ := simCtl(t, append(base, "--output", "json")...)
	code, late, _ := simCtl(t, append(base, "--fail", "bs3@100s", "--output", "json")...)
	var a, b map[string]any
	if err := json.Unmarshal([]byte(plain), &a); err != nil || code != 0 {
		t.Fatal(err, code)
	}
	if err := json.Unmarshal([]byte(late), &b); err != nil {
		t.Fatal(err)
	}
	res := b["runs"].([]any)[0].(map[string]any)["result"].(map[string]any)
	sum, _ := json.Marshal(res["failure"])
	delete(res, "failure")
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) || !strings.Contains(string(sum), `"effect":false`) || !strings.Contains(string(sum), "fails after the batch finished: no effect") {
		t.Errorf("a failure after the end changed the result, or the summary does not say so: %s", sum)
	}
	_, table, _ := simCtl(t, append(base, "--fail", "bs3@100s")...)
	if !strings.Contains(table, "no effect") {
		t.Errorf("table:\n%s", table)
	}
}

func TestSimulateFailDeterministic(t *testing.T) {
	args := []string{"--topology", "mini", "--algo", "bcda,ncda", "--batch", "3,8", "--arrival", "ramp:10", "--fail", "bs3@1.5s,bs0@4s",
		"--detect", "2s", "--output", "json"}
	_, a, _ := simCtl(t, args...)
	_, b, _ := simCtl(t, args...)
	if a != b || len(a) < 1000 || !strings.Contains(a, `"restarted": true`) {
		t.Fatalf("two runs differ (or are empty, or restart nothing: %d bytes)", len(a))
	}
	code, csv, _ := simCtl(t, append(args[:len(args)-2], "--output", "csv")...)
	if code != 0 || !strings.HasPrefix(csv, "batch,algo,node,server,arrival_seconds,done_seconds,bottleneck,bound_seconds,restarted,servers\n") {
		t.Fatalf("csv:\n%s", csv)
	}
}
