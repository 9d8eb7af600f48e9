package bootrun

import (
	"context"
	"sync"

	"go.uber.org/zap"
)

// liveAdapt is the live run's side of the adaptation: what it last passed to the controller of
// each node's counts, and a lock per node so that a power-off and the power-on after it reach
// the BMC in that order.
type liveAdapt struct {
	base     []int // the baseline attempt the counts below are of
	gaveUp   []int
	restarts []int
	mu       []sync.Mutex
}

func (a *liveAdapt) init(n int) {
	if len(a.mu) != n {
		a.base, a.gaveUp, a.restarts, a.mu = make([]int, n), make([]int, n), make([]int, n), make([]sync.Mutex, n)
		for i := range a.base {
			a.base[i] = -1
		}
	}
}

// lockNode serialises node i's power actions; it returns the unlock.
func (a *liveAdapt) lockNode(i int) func() {
	a.mu[i].Lock()
	return a.mu[i].Unlock
}

// measure tells the controller what the servers measured of node i in its current boot: a
// transfer given up, a restart of its firmware, its current transfer. The counts are the
// servers' for the boot since the run armed the node's reboot; they are passed on as they grow.
func (l *Live) measure(ctx context.Context, i int, st NodeState) error {
	a := &l.adapt
	a.init(len(l.Names))
	if a.base[i] != l.baseline[i] {
		a.base[i], a.gaveUp[i], a.restarts[i] = l.baseline[i], 0, 0
	}
	var evs []Event
	if st.GaveUp > a.gaveUp[i] {
		a.gaveUp[i] = st.GaveUp
		ev := Event{Kind: GaveUp, Node: i}
		if st.LastGaveUp != nil {
			ev.Seconds = st.LastGaveUp.Seconds
		}
		evs = append(evs, ev)
	}
	if st.Restarts > a.restarts[i] {
		a.restarts[i] = st.Restarts
		evs = append(evs, Event{Kind: Restarted, Node: i})
	}
	if x := st.Transfer; x != nil && x.Outcome != "failed" {
		evs = append(evs, Event{Kind: Transfer, Node: i, Bytes: x.Sent, Size: x.Size, Seconds: x.Seconds, Done: x.Outcome == "done"})
	}
	for _, ev := range evs {
		if err := l.act(ctx, l.Controller.Handle(l.now(), ev)); err != nil {
			return err
		}
	}
	return nil
}

// powerOff powers node i off in the background, within the fan-out and its BMC's pace: the run
// evicted it from a congested link.
func (l *Live) powerOff(ctx context.Context, i int) {
	l.adapt.init(len(l.Names))
	t := l.Power[i]
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		// Taken at once: the power-on that follows comes a retry delay later and waits for it.
		defer l.adapt.lockNode(i)()
		release, err := l.fan.Acquire(ctx)
		if err != nil {
			return
		}
		defer release()
		err = l.bmc.Wait(ctx, t.BMC)
		if err == nil {
			ctx, cancel := context.WithTimeout(ctx, l.PowerOpts.Timeout)
			err = t.Controller.Off(ctx)
			cancel()
		}
		if err != nil {
			l.Log.Warn("powering off an evicted node", zap.String("node", t.Node), zap.Error(err))
		}
	}()
}
