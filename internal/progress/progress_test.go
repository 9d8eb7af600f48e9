package progress

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// step is one thing the test does to a Reporter: move the clock, then call.
type step struct {
	after time.Duration
	add   int  // Add(add) when set is negative
	set   int  // Set(set) when >= 0
	done  bool // Done()
}

func TestReporter(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		opt   Options
		steps []step
		want  []string // the writes, in order
	}{
		{
			name:  "not a terminal: nothing at all",
			opt:   Options{Label: "sim", Total: 10},
			steps: []step{{after: time.Second, add: 5, set: -1}, {after: time.Second, add: 5, set: -1}, {done: true}},
			want:  nil,
		},
		{
			name: "bar, percent, elapsed, ETA; Done clears",
			opt:  Options{Label: "sim", Total: 10, Unit: "nodes", Terminal: true, Width: 10},
			steps: []step{
				{after: 2 * time.Second, add: 4, set: -1},
				{done: true},
			},
			want: []string{"\rsim [====      ] 4/10 nodes  40%  0:02 ETA 0:03\033[K", "\r\033[K"},
		},
		{
			name: "cut to the terminal's width: a wrapped line would stay behind",
			opt:  Options{Label: "sim", Total: 10, Unit: "nodes", Terminal: true, Width: 10, Columns: 30},
			steps: []step{
				{after: 2 * time.Second, add: 4, set: -1},
				{done: true},
			},
			want: []string{"\rsim [====      ] 4/10 nodes  \033[K", "\r\033[K"},
		},
		{
			name: "redraws at most once per interval",
			opt:  Options{Label: "r", Total: 100, Terminal: true, Width: 4},
			steps: []step{
				{after: 0, add: 1, set: -1},       // drawn: no delay
				{after: 50 * ms, add: 1, set: -1}, // too soon
				{after: 40 * ms, add: 1, set: -1}, // too soon (90 ms)
				{after: 10 * ms, add: 1, set: -1}, // 100 ms: drawn
				{after: 99 * ms, set: 50},         // too soon
				{after: 1 * ms, set: 100},         // drawn, complete: no ETA
			},
			want: []string{
				"\rr [    ] 1/100   1%  0:00 ETA 0:00\033[K",
				"\rr [    ] 4/100   4%  0:00 ETA 0:02\033[K",
				"\rr [====] 100/100 100%  0:00\033[K",
			},
		},
		{
			name: "delay keeps quick work silent, and Done then writes nothing",
			opt:  Options{Label: "q", Total: 3, Terminal: true, Delay: time.Second},
			steps: []step{
				{after: 300 * ms, add: 1, set: -1},
				{after: 300 * ms, add: 2, set: -1},
				{done: true},
			},
			want: nil,
		},
		{
			name: "unknown total: spinner and count",
			opt:  Options{Label: "boot", Unit: "nodes", Terminal: true},
			steps: []step{
				{after: time.Second, add: 3, set: -1},
				{after: time.Second, add: 2, set: -1},
				{done: true},
				{after: time.Second, add: 2, set: -1}, // after Done: ignored
			},
			want: []string{"\rboot / 3 nodes  0:01\033[K", "\rboot - 5 nodes  0:02\033[K", "\r\033[K"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			tc.opt.Now = clk.now
			w := &writes{}
			p := New(w, tc.opt)
			for _, s := range tc.steps {
				clk.advance(s.after)
				switch {
				case s.done:
					p.Done()
				case s.set >= 0:
					p.Set(s.set)
				default:
					p.Add(s.add)
				}
			}
			if !slices.Equal(w.list, tc.want) {
				t.Errorf("writes:\n%q\nwant:\n%q", w.list, tc.want)
			}
		})
	}
}

// Func hands the work a callback that also learns the total; a silent Reporter gives nil, which
// the work takes as "no progress wanted".
func TestFunc(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	var w writes
	f := New(&w, Options{Label: "route", Terminal: true, Now: clk.now, Width: 2}).Func()
	clk.advance(time.Second)
	f(1, 4)
	if want := []string{"\rroute [  ] 1/4  25%  0:01 ETA 0:03\033[K"}; !slices.Equal(w.list, want) {
		t.Errorf("writes %q, want %q", w.list, want)
	}
	if New(&w, Options{}).Func() != nil {
		t.Error("a Reporter on a non-terminal gave a callback")
	}
	var nilp *Reporter
	nilp.Add(1)
	nilp.Set(1)
	nilp.Done()
	if nilp.Func() != nil {
		t.Error("a nil Reporter gave a callback")
	}
}

// Workers update one Reporter at once; run with -race. Every write is a whole line.
func TestConcurrent(t *testing.T) {
	var w writes
	p := New(&w, Options{Label: "c", Total: 8000, Terminal: true, Interval: time.Nanosecond})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				p.Add(1)
			}
		}()
	}
	wg.Wait()
	p.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.list) == 0 || w.list[len(w.list)-1] != "\r\033[K" {
		t.Fatalf("last write is not the clearing one: %q", w.list[max(0, len(w.list)-3):])
	}
	for _, s := range w.list[:len(w.list)-1] {
		if !strings.HasPrefix(s, "\rc [") || !strings.HasSuffix(s, "\033[K") {
			t.Fatalf("garbled write %q", s)
		}
	}
}

func TestClock(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0:00", 61 * time.Second: "1:01", 3723 * time.Second: "1:02:03", 1499 * time.Millisecond: "0:01"} {
		if got := clock(d); got != want {
			t.Errorf("clock(%v) = %q, want %q", d, got, want)
		}
	}
}

// writes records each Write separately, as a terminal would receive them.
type writes struct {
	mu   sync.Mutex
	list []string
}

func (w *writes) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, string(b))
	return len(b), nil
}

// Add is in the work's loops: it must cost an atomic add and a clock read, not a write.
func BenchmarkAdd(b *testing.B) {
	p := New(&writes{}, Options{Total: b.N, Terminal: true})
	for range b.N {
		p.Add(1)
	}
	p.Done()
}

// A logger writing through the bar's Line erases the bar first, so its line starts clean; with no
// bar drawn its writes pass through untouched.
func TestLine(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	var w writes
	line := NewLine(&w)
	line.Write([]byte("before\n"))
	p := New(line, Options{Label: "x", Total: 2, Terminal: true, Now: clk.now, Width: 2})
	clk.advance(time.Second)
	p.Add(1)
	line.Write([]byte("log\n"))
	line.Write([]byte("log2\n"))
	p.Done()
	want := []string{"before\n", "\rx [= ] 1/2  50%  0:01 ETA 0:01\033[K", "\r\033[K", "log\n", "log2\n"}
	if !slices.Equal(w.list, want) {
		t.Errorf("writes:\n%q\nwant:\n%q", w.list, want)
	}
}
