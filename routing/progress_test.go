package routing

import (
	"slices"
	"sync"
	"testing"
)

// recorder is a progress callback that keeps every call; it may be called concurrently.
type recorder struct {
	mu    sync.Mutex
	calls [][2]int
}

func (r *recorder) fn(done, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, [2]int{done, total})
}

// check wants a few hundred calls at most, each total, done never above its total, and the last
// call at total: calls are sorted first, as workers may report out of order.
func (r *recorder) check(t *testing.T, what string, total int) {
	t.Helper()
	if len(r.calls) == 0 || len(r.calls) > 300 {
		t.Fatalf("%s: %d progress calls, want 1 to 300", what, len(r.calls))
	}
	calls := slices.Clone(r.calls)
	slices.SortFunc(calls, func(a, b [2]int) int { return a[0] - b[0] })
	for _, c := range calls {
		if c[1] != total || c[0] < 1 || c[0] > total {
			t.Fatalf("%s: call %v, want done in 1..%d of %d", what, c, total, total)
		}
	}
	if last := calls[len(calls)-1]; last[0] != total {
		t.Errorf("%s: last call %v, want %d of %d", what, last, total, total)
	}
}

// Every engine, Check and RouteMulticast tell an Options.Progress how far they are, every few
// hundredth of the work, ending at the total; the tables are the same as without it.
func TestProgress(t *testing.T) {
	g := buildPGFT(t, "pgft:3;4,4,8;1,4,4;1,1,1")
	for _, name := range Engines() {
		if name == "vtftr" {
			continue // fat2d only, and quick
		}
		var rec recorder
		eng, err := New(name, Options{Progress: rec.fn})
		if err != nil {
			t.Fatal(err)
		}
		tb, err := eng.Compute(g)
		if err != nil {
			t.Fatal(err)
		}
		total := len(tb.Switches())
		if name == "updn" || name == "minhop" {
			total = len(prepare(tb).leaves)
		}
		rec.check(t, name, total)
		plain, _ := New(name, Options{})
		tb2, err := plain.Compute(g)
		if err != nil {
			t.Fatal(err)
		}
		for s := range tb.Switches() {
			for d := range tb.Dests() {
				if tb.Port(s, d) != tb2.Port(s, d) {
					t.Fatalf("%s: port(%d, %d) differs with a progress callback", name, s, d)
				}
			}
		}
		if name == "dmodc" {
			var crec recorder
			Check(tb, CheckOptions{Progress: crec.fn})
			crec.check(t, "check", len(tb.Dests()))
		}
	}

	mg, h := mcGraph(t, "pgft:3;4,4,8;1,4,4;1,1,1")
	groups := mcWorkload(t, mg, 500, 8)
	var rec recorder
	if _, err := RouteMulticast(h, groups, McastFULB, McastOptions{Progress: rec.fn}); err != nil {
		t.Fatal(err)
	}
	rec.check(t, "mcast", 2*len(groups))
}
