// Package progress draws a one-line progress bar on a terminal for bootctl's long commands.
//
// A Reporter is made for one piece of work; the code doing the work only ever sees a plain
// callback (Reporter.Func), so the packages that compute (fabricsim, routing, report,
// testcluster) know nothing of terminals. When the writer is not a terminal the Reporter prints
// nothing at all, so scripts, pipes and tests see exactly the output they saw without it.
//
// Updates are cheap enough for hot loops: Add and Set are an atomic operation and a clock read,
// and the line is redrawn at most once per Options.Interval; the first drawing waits for
// Options.Delay so that quick runs stay silent. Bars and a logger that share a terminal share a
// Line, so that log lines erase the bar rather than run into it. The package has no package-level
// mutable state.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Reporter.
type Options struct {
	// Label names the work at the start of the line ("simulate", "route dmodc").
	Label string
	// Total is the number of units of work; 0 or less: unknown, a spinner and a count are shown.
	Total int
	// Unit names what is counted ("nodes", "switches"); empty: nothing after the count.
	Unit string
	// Terminal says whether the writer is a terminal; false makes the Reporter silent.
	Terminal bool
	// Now is the clock (nil: time.Now); tests pass a fake one.
	Now func() time.Time
	// Interval is the least time between two drawings (0: 100 ms), so that a fast loop does
	// not spend its time writing to the terminal.
	Interval time.Duration
	// Delay is how long the work runs before the first drawing (0: none; bootctl uses a
	// fraction of a second so that quick commands never flash a bar).
	Delay time.Duration
	// Width is the bar's width in characters (0: 24).
	Width int
	// Columns is the terminal's width (0: unknown). A longer line is cut to Columns-1
	// characters: one that wrapped would leave a stale line behind at every redraw.
	Columns int
}

// Reporter draws the progress of one piece of work. Its methods are safe for concurrent use, and
// a nil *Reporter is valid and does nothing, so callers need not check whether one was made.
type Reporter struct {
	line *Line
	opt  Options
	on   bool
	t0   time.Time
	done atomic.Int64
	// total is opt.Total, and what Func's callback is told since, which work may learn late.
	total atomic.Int64
	// next is the earliest time (UnixNano) of the next drawing; a CAS on it elects one drawer.
	next atomic.Int64

	mu   sync.Mutex // serialises drawing and guards the fields below
	spin int
	over bool // Done was called: draw nothing more
}

// New returns a Reporter writing to w, which may be a Line shared with a logger. With
// opt.Terminal false it never writes.
func New(w io.Writer, opt Options) *Reporter {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Interval <= 0 {
		opt.Interval = 100 * time.Millisecond
	}
	if opt.Width <= 0 {
		opt.Width = 24
	}
	line, ok := w.(*Line)
	if !ok {
		line = NewLine(w)
	}
	p := &Reporter{line: line, opt: opt, on: opt.Terminal && w != nil}
	p.total.Store(int64(opt.Total))
	if p.on {
		p.t0 = opt.Now()
		p.next.Store(p.t0.Add(opt.Delay).UnixNano())
	}
	return p
}

// Add records k more units done.
func (p *Reporter) Add(k int) {
	if p == nil || !p.on {
		return
	}
	p.tick(p.done.Add(int64(k)))
}

// Set records done units done in all (for work that reports a running total).
func (p *Reporter) Set(done int) {
	if p == nil || !p.on {
		return
	}
	p.done.Store(int64(done))
	p.tick(int64(done))
}

// Func returns a callback for the packages that do the work: each call sets the count done and,
// when total is positive, the total (which some work only learns once it has started). A nil
// Reporter gives a nil callback, which those packages take as "no progress wanted".
func (p *Reporter) Func() func(done, total int) {
	if p == nil || !p.on {
		return nil
	}
	return func(done, total int) {
		if total > 0 {
			p.total.Store(int64(total))
		}
		p.Set(done)
	}
}

// tick draws when the interval since the last drawing has passed. Only the caller that wins the
// CAS on next draws, so concurrent workers do not queue on the mutex.
func (p *Reporter) tick(done int64) {
	now := p.opt.Now()
	n := p.next.Load()
	if now.UnixNano() < n || !p.next.CompareAndSwap(n, now.Add(p.opt.Interval).UnixNano()) {
		return
	}
	p.draw(now, done)
}

func (p *Reporter) draw(now time.Time, done int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.over {
		return
	}
	p.line.draw(fit(p.text(now, done), p.opt.Columns))
}

// fit cuts s to fewer than columns characters (nothing when columns is 0).
func fit(s string, columns int) string {
	if columns <= 1 {
		return s
	}
	if r := []rune(s); len(r) >= columns {
		return string(r[:columns-1])
	}
	return s
}

// text formats the progress line (without the carriage return and erase).
func (p *Reporter) text(now time.Time, done int64) string {
	elapsed := now.Sub(p.t0)
	var b strings.Builder
	if p.opt.Label != "" {
		b.WriteString(p.opt.Label)
		b.WriteByte(' ')
	}
	unit := ""
	if p.opt.Unit != "" {
		unit = " " + p.opt.Unit
	}
	total := p.total.Load()
	if total <= 0 {
		p.spin++
		fmt.Fprintf(&b, "%c %d%s  %s", `|/-\`[p.spin%4], done, unit, clock(elapsed))
		return b.String()
	}
	done = min(max(done, 0), total)
	frac := float64(done) / float64(total)
	fill := int(frac * float64(p.opt.Width))
	fmt.Fprintf(&b, "[%s%s] %d/%d%s %3.0f%%  %s", strings.Repeat("=", fill), strings.Repeat(" ", p.opt.Width-fill),
		done, total, unit, 100*frac, clock(elapsed))
	if done > 0 && done < total {
		eta := time.Duration(float64(elapsed) * float64(total-done) / float64(done))
		b.WriteString(" ETA " + clock(eta))
	}
	return b.String()
}

// clock formats a duration as m:ss (h:mm:ss past an hour), the way people read a stopwatch.
func clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// Done clears the line if anything was drawn, so the command's own output starts on a clean
// line; later updates are ignored. It is safe to call more than once, and to defer.
func (p *Reporter) Done() {
	if p == nil || !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line.erase()
	p.over = true
}
