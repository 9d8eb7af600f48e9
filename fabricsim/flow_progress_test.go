package fabricsim

import (
	"math"
	"testing"
)

// Progress is called every progressEvery events and once at the end, with the count of nodes
// done and the megabits fetched rising to all of them and the simulated time never going back.
func TestFlowProgress(t *testing.T) {
	const n = 200
	g, a := star(t, n, 1000, 1000)
	cfg := plain(8)
	cfg.Arrivals = make([]float64, n)
	for i := range cfg.Arrivals {
		cfg.Arrivals[i] = float64(i) / 100 // one event per arrival, and some completions
	}
	var got []Progress
	cfg.Progress = func(p Progress) { got = append(got, p) }
	res := run(t, g, a, all(n), cfg)
	if want := res.Stats.Events/progressEvery + 1; len(got) != want {
		t.Errorf("%d calls for %d events, want %d", len(got), res.Stats.Events, want)
	}
	for i, p := range got {
		if p.Nodes != n || p.TotalMb != 8*n || (i > 0 && (p.Done < got[i-1].Done || p.Seconds < got[i-1].Seconds || p.Mb < got[i-1].Mb)) {
			t.Fatalf("call %d: %+v after %+v", i, p, got[max(i-1, 0)])
		}
	}
	if last := got[len(got)-1]; last.Done != n || last.Seconds != res.BatchSeconds || math.Abs(last.Mb-last.TotalMb) > 1e-6 {
		t.Errorf("last call %+v, want %d nodes done at %v s", last, n, res.BatchSeconds)
	}
}
