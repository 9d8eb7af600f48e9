package power

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Op is a power action on a node.
type Op string

// Power actions.
const (
	OpOn     Op = "on"
	OpOff    Op = "off"
	OpCycle  Op = "cycle"
	OpStatus Op = "status"
	OpPXE    Op = "pxe" // one-time network boot
	// OpIdentify lights the identify LED (RunOptions.Identify) or puts it out, where the
	// driver is an Identifier.
	OpIdentify Op = "identify"
)

// ParseOp returns the action named s.
func ParseOp(s string) (Op, error) {
	switch op := Op(s); op {
	case OpOn, OpOff, OpCycle, OpStatus, OpPXE:
		return op, nil
	}
	return "", fmt.Errorf("power action %q: want on, off, cycle, status or pxe", s)
}

// Target is a node to act on through its controller.
type Target struct {
	Node string
	// BMC names the controller (its address): actions on one BMC are spaced by
	// RunOptions.MinInterval, as several nodes may share one (a blade chassis).
	BMC        string
	Controller Controller
}

// Result is what one node's action came to. Same inputs, same result: no timings in it.
type Result struct {
	Node  string `json:"node"`
	BMC   string `json:"bmc"`
	Op    Op     `json:"op"`
	State State  `json:"state,omitempty"` // the power state (status)
	Class Class  `json:"class,omitempty"` // why it failed; "" when it did not
	Error string `json:"error,omitempty"`
}

// RunOptions bound a run. Zero values take the defaults.
type RunOptions struct {
	// FanOut is how many controllers are asked at once (default 50, as Warewulf's power
	// commands).
	FanOut int
	// MinInterval spaces two actions on one BMC (default 1 s; Ironic's min_command_interval
	// is 5 s; NoInterval: none). Many BMCs refuse or drop commands that come faster.
	MinInterval time.Duration
	// Timeout bounds one node's action (default 30 s).
	Timeout time.Duration
	// Mode is the firmware of OpPXE (default legacy).
	Mode BootMode
	// Identify is OpIdentify's LED: lit (true) or out.
	Identify bool
	// Progress, when set, is called after each node with the count done so far.
	Progress func(done, total int)
}

// NoInterval as RunOptions.MinInterval asks a BMC again at once.
const NoInterval time.Duration = -1

// WithDefaults returns o with its zero fields set to their defaults.
func (o RunOptions) WithDefaults() RunOptions {
	o.defaults()
	return o
}

func (o *RunOptions) defaults() {
	if o.FanOut <= 0 {
		o.FanOut = 50
	}
	if o.MinInterval == 0 {
		o.MinInterval = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Mode == "" {
		o.Mode = Legacy
	}
}

// FanOut bounds how many BMCs are asked at once: Run's bound, and bootctl boot's live loop's.
// Its zero value is not usable: make one with NewFanOut.
type FanOut struct{ slots chan struct{} }

// NewFanOut returns a bound of n requests at once (n < 1: 1).
func NewFanOut(n int) FanOut { return FanOut{slots: make(chan struct{}, max(1, n))} }

// Acquire waits for a slot, or returns ctx's error when it ends first; release gives the slot back.
func (f FanOut) Acquire(ctx context.Context) (release func(), err error) {
	select {
	case f.slots <- struct{}{}:
		return func() { <-f.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Run does op on every target, at most FanOut at once and each BMC's actions MinInterval apart,
// and returns the results in the targets' order. A node whose action fails does not stop the
// others; ctx ending stops the nodes not started yet, whose results say so.
func Run(ctx context.Context, targets []Target, op Op, opts RunOptions) []Result {
	opts.defaults()
	res := make([]Result, len(targets))
	pace := NewPacer(opts.MinInterval)
	fan := NewFanOut(opts.FanOut)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, t := range targets {
		res[i] = Result{Node: t.Node, BMC: t.BMC, Op: op}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if release, err := fan.Acquire(ctx); err == nil {
				res[i].fill(do(ctx, pace, t, op, opts))
				release()
			} else {
				res[i].fill("", &Error{Class: TimedOut, Op: string(op), Err: fmt.Errorf("not started: %w", err)})
			}
			if opts.Progress != nil {
				mu.Lock()
				done++
				opts.Progress(done, len(targets))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res
}

func (r *Result) fill(st State, err error) {
	r.State = st
	if err != nil {
		r.Class, r.Error = Classify(err), err.Error()
	}
}

// do performs op on one target once its BMC may be asked again.
func do(ctx context.Context, pace *Pacer, t Target, op Op, opts RunOptions) (State, error) {
	if err := ctx.Err(); err != nil {
		return "", &Error{Class: TimedOut, Op: string(op), Err: fmt.Errorf("not started: %w", err)}
	}
	if err := pace.Wait(ctx, t.BMC); err != nil {
		return "", &Error{Class: TimedOut, Op: string(op), Err: fmt.Errorf("waiting for the BMC: %w", err)}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	c := t.Controller
	switch op {
	case OpOn:
		return "", c.On(ctx)
	case OpOff:
		return "", c.Off(ctx)
	case OpCycle:
		return "", c.Cycle(ctx)
	case OpStatus:
		return c.Status(ctx)
	case OpPXE:
		return "", c.PXENext(ctx, opts.Mode)
	case OpIdentify:
		if id, ok := c.(Identifier); ok {
			return "", id.Identify(ctx, opts.Identify)
		}
		return "", &Error{Class: Failed, Op: string(op), Err: fmt.Errorf("%s: its driver has no identify LED", t.BMC)}
	}
	return "", &Error{Class: Failed, Op: string(op), Err: fmt.Errorf("unknown action")}
}

// Pacer spaces the actions on each BMC by a gap; it is safe for concurrent use.
type Pacer struct {
	mu   sync.Mutex
	next map[string]time.Time // when each BMC may be asked again
	gap  time.Duration
}

// NewPacer returns a pacer that asks each BMC at most once per gap (none: NoInterval or less).
func NewPacer(gap time.Duration) *Pacer { return &Pacer{next: map[string]time.Time{}, gap: gap} }

// Wait blocks until bmc may be asked, and books its next slot.
func (p *Pacer) Wait(ctx context.Context, bmc string) error {
	p.mu.Lock()
	now := time.Now()
	at := now
	if n := p.next[bmc]; n.After(now) {
		at = n
	}
	p.next[bmc] = at.Add(p.gap)
	p.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
