package routing

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// dumpVTFTR routes fat2d:4,2 with two failed leaves (both XY and YX intermediates of some pairs)
// and returns the LFT, SL and SL-to-VL files.
func dumpVTFTR(t *testing.T) (f, lft, sl, sl2vl string, check func(lft, sl, sl2vl string) *DumpCheck) {
	t.Helper()
	fab := identified(t, "fat2d:4,2", "switch leaf1-0\nswitch leaf0-1\n")
	tb, err := VTFTR{}.Compute(fab.Graph)
	if err != nil {
		t.Fatal(err)
	}
	if tb.NumVCs() != 2 {
		t.Fatalf("vtftr uses %d VCs, want 2", tb.NumVCs())
	}
	lanes, err := AssignLanes(fab, tb)
	if err != nil {
		t.Fatal(err)
	}
	var b1, b2, b3 bytes.Buffer
	if err := WriteLFT(&b1, fab, tb); err != nil {
		t.Fatal(err)
	}
	if err := lanes.WriteSL(&b2); err != nil {
		t.Fatal(err)
	}
	if err := lanes.WriteSL2VL(&b3); err != nil {
		t.Fatal(err)
	}
	check = func(lft, sl, sl2vl string) *DumpCheck {
		t.Helper()
		df := DumpFiles{LFT: strings.NewReader(lft), LFTName: "lft"}
		if sl != "" {
			df.SL, df.SLName = strings.NewReader(sl), "sl"
		}
		if sl2vl != "" {
			df.SL2VL, df.SL2VLName = strings.NewReader(sl2vl), "sl2vl"
		}
		dc, err := CheckDump(fab, df)
		if err != nil {
			t.Fatal(err)
		}
		return dc
	}
	return "fat2d:4,2", b1.String(), b2.String(), b3.String(), check
}

// TestLanesVTFTR: VTFTR's second channel deployed as path SLs and SL-to-VL tables is
// deadlock-free when read back from the files; the same tables read as one lane (the LFTs alone,
// as OpenSM's file engine loads them) are not, and neither are SL-to-VL tables that lose the
// second lane.
func TestLanesVTFTR(t *testing.T) {
	_, lft, sl, sl2vl, check := dumpVTFTR(t)
	// 28 healthy nodes (4 on the failed leaves are cut off).
	want := &DumpCheck{Paths: 28 * 27, SLs: 3, VLs: 2, DeadlockFree: true}
	if diff := cmp.Diff(want, check(lft, sl, sl2vl)); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	oneLane := check(lft, "", "")
	if oneLane.DeadlockFree || !cmp.Equal(oneLane.CyclicVLs, []int{0}) || oneLane.Unreachable != 0 {
		t.Errorf("LFTs alone: %+v, want a cycle on VL 0", oneLane)
	}
	flat := regexp.MustCompile(`\| 1\|`).ReplaceAllString(sl2vl, "| 0|")
	flat = regexp.MustCompile(`\| 1\|`).ReplaceAllString(flat, "| 0|") // overlapping matches
	if d := check(lft, sl, flat); d.DeadlockFree {
		t.Errorf("SL-to-VL tables without VL 1: %+v, want a cycle", d)
	}
	if !strings.Contains(sl, "# SLs 3, VLs 2\n") || !strings.Contains(sl2vl, "#                 SL: | 0| 1| 2|") {
		t.Errorf("headers:\n%.400s\n%.400s", sl, sl2vl)
	}
}

// TestCheckDumpFindsBrokenTables: an entry pointing back where the packet came from loops, and a
// missing entry loses the pair.
func TestCheckDumpFindsBrokenTables(t *testing.T) {
	_, lft, sl, sl2vl, check := dumpVTFTR(t)
	lines := strings.Split(lft, "\n")
	// Drop the first switch's first CA entry.
	for i, l := range lines {
		if strings.Contains(l, "# Channel Adapter") {
			lines = append(lines[:i], lines[i+1:]...)
			break
		}
	}
	if d := check(strings.Join(lines, "\n"), sl, sl2vl); d.Unreachable == 0 {
		t.Errorf("missing entry: %+v, want unreachable pairs", d)
	}
}

func TestCheckDumpErrors(t *testing.T) {
	_, lft, sl, sl2vl, _ := dumpVTFTR(t)
	fab := identified(t, "fat2d:4,2", "switch leaf1-0\nswitch leaf0-1\n")
	for _, tc := range []struct {
		lft, sl, sl2vl, want string
	}{
		{strings.Replace(lft, "guid 0x0000000000300", "guid 0x0000000000900", 1), sl, sl2vl, "lft:1: no switch with GUID 0x0000000000900"},
		{lft, sl + "garbage\n", sl2vl, "sl:"},
		{"Switch\t4 \"s\"\n", sl, sl2vl, "lft: no switch tables"},
		{lft, sl + "0x0000000000300001 0x0001 16\n", sl2vl, "SL out of range"},
		{lft, sl, regexp.MustCompile(`(?m)^(ports: in +\d+, out +\d+: \|) 0\|`).ReplaceAllString(sl2vl, "${1}15|"), "VL \"15\" out of range"},
	} {
		_, err := CheckDump(fab, DumpFiles{LFT: strings.NewReader(tc.lft), LFTName: "lft", SL: strings.NewReader(tc.sl), SLName: "sl",
			SL2VL: strings.NewReader(tc.sl2vl), SL2VLName: "sl2vl"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func FuzzCheckDump(f *testing.F) {
	fab := identified(f, "fat2d:4,2", "switch leaf1-0\nswitch leaf0-1\n")
	tb, _ := VTFTR{}.Compute(fab.Graph)
	lanes, _ := AssignLanes(fab, tb)
	var b1, b2, b3 bytes.Buffer
	_ = WriteLFT(&b1, fab, tb)
	_ = lanes.WriteSL(&b2)
	_ = lanes.WriteSL2VL(&b3)
	f.Add(b1.String(), b2.String(), b3.String())
	f.Fuzz(func(t *testing.T, lft, sl, sl2vl string) {
		d, err := CheckDump(fab, DumpFiles{LFT: strings.NewReader(lft), SL: strings.NewReader(sl), SL2VL: strings.NewReader(sl2vl)})
		if err == nil && d.Paths != 28*27 {
			t.Fatalf("paths %d", d.Paths)
		}
		_, _ = ReadLFT(fab, strings.NewReader(lft), "fuzz")
	})
}
