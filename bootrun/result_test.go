package bootrun

import (
	"strings"
	"testing"
	"time"
)

// TestResultOf: a run's records are counted by outcome, the makespan is the last healthy node's,
// and the skipped nodes carry their reason.
func TestResultOf(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		recs                           []NodeRecord
		pred                           *Prediction
		healthy, failed, skipped, pend int
		makespan, predicted            float64
		reason                         string
	}{
		{"empty", nil, nil, 0, 0, 0, 0, 0, 0, ""},
		{"mixed", []NodeRecord{{Name: "a", Phase: Healthy, HealthAt: 12}, {Name: "b", Phase: Healthy, HealthAt: 30},
			{Name: "c", Phase: Failed}, {Name: "d", Skipped: true, Phase: Healthy, HealthAt: 99}, {Name: "e"}},
			&Prediction{Makespan: 28}, 2, 1, 1, 1, 30, 28, SkippedReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ResultOf(tc.recs, tc.pred, "")
			if r.Nodes != len(tc.recs) || r.Healthy != tc.healthy || r.Failed != tc.failed || r.Skipped != tc.skipped || r.Pending != tc.pend ||
				r.MakespanSeconds != tc.makespan || r.PredictedSeconds != tc.predicted || r.SkippedReason != tc.reason || len(r.Records) != len(tc.recs) {
				t.Errorf("got %+v", r)
			}
		})
	}
}

// TestJournalResult: a journal's last entries make the records, a node without one is pending,
// and each entry's time and server view are kept.
func TestJournalResult(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j := &JournalContents{Version: 2, Nodes: []string{"a", "b"},
		Last:   []*JournalEntry{{Record: NodeRecord{Name: "a", Phase: Healthy, HealthAt: 7}, Time: at, Server: &ServerSeen{Attempt: 1}}, nil},
		Events: []RunEvent{{Run: RunPaused, Reason: "breaker"}}}
	r := JournalResult(j)
	if r.Healthy != 1 || r.Pending != 1 || r.Paused != "breaker" || r.JournalVersion != 2 || len(r.Events) != 1 {
		t.Fatalf("got %+v", r)
	}
	if r.Records[1].Name != "b" || r.Records[1].Changed != nil || r.Records[0].Changed == nil || !r.Records[0].Changed.Equal(at) || r.Records[0].Server == nil {
		t.Errorf("records %+v", r.Records)
	}
}

// TestNewPlan: the plan's caps come from the limits and its times are rounded to the millisecond.
func TestNewPlan(t *testing.T) {
	p := &Prediction{Makespan: 40, PeakInFlight: 2, Records: []NodeRecord{{Name: "a", PowerAt: 0.00049, BootAt: 10.1236, HealthAt: 20}}}
	lim := &Limits{Names: []string{"sw0"}, Caps: []int{2}, Users: []int{5}, FloorMbps: 100}
	out := NewPlan(p, lim, []string{"bs0"}, PlanModel{PostSeconds: 30.0004, DHCPSeconds: 1.2345})
	if out.Nodes != 1 || out.FloorMbps != 100 || out.PredictedSeconds != 40 || out.PeakInFlight != 2 || out.Model.PostSeconds != 30 || out.Model.DHCPSeconds != 1.235 {
		t.Errorf("plan %+v", out)
	}
	if len(out.Caps) != 1 || out.Caps[0] != (PlanCap{Resource: "sw0", Nodes: 2, Behind: 5}) {
		t.Errorf("caps %+v", out.Caps)
	}
	if len(out.Schedule) != 1 || out.Schedule[0] != (PlanRow{Node: "a", Server: "bs0", PowerOn: 0, Files: 10.124, Healthy: 20}) {
		t.Errorf("schedule %+v", out.Schedule)
	}
}

// TestCalibrateJournalsBad: a journal that cannot be read is an error naming it, and none is
// Calibrate's error.
func TestCalibrateJournalsBad(t *testing.T) {
	missing := t.TempDir() + "/none.journal"
	if _, err := CalibrateJournals([]string{missing}, 0); err == nil || !strings.Contains(err.Error(), "none.journal") {
		t.Errorf("missing journal: %v", err)
	}
	if _, err := CalibrateJournals(nil, 0); err == nil || !strings.Contains(err.Error(), "no journal") {
		t.Errorf("no journal: %v", err)
	}
}
