package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestRouteSummaryJSON(t *testing.T) {
	code, out, errs := bootctl(t, "route", "--topology", "pgft:3;4,4,8;1,4,4;1,1,1", "--engine", "dmodc", "--check", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var sum struct {
		Engine string `json:"engine"`
		Report struct {
			Switches int  `json:"switches"`
			Valid    bool `json:"valid"`
			VCs      int  `json:"vcs"`
			Shift    struct {
				Max int `json:"max"`
			} `json:"shift"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Engine != "dmodc" || sum.Report.Switches != 80 || !sum.Report.Valid || sum.Report.VCs != 1 || sum.Report.Shift.Max != 1 {
		t.Errorf("summary %+v", sum)
	}
}

func TestRouteVTFTRAndDump(t *testing.T) {
	faults := writeFile(t, "faults.txt", "switch leaf1-0\nswitch leaf0-1  # both XY and YX intermediates of (0,0)->(1,1)\n")
	dump := filepath.Join(t.TempDir(), "lft.txt")
	code, out, errs := bootctl(t, "route", "--topology", "fat2d:4,2", "--engine", "vtftr", "--faults", faults, "--check", "--dump", dump)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"valid", "true", "virtual channels", "28 healthy"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "Unicast lids [0x0-0x") || !strings.Contains(string(data), "valid lids dumped") {
		t.Errorf("dump:\n%.300s", data)
	}
}

func TestRouteBadInput(t *testing.T) {
	badTopo := writeFile(t, "bad.topo", "switchguid=0x2c9\nSwitch\t2 \"S-01\"\n[1]\tgarbage\n")
	unknown := writeFile(t, "f1.txt", "switch s2-0\nswitch nosuch\n")
	cut := writeFile(t, "f2.txt", "switch s2-0\nswitch s2-1\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--topology", "pgft:3;8,8;1,8,8"}, "m list"},
		{[]string{"--topology", badTopo}, "bad.topo:3: malformed port line"},
		{[]string{"--topology", "pgft:2;4,4;1,2;1,1", "--faults", unknown}, "f1.txt:2: unknown switch \"nosuch\""},
		{[]string{"--topology", "pgft:2;4,4;1,2;1,1", "--faults", cut}, "faults disconnect the fabric for dmodc: 192 unreachable pairs, first: n4->n0"},
		{[]string{"--topology", "pgft:2;4,4;1,2;1,1", "--engine", "magic"}, "--engine"},
		{[]string{"--topology", "fat2d:4", "--engine", "dmodk"}, "not an intact PGFT"},
	} {
		code, _, errs := bootctl(t, append([]string{"route"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		last := lines[len(lines)-1]
		if code != 2 || !strings.Contains(last, tc.want) {
			t.Errorf("route %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestRouteEngineAdvice: pairs an engine leaves unreachable on a connected fabric are blamed on
// the engine's up*/down* restriction, with the engines that do route the fabric, deadlock-free
// ones first (exit 2); a fabric the faults really cut keeps its own message.
func TestRouteEngineAdvice(t *testing.T) {
	cut := writeFile(t, "cut.txt", "switch s2-0\nswitch s2-1\n")
	tests := []struct {
		name string
		args []string
		want []string // in the last line of stderr, in order
	}{
		{"fat2d default engine", []string{"-t", "fat2d:16"}, []string{
			"dmodc leaves 14745600 pairs unreachable", "though the fabric connects them",
			"dmodc routes up*/down* only", "2-D fat-tree",
			"engines that route it: -e vtftr, or -e updn --roots row0, or -e minhop (every pair, but not deadlock-free)"}},
		{"fat2d updn top-level roots", []string{"-t", "fat2d:4", "-e", "updn"}, []string{
			"updn leaves 2304 pairs unreachable", "updn routes up*/down* only",
			"engines that route it: -e vtftr, or -e updn --roots row0, or -e minhop"}},
		{"pgft updn leaf roots", []string{"-t", "pgft:2;4,4;1,2;1,1", "-e", "updn", "--roots", "s1-0,s1-3"}, []string{
			"updn leaves 32 pairs unreachable", "from the roots given",
			"engines that route it: -e dmodk, or -e dmodc, or -e updn, or -e minhop"}},
		{"faults cut the fabric", []string{"-t", "pgft:2;4,4;1,2;1,1", "--faults", cut}, []string{
			"faults disconnect the fabric for dmodc: 192 unreachable pairs"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := bootctl(t, append([]string{"route"}, tc.args...)...)
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			last := lines[len(lines)-1]
			if code != 2 || out != "" {
				t.Errorf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			rest := last
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stderr %q lacks %q (in order)", last, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

// TestRouteInvalidExits: a routing that fails its check is printed (table or JSON) and exits 1
// naming what failed; a valid one exits 0.
func TestRouteInvalidExits(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string // out: a regular expression
	}{
		{"minhop on fat2d, checked", []string{"-t", "fat2d:4", "-e", "minhop", "--check"}, 1, `valid +false\n(.*\n)*\s*deadlock free +false`,
			"bootctl route: routing invalid: not deadlock-free: the channel dependencies of virtual channel 0 form a cycle"},
		{"minhop on fat2d, json", []string{"-t", "fat2d:4", "-e", "minhop", "-o", "json"}, 1, `"valid": false`, "routing invalid: not deadlock-free"},
		{"minhop on fat2d, unchecked", []string{"-t", "fat2d:4", "-e", "minhop"}, 1, `valid +false`, "routing invalid: not deadlock-free"},
		{"vtftr on fat2d", []string{"-t", "fat2d:4", "-e", "vtftr", "--check"}, 0, `valid +true\n(.*\n)*\s*deadlock free +true`, ""},
		{"minhop on a tree", []string{"-t", "pgft:2;4,4;1,2;1,1", "-e", "minhop", "--check"}, 0, `valid +true`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := bootctl(t, append([]string{"route"}, tc.args...)...)
			if code != tc.code || !regexp.MustCompile(tc.out).MatchString(out) {
				t.Errorf("exit %d, stdout:\n%s\nwant exit %d and %q", code, out, tc.code, tc.out)
			}
			if tc.err == "" && strings.Contains(errs, "bootctl route:") || !strings.Contains(errs, tc.err) {
				t.Errorf("stderr %q, want %q", errs, tc.err)
			}
		})
	}
}
