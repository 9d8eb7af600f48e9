package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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
