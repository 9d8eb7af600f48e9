package bootrun

import (
	"fmt"
	"math"
)

// Controller decides a run: New, Observe (or Restore) what is known before it starts, Start,
// then Handle every event and act on the actions it returns. Times are seconds from any fixed
// origin (the run's start). It is not safe for concurrent use.
type Controller struct {
	cfg     Config
	nodes   []Node
	rec     []NodeRecord
	gen     []uint32 // bumped at every phase change: stale deadlines are skipped
	classOf []int32
	held    []hold
	adm     *admission
	dl      [numPhases]deadlines
	retry   deadlines // failed nodes waiting for RetryDelay before they are queued again
	requeue deadlines // evicted nodes waiting for evictDelay
	brk     breaker
	paused  string // why admission is paused; "" when it is not
	// backoffUntil is when a back-off of the breaker ends (0: none); trips counts the back-offs
	// in a row (a node healthy ends the row).
	backoffUntil float64
	trips        int
	learn        learner
	node         []nodeAdapt
	limitLog     []LimitChange
	aborted      bool
	left         int // nodes neither healthy nor failed
	started      bool
	lastNow      float64
	out          []Action
	events       int
}

// New makes the controller of a run of nodes.
func New(cfg Config, nodes []Node) (*Controller, error) {
	cfg.defaults()
	if err := cfg.check(nodes); err != nil {
		return nil, fmt.Errorf("boot run: %w", err)
	}
	c := &Controller{cfg: cfg, nodes: nodes, rec: make([]NodeRecord, len(nodes)), gen: make([]uint32, len(nodes)),
		held: make([]hold, len(nodes)), brk: breaker{cfg: cfg.Breaker}, left: len(nodes), node: make([]nodeAdapt, len(nodes))}
	c.adm, c.classOf = newAdmission(&cfg, nodes)
	c.learn = newLearner(cfg)
	for i, n := range nodes {
		c.rec[i].Name = n.Name
	}
	exp := [numPhases]float64{Powering: cfg.Expect.Power, Firmware: cfg.Expect.Firmware, Loading: cfg.Expect.Transfer, Booted: cfg.Expect.Health}
	c.retry.after = cfg.RetryDelay
	c.requeue.after = min(evictDelay, cfg.RetryDelay)
	for p := range c.dl {
		c.dl[p].after = math.Inf(1)
		if !math.IsInf(cfg.Factor, 1) && (p >= int(Powering) && p <= int(Booted)) {
			c.dl[p].after = cfg.Factor*exp[p] + cfg.Margin
		}
	}
	return c, nil
}

// Restore sets what an earlier run of the same nodes did (from its journal) before Start:
// node i's record, with Phase Healthy or Failed (kept), or an in-flight phase (the node is
// adopted as it is: it holds its resources and its deadline starts at now).
func (c *Controller) Restore(now float64, i int, r NodeRecord) error {
	if c.started || i < 0 || i >= len(c.rec) || r.Name != c.rec[i].Name {
		return fmt.Errorf("boot run: restore of node %d (%s): no such node, or the run has started", i, r.Name)
	}
	c.rec[i] = r
	switch r.Phase {
	case Healthy, Failed:
		c.left--
	case Powering, Firmware:
		c.hold(int32(i), holdOnWay)
		c.enter(now, i, r.Phase)
	case Loading:
		c.hold(int32(i), holdSlot)
		c.enter(now, i, r.Phase)
	case Booted:
		c.enter(now, i, Booted)
	}
	return nil
}

// Start queues every node that is neither healthy nor failed nor in flight, and admits the
// first.
func (c *Controller) Start(now float64) []Action {
	c.out = c.out[:0]
	if c.started {
		return c.out
	}
	c.started = true
	c.lastNow = now
	c.logStart(now)
	for i := range c.rec {
		if c.rec[i].Phase == Queued {
			c.adm.enqueue(c.classOf[i], int32(i), false)
		}
	}
	c.admit(now)
	c.finishIfDone()
	return c.out
}

// Handle applies one event at now and returns the actions it leads to (the slice is reused by
// the next call).
func (c *Controller) Handle(now float64, ev Event) []Action {
	c.out = c.out[:0]
	c.lastNow = now
	c.events++
	if (ev.Kind <= Observed || ev.Kind >= Transfer) && (ev.Node < 0 || ev.Node >= len(c.rec)) {
		return c.out
	}
	switch ev.Kind {
	case PowerAnswered:
		c.powerAnswered(now, ev)
	case Observed:
		c.observed(now, ev)
	case Pause:
		c.backoffUntil = 0
		c.pause("paused by the operator")
	case Resume:
		c.paused, c.backoffUntil = "", 0
		c.brk.reset()
	case Abort:
		c.abort()
	case Transfer, GaveUp, Restarted:
		c.measured(now, ev)
	}
	c.expire(now)
	if c.started {
		c.admit(now)
		c.finishIfDone()
	}
	return c.out
}

// Events counts the events handled: the decisions of a run.
func (c *Controller) Events() int { return c.events }

// Records returns what the run knows of every node, in the order of New's nodes.
func (c *Controller) Records() []NodeRecord { return c.rec }

// PausedBecause says why admission is paused, or "".
func (c *Controller) PausedBecause() string { return c.paused }

// Done reports whether every node is healthy or failed.
func (c *Controller) Done() bool { return c.left <= 0 }

// InFlight counts the nodes powered and not yet booted.
func (c *Controller) InFlight() int { return c.adm.flying }

// InFlightLinks counts the nodes in flight behind every link (from their first DHCP request
// until their files are in), by resource.
func (c *Controller) InFlightLinks() []int {
	out := make([]int, len(c.adm.links))
	for r, l := range c.adm.links {
		out[r] = l.used
	}
	return out
}

func (c *Controller) powerAnswered(now float64, ev Event) {
	if c.rec[ev.Node].Phase != Powering {
		return
	}
	if ev.Class != "" {
		c.failAttempt(now, ev.Node, ev.Class)
		return
	}
	c.enter(now, ev.Node, Firmware)
}

// observed moves a node forward to what the boot servers saw; a node never moves back within
// an attempt, and one not powered by this run moves only to healthy (it is skipped).
func (c *Controller) observed(now float64, ev Event) {
	i, r := ev.Node, &c.rec[ev.Node]
	switch {
	case r.Phase == Queued && !c.started && ev.Phase == Healthy:
		r.Phase, r.Skipped, r.HealthAt = Healthy, true, now
		c.left--
	case r.Phase < Powering || r.Phase >= Healthy:
	case ev.Phase == Failed:
		c.failAttempt(now, i, ReportedFailed)
	case ev.Phase > r.Phase && ev.Phase >= Loading && ev.Phase <= Healthy:
		c.enterAt(now, observedAt(now, ev.Ago, r), i, ev.Phase)
	}
}

// observedAt is when a phase seen at now began ago seconds before, within what record r already
// holds: not before the last time it records (a clock or a read that disagrees cannot move a node
// back), not after now.
func observedAt(now, ago float64, r *NodeRecord) float64 {
	if !(ago > 0) || math.IsInf(ago, 0) {
		return now
	}
	return min(now, max(now-ago, r.PowerAt, r.LoadAt, r.BootAt))
}

// enter moves node i to phase p at now: it records the time, frees the node's resources once
// it has its files, and starts the phase's deadline.
func (c *Controller) enter(now float64, i int, p Phase) { c.enterAt(now, now, i, p) }

// enterAt is enter with the phase's time at (at most now), as the servers dated it.
func (c *Controller) enterAt(now, at float64, i int, p Phase) {
	r := &c.rec[i]
	from := r.Phase
	r.Phase = p
	c.gen[i]++
	switch p {
	case Powering:
		r.PowerAt = now
	case Loading:
		r.LoadAt = at
		if from == Firmware {
			c.learn.post(at - r.PowerAt)
		}
		c.hold(int32(i), holdSlot)
		c.entered(int32(i))
	case Booted:
		r.BootAt = at
	case Healthy:
		r.HealthAt = at
	}
	if p >= Booted {
		if c.held[i] == holdSlot {
			c.served(now, int32(i))
		}
		c.hold(int32(i), holdNone)
	}
	if p == Healthy {
		c.left--
		c.trips = 0
		if why := c.brk.record(""); why != "" {
			c.trip(now, why)
		}
		return
	}
	c.dl[p].push(now, int32(i), c.gen[i])
}

// hold sets what node i holds of its resources.
func (c *Controller) hold(i int32, h hold) {
	c.adm.move(c.adm.classes[c.classOf[i]].res, c.held[i], h)
	c.held[i] = h
}

// failAttempt ends node i's attempt with class cl: it is queued again, or given up when its
// attempts are spent or a retry cannot help (a refused login).
func (c *Controller) failAttempt(now float64, i int, cl Class) {
	r := &c.rec[i]
	r.Failures = append(r.Failures, cl)
	c.hold(int32(i), holdNone)
	c.gen[i]++
	if r.Attempts-c.node[i].evicted >= c.cfg.MaxAttempts || cl == BMCAuth || c.aborted {
		c.giveUp(i, cl)
	} else {
		r.Phase = Queued
		c.retry.push(now, int32(i), c.gen[i])
	}
	if why := c.brk.record(cl); why != "" {
		c.trip(now, why)
	}
}

// trip acts on the breaker: a pause for the operator (Breaker.Pause), or a back-off that halves
// every limit, waits and goes on by itself.
func (c *Controller) trip(now float64, why string) {
	if c.cfg.Breaker.Pause {
		c.pause(why)
		return
	}
	if c.paused != "" {
		return
	}
	c.trips++
	wait := c.cfg.Breaker.Backoff * float64(min(c.trips, 6))
	for r := range c.adm.links {
		c.setLimit(now, int32(r), c.adm.links[r].limit*0.5, "back-off")
	}
	c.backoffUntil = now + wait
	c.pause(fmt.Sprintf("%s; backing off: limits halved, admission waits %.0f s", why, wait))
}

func (c *Controller) giveUp(i int, cl Class) {
	r := &c.rec[i]
	r.Phase, r.Class = Failed, cl
	c.left--
	c.out = append(c.out, Action{Kind: GiveUp, Node: i, Attempt: r.Attempts, Class: cl})
}

func (c *Controller) pause(why string) {
	if c.paused == "" {
		c.paused = why
		c.out = append(c.out, Action{Kind: Paused, Reason: why})
	}
}

// abort gives up on every queued node; nodes in flight finish or fail as they will.
func (c *Controller) abort() {
	c.aborted = true
	for _, i := range c.adm.drain() {
		c.giveUp(int(i), Aborted)
	}
}

// admit powers on queued nodes while capacity allows.
func (c *Controller) admit(now float64) {
	if c.paused != "" || c.aborted {
		return
	}
	for {
		i := c.adm.next(now, c.learn.postTime)
		if i < 0 {
			return
		}
		c.held[i] = holdOnWay
		r := &c.rec[i]
		r.Attempts++
		kind := PowerOn
		if r.Attempts > 1 {
			kind = Cycle
		}
		c.enter(now, int(i), Powering)
		c.out = append(c.out, Action{Kind: kind, Node: int(i), Attempt: r.Attempts})
	}
}

func (c *Controller) finishIfDone() {
	if c.left == 0 {
		if c.backoffUntil > 0 {
			c.backoffUntil, c.paused = 0, "" // nothing left to back off from
		}
		c.left = -1 // once
		c.out = append(c.out, Action{Kind: Finished})
	}
}

// deadlineClass is why a node late in phase p failed.
var deadlineClass = [numPhases]Class{Powering: BMCTimeout, Firmware: NoDHCP, Loading: StuckTransfer, Booted: NoHealth}

// expire fails every node whose phase deadline passed by now, and queues again every failed
// node whose retry delay passed.
func (c *Controller) expire(now float64) {
	if c.backoffUntil > 0 && now >= c.backoffUntil {
		c.backoffUntil, c.paused = 0, ""
		c.brk.reset()
		c.out = append(c.out, Action{Kind: Resumed, Reason: "back-off over"})
	}
	for _, q := range []*deadlines{&c.retry, &c.requeue} {
		for {
			i, ok := q.due(now, c.gen)
			if !ok {
				break
			}
			if c.aborted {
				c.giveUp(int(i), Aborted)
				continue
			}
			c.adm.enqueue(c.classOf[i], i, true)
		}
	}
	for p := Powering; p <= Booted; p++ {
		q := &c.dl[p]
		for {
			i, ok := q.due(now, c.gen)
			if !ok {
				break
			}
			c.failAttempt(now, int(i), deadlineClass[p])
		}
	}
}

// NextDeadline is when the next phase deadline or retry delay passes (+Inf: none): when a Tick
// is due.
func (c *Controller) NextDeadline() float64 {
	t := min(c.retry.next(c.gen), c.requeue.next(c.gen))
	for p := range c.dl {
		t = min(t, c.dl[p].next(c.gen))
	}
	if c.backoffUntil > 0 {
		t = min(t, c.backoffUntil)
	}
	if len(c.adm.active) > 0 && c.paused == "" {
		t = min(t, c.adm.nextPaceAfter(c.lastNow))
	}
	return t
}

// deadlines is one phase's deadlines: every node enters the phase with the same allowance, so
// entries come in deadline order and a FIFO is a priority queue. Entries of nodes that moved
// on (their generation changed) are dropped when they reach the front.
type deadlines struct {
	after float64
	q     []deadline
	head  int
}

type deadline struct {
	at   float64
	node int32
	gen  uint32
}

func (d *deadlines) push(now float64, i int32, gen uint32) {
	if math.IsInf(d.after, 1) {
		return
	}
	if d.head > 1024 && d.head*2 > len(d.q) {
		d.q = append(d.q[:0], d.q[d.head:]...)
		d.head = 0
	}
	d.q = append(d.q, deadline{at: now + d.after, node: i, gen: gen})
}

// next drops stale entries and returns the first live deadline (+Inf: none).
func (d *deadlines) next(gen []uint32) float64 {
	for d.head < len(d.q) && d.q[d.head].gen != gen[d.q[d.head].node] {
		d.head++
	}
	if d.head < len(d.q) {
		return d.q[d.head].at
	}
	return math.Inf(1)
}

// due pops the first live entry whose deadline is by now.
func (d *deadlines) due(now float64, gen []uint32) (int32, bool) {
	if d.next(gen) > now {
		return 0, false
	}
	e := d.q[d.head]
	d.head++
	return e.node, true
}
