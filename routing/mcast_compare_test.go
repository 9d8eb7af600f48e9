package routing

import (
	"strings"
	"testing"
)

// TestCompareMulticast: one row per algorithm, in the order asked, each as RouteMulticast gives
// it; the times are in the result only with Timings; every progress callback is ended.
func TestCompareMulticast(t *testing.T) {
	g, h := mcGraph(t, "pgft:3;4,4,4;1,4,4;1,1,1")
	groups := mcWorkload(t, g, 50, 6)
	algos := []McastAlgorithm{McastSSSP, McastFULB}
	for _, timings := range []bool{false, true} {
		started, ended := 0, 0
		cmp, err := CompareMulticast(g, groups, algos, CompareOptions{FixedRoot: true, Timings: timings,
			Progress: func(McastAlgorithm) (func(int, int), func()) { started++; return nil, func() { ended++ } }})
		if err != nil {
			t.Fatal(err)
		}
		if started != 2 || ended != 2 {
			t.Errorf("progress started %d, ended %d, want 2 and 2", started, ended)
		}
		if cmp.Groups != len(groups) || cmp.Switches != h.NumSwitches() || cmp.Endpoints != len(g.Nodes())+len(g.Servers()) || !cmp.FixedRoot {
			t.Errorf("comparison %+v", cmp)
		}
		if len(cmp.Results) != 2 || len(cmp.RowSeconds) != 2 {
			t.Fatalf("%d rows, %d times, want 2", len(cmp.Results), len(cmp.RowSeconds))
		}
		for i, alg := range algos {
			want, err := RouteMulticast(h, groups, alg, McastOptions{FixedRoot: true})
			if err != nil {
				t.Fatal(err)
			}
			r := cmp.Results[i]
			if r.Algorithm != string(alg) || r.MaxEFI != want.MaxEFI || r.MeanEFI != want.MeanEFI || r.MaxHeight != want.MaxHeight || r.MeanHeight != want.MeanHeight {
				t.Errorf("row %d %+v, want %s as RouteMulticast: %d %v %d %v", i, r, alg, want.MaxEFI, want.MeanEFI, want.MaxHeight, want.MeanHeight)
			}
			if (r.Seconds != 0) != timings && cmp.RowSeconds[i] > 0 {
				t.Errorf("timings %v: row seconds %v", timings, r.Seconds)
			}
		}
		if (cmp.HopTableSeconds != 0) != timings && cmp.HopSeconds > 0 {
			t.Errorf("timings %v: hop table seconds %v", timings, cmp.HopTableSeconds)
		}
		checkMcastRender(t, cmp, timings)
	}
	if _, err := CompareMulticast(g, []McastGroup{{Name: "empty"}}, algos, CompareOptions{}); err == nil {
		t.Error("a group without members was routed")
	}
}

// checkMcastRender: the CSV and the table have a row per algorithm, and a seconds column with
// timings only.
func checkMcastRender(t *testing.T, cmp *McastComparison, timings bool) {
	t.Helper()
	rows := cmp.CSV()
	if len(rows) != 3 || rows[1][0] != "sssp" || rows[2][0] != "fulb" || (rows[0][len(rows[0])-1] == "seconds") != timings {
		t.Errorf("timings %v: CSV %q", timings, rows)
	}
	var b strings.Builder
	if err := cmp.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "endpoints") || strings.Contains(lines[0], "hop tables") != timings ||
		strings.Contains(lines[1], "seconds") != timings {
		t.Errorf("timings %v: table\n%s", timings, b.String())
	}
}
