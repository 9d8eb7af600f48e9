package nodestate

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// markLocked records that node name has unsaved changes: urgent ones go out with the next flush,
// others (lazy) within lazyFlush.
func (t *Tracker) markLocked(name string, urgent bool, now time.Time) {
	if t.opts.Store == nil {
		return // nothing is saved, so nothing is pending (and the lazy queue would only grow)
	}
	if urgent || t.opts.Flush <= 0 {
		t.dirty[name] = true
		delete(t.lazy, name)
		return
	}
	if t.dirty[name] {
		return
	}
	t.addLazyLocked(name, now)
}

// changed saves now or wakes the flusher.
func (t *Tracker) changed() {
	if t.opts.Store == nil {
		return
	}
	if t.opts.Flush <= 0 {
		if err := t.Flush(); err != nil {
			t.log.Error("saving boot states", zap.Error(err))
		}
		return
	}
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

type lazyEntry struct {
	name  string
	since time.Time
}

// addLazyLocked makes name lazy since since unless it is already.
func (t *Tracker) addLazyLocked(name string, since time.Time) {
	if _, ok := t.lazy[name]; !ok {
		t.lazy[name] = since
		t.lazyQ = append(t.lazyQ, lazyEntry{name, since})
	}
}

// takeLazyLocked removes from lazy and returns the nodes lazy since before lazyBefore (all of
// them when it is zero), with their times.
func (t *Tracker) takeLazyLocked(lazyBefore time.Time) map[string]time.Time {
	var taken map[string]time.Time
	for ; t.lazyHead < len(t.lazyQ); t.lazyHead++ {
		e := t.lazyQ[t.lazyHead]
		if !lazyBefore.IsZero() && !e.since.Before(lazyBefore) {
			break
		}
		if since, ok := t.lazy[e.name]; ok && since.Equal(e.since) {
			if taken == nil {
				taken = map[string]time.Time{}
			}
			taken[e.name] = since
			delete(t.lazy, e.name)
		}
	}
	if t.lazyHead > len(t.lazyQ)/2 { // drop the consumed front
		t.lazyQ = t.lazyQ[:copy(t.lazyQ, t.lazyQ[t.lazyHead:])]
		t.lazyHead = 0
	}
	return taken
}

// lazyFlush is how long a node's lazy changes (see Tracker.lazy) may wait to be saved.
const lazyFlush = 30 * time.Second

// Flush saves every change not saved yet.
func (t *Tracker) Flush() error { return t.flush(time.Time{}) }

// flush saves the urgent changes and the lazy ones that began before lazyBefore (all of them when
// lazyBefore is zero).
func (t *Tracker) flush(lazyBefore time.Time) error {
	if t.opts.Store == nil {
		return nil
	}
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	return t.flushSaveLocked(lazyBefore)
}

// flushSaveLocked is flush with saveMu held.
func (t *Tracker) flushSaveLocked(lazyBefore time.Time) error {
	if t.stopped {
		return nil
	}
	t.mu.Lock()
	names := make([]string, 0, len(t.dirty))
	for name := range t.dirty {
		names = append(names, name)
	}
	clear(t.dirty)
	lazy := t.takeLazyLocked(lazyBefore) // the lazy entries taken, to restore if the save fails
	for name := range lazy {
		names = append(names, name)
	}
	t.mu.Unlock()
	// Copy the records a chunk at a time: under a DHCP storm a flush takes thousands, and the
	// DHCP workers wait for this lock.
	snap := make([]NodeStatus, 0, len(names))
	const chunk = 256
	for i := 0; i < len(names); i += chunk {
		t.mu.Lock()
		for _, name := range names[i:min(i+chunk, len(names))] {
			if n, ok := t.nodes[name]; ok { // else dropped meanwhile (Retrack)
				snap = append(snap, copyStatus(n))
			}
		}
		t.mu.Unlock()
	}
	if len(snap) == 0 {
		return nil
	}
	if err := t.opts.Store.Save(snap); err != nil {
		t.mu.Lock()
		for _, n := range snap {
			if since, ok := lazy[n.Name]; ok && !t.dirty[n.Name] {
				t.addLazyLocked(n.Name, since)
			} else {
				t.dirty[n.Name] = true
				delete(t.lazy, n.Name)
			}
		}
		t.mu.Unlock()
		return err
	}
	return nil
}

// Stop saves the pending changes and stops saving: later events (a late observer call during
// shutdown) only change the states in memory. Call it before closing the store.
func (t *Tracker) Stop() error {
	err := t.Flush()
	t.saveMu.Lock()
	t.stopped = true
	t.saveMu.Unlock()
	return err
}

// Run saves changes at most every Flush interval until ctx ends, then saves a last time. A save
// that fails (a fleet's etcd unreachable) is retried every interval until it succeeds, whether or
// not anything changes meanwhile: the last changes before an outage must not wait for the next.
func (t *Tracker) Run(ctx context.Context) error {
	if t.opts.Store == nil || t.opts.Flush <= 0 {
		<-ctx.Done()
		return t.Flush()
	}
	failing := false
	// Due lazy changes go out with every flush interval, a few at a time: all at once every
	// few seconds, a DHCP storm's handshakes made bursts of work that stalled the DHCP workers.
	lazyTick := time.NewTicker(t.opts.Flush)
	defer lazyTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return t.Flush()
		case <-lazyTick.C:
		case <-t.kick:
			// Batch: let more changes arrive, then write them in one go.
			select {
			case <-ctx.Done():
				return t.Flush()
			case <-time.After(t.opts.Flush):
			}
		}
		if err := t.flush(t.now().Add(-lazyFlush)); err != nil {
			if !failing {
				t.log.Error("saving boot states; retrying", zap.Error(err))
			} else {
				t.log.Debug("saving boot states", zap.Error(err))
			}
			failing = true
			t.changed() // still dirty: try again after the interval
		} else if failing {
			failing = false
			t.log.Info("boot states saved again")
		}
	}
}
