package bootrun

import (
	"fmt"
	"slices"
	"strings"
)

// BreakerConfig is when the circuit breaker trips: at least MinFailures failed attempts, and at
// least Rate of the last Window outcomes (a node healthy, or an attempt failed); and what it
// does then.
type BreakerConfig struct {
	Window      int     // default 20
	Rate        float64 // default 0.5
	MinFailures int     // default 5
	// Pause: a trip pauses admission until the operator resumes it. Otherwise (the default) the
	// run backs off: every link's limit is halved, admission waits Backoff seconds (times the
	// trips in a row, at most 6 times), and goes on.
	Pause   bool
	Backoff float64 // default 10
}

// OnFailure names what a tripped breaker does: "backoff" or "pause".
func (b BreakerConfig) OnFailure() string {
	if b.Pause {
		return "pause"
	}
	return "backoff"
}

func (b *BreakerConfig) defaults() {
	if b.Window == 0 {
		b.Window = 20
	}
	if b.Rate == 0 {
		b.Rate = 0.5
	}
	if b.MinFailures == 0 {
		b.MinFailures = 5
	}
	if b.Backoff == 0 {
		b.Backoff = 10
	}
}

func (b *BreakerConfig) check() error {
	if !(b.Backoff > 0) || b.Backoff > 3600 {
		return fmt.Errorf("breaker: back-off %v s: want more than 0 and at most an hour", b.Backoff)
	}
	if b.Window < 1 || !(b.Rate > 0 && b.Rate <= 1) || b.MinFailures < 1 || b.MinFailures > b.Window {
		return fmt.Errorf("breaker: window %d, rate %v, min failures %d: want a window of at least 1, a rate in (0,1] and 1 to window failures",
			b.Window, b.Rate, b.MinFailures)
	}
	return nil
}

// breaker keeps the last outcomes: "" for a success, the class of a failure.
type breaker struct {
	cfg  BreakerConfig
	ring []Class
	next int
	full bool
}

// record adds an outcome and reports why the breaker trips, or "".
func (b *breaker) record(c Class) string {
	if b.ring == nil {
		b.ring = make([]Class, b.cfg.Window)
	}
	b.ring[b.next] = c
	b.next = (b.next + 1) % len(b.ring)
	b.full = b.full || b.next == 0
	n := b.next
	if b.full {
		n = len(b.ring)
	}
	count := map[Class]int{}
	failed := 0
	for _, o := range b.ring[:n] {
		if o != "" {
			count[o]++
			failed++
		}
	}
	if failed < b.cfg.MinFailures || float64(failed) < b.cfg.Rate*float64(n) {
		return ""
	}
	var parts []string
	for c, k := range count {
		parts = append(parts, fmt.Sprintf("%d %s", k, c))
	}
	slices.Sort(parts)
	return fmt.Sprintf("%d of the last %d attempts failed (%s)", failed, n, strings.Join(parts, ", "))
}

// reset forgets the outcomes (the operator resumed).
func (b *breaker) reset() { b.ring, b.next, b.full = nil, 0, false }
