package routing

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDumpFilesRoundTrip: the files written are those a single-lane or a two-lane table needs, and
// reading them back finds every pair routed, loop-free and deadlock-free; the LFT file reads back
// as tables that route the same.
func TestDumpFilesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name         string
		spec, faults string
		engine       Engine
		suffix       []string
	}{
		{"dmodc", "pgft:2;4,4;1,4;1,1", "", Dmodc{}, []string{""}},
		{"vtftr with failed leaves", "fat2d:4,2", "switch leaf1-0\nswitch leaf0-1\n", VTFTR{}, []string{"", ".sl", ".sl2vl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fab := identified(t, tc.spec, tc.faults)
			tb, err := tc.engine.Compute(fab.Graph)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "lfts.dump")
			files, err := WriteDumpFiles(path, fab, tb)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, s := range tc.suffix {
				want = append(want, path+s)
			}
			if !slices.Equal(files, want) {
				t.Fatalf("files %v, want %v", files, want)
			}
			dc, err := CheckDumpFiles(fab, files)
			if err != nil {
				t.Fatal(err)
			}
			if dc.Unreachable != 0 || dc.Loops != 0 || !dc.DeadlockFree || Verdict(Check(tb, CheckOptions{}), dc) != nil {
				t.Errorf("dump read back: %+v, verdict %v", dc, Verdict(Check(tb, CheckOptions{}), dc))
			}
			if _, err := ReadLFTFile(fab, path); err != nil {
				t.Errorf("ReadLFTFile: %v", err)
			}
		})
	}
}

func TestDumpFilesErrors(t *testing.T) {
	fab := identified(t, "fat2d:4,2", "")
	tb, err := Dmodc{}.Compute(fab.Graph)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "lfts.dump")
	_, err = WriteDumpFiles(missing, fab, tb)
	var fe *DumpFileError
	if !errors.As(err, &fe) || fe.File != missing || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("writing into a missing directory: %v, want a DumpFileError naming %s", err, missing)
	}
	if _, err := CheckDumpFiles(fab, []string{missing}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reading back a missing file: %v", err)
	}
	if _, err := ReadLFTFile(fab, missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("loading a missing file: %v", err)
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  Report
		dump *DumpCheck
		want string
	}{
		{"valid", Report{Valid: true, DeadlockFree: true}, nil, ""},
		{"valid with a good dump", Report{Valid: true, DeadlockFree: true}, &DumpCheck{DeadlockFree: true}, ""},
		{"unreachable and loops", Report{Unreachable: 3, Loops: 2, DeadlockFree: true}, nil,
			"routing invalid: 3 unreachable pairs; 2 destinations reached through a forwarding loop"},
		{"up/down and cycles", Report{UpDownChecked: true, UpDownViolations: 4, CyclicVCs: []int{0, 2}}, nil,
			"routing invalid: 4 up*/down* violations; not deadlock-free: the channel dependencies of virtual channel 0, 2 form a cycle"},
		{"a bad dump of valid tables", Report{Valid: true, DeadlockFree: true}, &DumpCheck{Unreachable: 1, CyclicVLs: []int{1}},
			"routing invalid: the dump read back leaves 1 pairs unreachable and 0 in loops; the dump read back is not deadlock-free: the lane dependencies of VL 1 form a cycle"},
	} {
		err := Verdict(&tc.rep, tc.dump)
		if got := errString(err); got != tc.want {
			t.Errorf("%s: Verdict = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
