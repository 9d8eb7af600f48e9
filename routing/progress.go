package routing

import "sync/atomic"

// counter tells an optional progress callback how many items of a loop are done. Workers count
// every item with one atomic add, and the callback is called only every step items (about 256
// calls over the loop) and at the last one, so a progress bar costs the engines nothing
// measurable. The callback may be called from several goroutines at once.
type counter struct {
	fn    func(done, total int)
	total int
	step  int64
	n     atomic.Int64
}

// newCounter returns a counter for total items, or nil (which counts nothing) when fn is nil.
func newCounter(fn func(done, total int), total int) *counter {
	if fn == nil {
		return nil
	}
	return &counter{fn: fn, total: total, step: max(1, int64(total)/256)}
}

// done counts one item done.
func (c *counter) done() { c.add(1) }

// add counts k items done, calling the callback when the count crosses a multiple of step or
// reaches the total.
func (c *counter) add(k int) {
	if c == nil {
		return
	}
	if n := c.n.Add(int64(k)); n/c.step != (n-int64(k))/c.step || n == int64(c.total) {
		c.fn(int(n), c.total)
	}
}
