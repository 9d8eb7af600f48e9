package bootrun

import (
	"strings"
	"testing"
)

// TestRunResultTable: the table has a row per node, the journal's column when from a journal,
// and the summing-up line with the prediction and the pause.
func TestRunResultTable(t *testing.T) {
	recs := []NodeRecord{{Name: "a", Phase: Healthy, Attempts: 1, HealthAt: 12.34}, {Name: "b", Skipped: true, Phase: Healthy}}
	for _, tc := range []struct {
		name    string
		r       RunResult
		want    []string
		notWant []string
	}{
		{"live", ResultOf(recs, &Prediction{Makespan: 10}, "breaker open"),
			[]string{"NODE", "12.3", "skipped", "2 nodes: 1 healthy, 0 failed, 1 skipped (" + SkippedReason + "), 0 not done; makespan 12.3 s (predicted 10.0 s)\npaused: breaker open\n"},
			[]string{"ON SERVER", "run:"}},
		{"journal", JournalResult(&JournalContents{Version: 2, Nodes: []string{"a"}, Last: []*JournalEntry{nil}, Events: []RunEvent{{Run: RunStarted}}}),
			[]string{"ON SERVER", "\nrun:\n", "1 nodes: 0 healthy, 0 failed, 0 skipped, 1 not done; makespan 0.0 s\n"}, []string{"predicted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := tc.r.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.want {
				if !strings.Contains(b.String(), s) {
					t.Errorf("no %q in\n%s", s, b.String())
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(b.String(), s) {
					t.Errorf("%q in\n%s", s, b.String())
				}
			}
		})
	}
}

// TestPlanTable: a plan without shared links says so; with one it lists its limit, and every
// node's row follows.
func TestPlanTable(t *testing.T) {
	p := &Prediction{Makespan: 40, Records: []NodeRecord{{Name: "a", HealthAt: 20}}}
	for _, tc := range []struct {
		lim  *Limits
		want string
	}{
		{&Limits{FloorMbps: 100}, "no shared link: every node powers on at once\n"},
		{&Limits{FloorMbps: 100, Names: []string{"sw0"}, Caps: []int{2}, Users: []int{5}}, "(a live run moves each limit with what it measures)\n"},
	} {
		plan := NewPlan(p, tc.lim, []string{"bs0"}, PlanModel{})
		var b strings.Builder
		if err := plan.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) || !strings.Contains(b.String(), "20.0") || !strings.HasPrefix(b.String(), "1 nodes; floor 100.0 Mb/s") {
			t.Errorf("no %q, or no node row, in\n%s", tc.want, b.String())
		}
	}
}
