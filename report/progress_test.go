package report

import (
	"slices"
	"sync"
	"testing"
)

// Build tells Config.Progress of every row, baseline and scenarios, counting up to their number.
func TestBuildProgress(t *testing.T) {
	cfg := machineConfig(t, "mini", true, true)
	var mu sync.Mutex
	var done []int
	total := (1 + len(cfg.Scenarios)) * len(cfg.Algos) * len(cfg.Batches)
	cfg.Progress = func(d, tot int) {
		mu.Lock()
		defer mu.Unlock()
		if tot != total {
			t.Errorf("total %d, want %d", tot, total)
		}
		done = append(done, d)
	}
	buildReport(t, cfg)
	slices.Sort(done)
	if len(done) != total || done[0] != 1 || done[len(done)-1] != total {
		t.Errorf("progress %v, want 1..%d once each", done, total)
	}
}
