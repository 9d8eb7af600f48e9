package fabricsim

import (
	"fmt"
	"math"

	"github.com/bootfabric/bootfabric/internal/heapq"
)

// Admitter powers batch nodes on while a simulation runs (FlowConfig.Admit): a boot controller
// closing its loop in simulated time, where Arrivals fixes every power-on in advance.
type Admitter interface {
	// Admit is called at time 0, at every event where nodes finished their last file
	// (finished holds their batch positions; the slice is reused after the call), and at the
	// wake time it last returned. It returns the positions to power on, each at most once
	// in the run and not before now, and when to be called again if no node finishes first
	// (+Inf: only when nodes finish).
	Admit(now float64, finished []int) (on []Arrival, wake float64)
}

// Arrival is one node's power-on: batch position Pos at At seconds.
type Arrival struct {
	Pos int
	At  float64
}

// admitState is the simulation's side of an Admitter: the admitted positions by the time their
// first file starts, and what the next call is told.
type admitState struct {
	adm      Admitter
	queue    heapq.Heap[int32]
	at       []float64 // power-on time by position; -1 until admitted
	wake     float64
	finished []int
	seq      int32
}

func newAdmitState(adm Admitter, n int) *admitState {
	a := &admitState{adm: adm, at: make([]float64, n), wake: 0}
	for i := range a.at {
		a.at[i] = -1
	}
	return a
}

// next is when the next admitted node's first file starts, or the admitter wants a call.
func (a *admitState) next(dhcp float64) float64 {
	t := a.wake
	if a.queue.Len() > 0 {
		t = min(t, a.queue.Top().Key+dhcp)
	}
	return t
}

// call asks the admitter when it is due (nodes finished, or its wake time came) and queues what
// it powers on.
func (a *admitState) call(now float64) error {
	if len(a.finished) == 0 && now < a.wake {
		return nil
	}
	on, wake := a.adm.Admit(now, a.finished)
	a.finished = a.finished[:0]
	if math.IsNaN(wake) || wake <= now && !math.IsInf(wake, 1) && len(on) == 0 {
		return fmt.Errorf("admitter: wake time %v at %v admits nothing and would loop", wake, now)
	}
	a.wake = wake
	for _, x := range on {
		if x.Pos < 0 || x.Pos >= len(a.at) {
			return fmt.Errorf("admitter: position %d is not in the batch of %d", x.Pos, len(a.at))
		}
		if a.at[x.Pos] >= 0 {
			return fmt.Errorf("admitter: position %d powered on twice", x.Pos)
		}
		if !finite(x.At) || x.At < now {
			return fmt.Errorf("admitter: position %d powered on at %v, before now (%v)", x.Pos, x.At, now)
		}
		a.at[x.Pos] = x.At
		a.queue.Push(heapq.Item[int32]{Key: x.At, Tie: a.seq, Value: int32(x.Pos)})
		a.seq++
	}
	return nil
}

// popDue appends the admitted positions whose first file starts by now.
func (a *admitState) popDue(now, dhcp float64, starters []int32) []int32 {
	for a.queue.Len() > 0 && a.queue.Top().Key+dhcp <= now {
		starters = append(starters, a.queue.Pop().Value)
	}
	return starters
}

// unadmitted counts the positions never powered on.
func (a *admitState) unadmitted() int {
	n := 0
	for _, t := range a.at {
		if t < 0 {
			n++
		}
	}
	return n
}

// admitEvent runs the admitter's part of an event at now: it tells it what finished and starts
// what it powers on at once (no DHCP time), repeating while such starts finish at once.
func (s *sim) admitEvent(now float64, group map[classKey]int32, starters []int32) ([]int32, error) {
	for range len(s.adm.at) + 1 {
		if err := s.adm.call(now); err != nil {
			return starters, err
		}
		starters = s.adm.popDue(now, s.cfg.DHCPSeconds, starters[:0])
		if len(starters) == 0 {
			return starters, nil
		}
		s.start(now, starters, group)
	}
	return starters, nil
}
