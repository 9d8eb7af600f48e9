package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRecommendEndToEnd: with the flow model, an upgrade is judged by the end-to-end time the
// report shows. On the paper's machine one board is held by the TFTP cap (8.09 s end to end, 3.2 s
// in the bandwidth model): raising N2 and N5 must not be promised as 8x. On mini the N5 upgrade
// does move the end-to-end time, and is said to.
func TestRecommendEndToEnd(t *testing.T) {
	tests := []struct {
		preset  string
		batches int
		// want is the first step's sentence; capped whether the end-to-end time stays.
		want   string
		capped bool
	}{
		{"sunway", 1, "Upgrade first: N2 at 10 Gb/s and N5 at 10 Gb/s would cut the bandwidth-model time of 1 board from 3.2 s to 0.4 s, " +
			"but not the boot: end to end it stays 8.093 s (limited by tftp cap), so it buys nothing until that limit is raised.", true},
		{"mini", 4, "Upgrade first: N5 at 1 Gb/s cuts the boot of whole machine from 33.145 s to ", false},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			cfg := machineConfig(t, tt.preset, true, false)
			cfg.Batches = cfg.Batches[:tt.batches]
			rec := buildReport(t, cfg).Recommendation
			if len(rec.Steps) == 0 {
				t.Fatalf("no upgrade step: %q", rec.Text)
			}
			u := rec.Steps[0]
			if u.capped() != tt.capped || !(u.EndToEndAfterSeconds > 0) {
				t.Errorf("first step %+v: capped %v, want %v", u, u.capped(), tt.capped)
			}
			var step string
			for _, s := range rec.Text {
				if strings.HasPrefix(s, "Upgrade first:") {
					step = s
				}
			}
			if !strings.HasPrefix(step, tt.want) {
				t.Errorf("first step:\n%s\nwant it to start with\n%s", step, tt.want)
			}
			if tt.capped && strings.Contains(step, "x faster") {
				t.Errorf("a capped step promises a speed-up: %s", step)
			}
		})
	}
}

// TestSpeedupColumns: each "x scda" is computed from the times it stands beside: the end-to-end
// ratio from the end-to-end times, the bandwidth ratio from the bandwidths.
func TestSpeedupColumns(t *testing.T) {
	cfg := machineConfig(t, "mini", true, false)
	rep := buildReport(t, cfg)
	na := len(rep.Algos)
	type ratios struct{ Flow, Bandwidth float64 }
	var got, want []ratios
	for i := range rep.Batches {
		scda := rep.Baseline.row(i, 0, na)
		if scda.Algo != "scda" {
			t.Fatalf("algorithm 0 is %s", scda.Algo)
		}
		for j := 0; j < na; j++ {
			r := rep.Baseline.row(i, j, na)
			got = append(got, ratios{r.FlowSpeedupVsSCDA, r.SpeedupVsSCDA})
			want = append(want, ratios{scda.FlowSeconds / r.FlowSeconds, r.BandwidthMbps / scda.BandwidthMbps})
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ratios to scda (-want +got):\n%s", d)
	}
	// The whole machine: the bandwidth model says 2x, end to end it is less (the fixed times).
	last := rep.Baseline.row(len(rep.Batches)-1, 1, na)
	if !(last.FlowSpeedupVsSCDA < last.SpeedupVsSCDA) {
		t.Errorf("whole machine, %s: %v end to end, %v bandwidth", last.Algo, last.FlowSpeedupVsSCDA, last.SpeedupVsSCDA)
	}
}
