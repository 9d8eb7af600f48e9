package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bootfabric/bootfabric/routing"
	"github.com/bootfabric/bootfabric/topology"
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

// saqueryOf writes a saquery NodeRecord dump naming the spec's vertices, with made-up GUIDs and
// LIDs: the identities --lids gives a fabric built after the spec (bootctl route --net).
func saqueryOf(t *testing.T, spec string) string {
	t.Helper()
	f, err := topology.OpenFabric(spec)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for v := range topology.VertexID(f.NumVertices()) {
		g := 0x300000 + 4*uint64(v)
		pg := g + 1
		if f.Kind(v) == topology.Switch {
			pg = g
		}
		fmt.Fprintf(&b, "NodeRecord dump:\n\t\tlid.....................%d\n\t\tnode_guid...............0x%016x\n\t\tport_guid...............0x%016x\n\t\tNodeDescription.........%s\n", v+1, g, pg, f.Desc(v))
	}
	return writeFile(t, "saquery.out", b.String())
}

// TestRouteVTFTRAndDump: vtftr's two channels are dumped as path SLs and SL-to-VL tables next to
// the LFTs, and --check reads the three files back: deadlock-free.
func TestRouteVTFTRAndDump(t *testing.T) {
	faults := writeFile(t, "faults.txt", "switch leaf1-0\nswitch leaf0-1  # both XY and YX intermediates of (0,0)->(1,1)\n")
	dump := filepath.Join(t.TempDir(), "lft.txt")
	code, out, errs := bootctl(t, "route", "--topology", "fat2d:4,2", "--engine", "vtftr", "--faults", faults, "--check",
		"--lids", saqueryOf(t, "fat2d:4,2"), "--dump", dump, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var sum routing.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	want := &routing.DumpCheck{Paths: 28 * 27, SLs: 3, VLs: 2, DeadlockFree: true}
	if diff := cmp.Diff(want, sum.DumpCheck); diff != "" {
		t.Errorf("dump check (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{dump, dump + ".sl", dump + ".sl2vl"}, sum.DumpFiles); diff != "" {
		t.Errorf("dump files (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "('leaf1-0')") {
		t.Errorf("the dump has a block for the failed switch leaf1-0")
	}
	if !regexp.MustCompile(`^Unicast lids \[0-\d+\] of switch Lid \d+ guid 0x[0-9a-f]{16} \('[a-z0-9-]+'\):\n0x`).Match(data) || !strings.Contains(string(data), "lids dumped\n") {
		t.Errorf("dump:\n%.300s", data)
	}
	// The same tables as one lane (the SL-to-VL tables lost): --check's reading finds the cycle.
	if err := os.WriteFile(dump+".sl2vl", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dc, err := routing.CheckDumpFiles(topologyWithLIDs(t, "fat2d:4,2", faults), sum.DumpFiles)
	if err != nil || dc.DeadlockFree {
		t.Errorf("one lane: %+v %v, want a cycle", dc, err)
	}
}

func topologyWithLIDs(t *testing.T, spec, faults string) *topology.Fabric {
	t.Helper()
	f, err := topology.OpenFabric(spec)
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(faults)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	ft, err := topology.ParseFaults(fh, faults, f)
	if err != nil {
		t.Fatal(err)
	}
	if f, err = f.ApplyFaults(ft); err != nil {
		t.Fatal(err)
	}
	if f, err = f.WithLIDsFile(saqueryOf(t, spec)); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRouteBadInput(t *testing.T) {
	badTopo := writeFile(t, "bad.topo", "switchguid=0x2c9\nSwitch\t2 \"S-01\"\n[1]\tgarbage\n")
	unknown := writeFile(t, "f1.txt", "switch s2-0\nswitch nosuch\n")
	cut := writeFile(t, "f2.txt", "switch s2-0\nswitch s2-1\n")
	const ibsimNet = "../../topology/testdata/ibsim-2sw2path4hca.net"
	const ibsimGUID2LID = "../../topology/testdata/ibsim-2sw2path4hca.guid2lid"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--topology", "pgft:3;8,8;1,8,8"}, "m list"},
		{[]string{"--topology", badTopo}, "bad.topo:3: malformed port line"},
		{[]string{"--topology", "pgft:2;4,4;1,2;1,1", "--faults", unknown}, "f1.txt:2: unknown switch \"nosuch\""},
		{[]string{"--topology", "pgft:2;4,4;1,2;1,1", "--faults", cut}, "faults disconnect the fabric for dmodc: 192 unreachable pairs, first: n4->n0"},
		{[]string{"--topology", "pgft:2;4,4;1,2;1,1", "--engine", "magic"}, "--engine"},
		{[]string{"--topology", "fat2d:4", "--engine", "dmodk"}, "not an intact PGFT spec"},
		{[]string{"--topology", "pgft:2;4,4;1,2;1,1", "--dump", "x"}, "--dump: pgft:2;4,4;1,2;1,1 has no port GUIDs or LIDs of its own (a spec or machine file gets made-up ones), and OpenSM's file engine applies each entry to the port whose GUID it names: give --lids with the fabric's identities (OpenSM's guid2lid file, or the output of ibnetdiscover or saquery), or route the fabric's ibnetdiscover output (-t FILE)"},
		{[]string{"--topology", ibsimNet, "-e", "minhop", "--dump", "x"}, "has no LID for 6 of its ports (first: Hca1, Hca2, Hca3)"},
		{[]string{"--topology", ibsimNet, "--lids", "nosuch"}, "--lids: open nosuch"},
		{[]string{"--topology", "pgft:2;4,4;1,2;1,1", "--lids", ibsimGUID2LID}, "is a guid2lid file, which names ports by GUID, and the topology has no GUIDs of its own"},
		{[]string{"--topology", ibsimNet, "--lids", writeFile(t, "g2l", "0x0000000000100001 1 1\n")}, "5 of the topology's ports are not in it by port GUID, first: Hca2 (port GUID 0x0000000000100004)"},
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

// TestRouteLoad checks tables read from OpenSM's own dump (OpenSM 3.3.23's opensm-lfts.dump of
// the fabric simulated by ibsim, see routing's testdata) like computed ones.
func TestRouteLoad(t *testing.T) {
	const dir = "../../routing/testdata/"
	code, out, errs := bootctl(t, "route", "-t", dir+"fattree-ibsim.ibnetdiscover", "--load", dir+"fattree-ibsim.opensm-lfts.dump", "--check", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var sum routing.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Engine != "file" || !sum.Report.Valid || sum.Report.Unreachable != 0 || sum.Report.Shift == nil || sum.Report.Shift.Max != 1 {
		t.Errorf("summary %+v, report %+v", sum, sum.Report)
	}
	// A file that is not a dump, and a topology without LIDs to find the entries by.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", dir + "fattree-ibsim.ibnetdiscover", "--load", dir + "fattree-ibsim.ibnetdiscover"}, "--load: " + dir + "fattree-ibsim.ibnetdiscover: no switch tables"},
		{[]string{"-t", "pgft:2;2,2;1,2;1,1", "--load", dir + "fattree-ibsim.opensm-lfts.dump"}, "--load: pgft:2;2,2;1,2;1,1 has no port GUIDs or LIDs of its own"},
	} {
		code, _, errs := bootctl(t, append([]string{"route"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("route %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}
