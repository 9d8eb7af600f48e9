package bootrun

import (
	"math"
	"slices"
)

// LimitChange is one move of a link's in-flight limit.
type LimitChange struct {
	At       float64 `json:"at"`
	Resource int     `json:"resource"`
	Limit    float64 `json:"limit"`
	// Why: start, cut (a node fell under the floor or gave up a transfer), raise (a round of
	// nodes stayed above it), patience (down to what the learned patience allows: see
	// Controller.ceiling), back-off (the breaker tripped).
	Why string `json:"why"`
}

// Thresholds of the floor check, as fractions of the firmware's patience with one file.
const (
	// cutAt: a transfer whose mean rate would take longer than this to bring the whole file is
	// under the floor: its link's limit is cut, with room left before the firmware gives up.
	cutAt = 0.85
	// evictDelay is how long an evicted node waits before it may be powered on again: its
	// power-off goes first (the BMC's pace), and its link has room again within a transfer.
	evictDelay = 1.0
	// judgeAfter: a transfer is judged only after this long, past TCP's slow start and the
	// first poll's noise.
	judgeAfter = 0.15
	// ewma is the weight of a new sample in the measured POST and transfer times.
	ewma = 0.25
	// failSamples bounds the given-up transfers the patience is the median of.
	failSamples = 9
)

// nodeAdapt is what the adaptation keeps of one node.
type nodeAdapt struct {
	epoch    int  // its link's epoch when it entered (or restarted): older signals cut nothing
	stalled  bool // it fell under the floor or gave up in this attempt: it does not raise the limit
	measured bool // its transfers were measured in this attempt (a live run; the dry run has none)
	evicted  int  // attempts ended by eviction, not counted against MaxAttempts
}

// learner learns the plant: the firmware's patience from the transfers that completed and were
// given up, and the time from power-on to the first DHCP request.
type learner struct {
	patience float64   // the estimate
	longest  float64   // the longest transfer seen complete: the patience is at least this
	failed   []float64 // the latest given-up transfers' times
	postTime float64   // EWMA of power-on to first DHCP (0: none yet)
	biggest  int64     // the largest file seen, in bytes
}

func newLearner(cfg Config) learner { return learner{patience: cfg.Patience} }

func (l *learner) post(d float64) {
	if !(d >= 0) || math.IsInf(d, 0) {
		return
	}
	if l.postTime == 0 {
		l.postTime = d
	} else {
		l.postTime += ewma * (d - l.postTime)
	}
}

// done learns from a transfer that completed after d seconds.
func (l *learner) done(d float64) {
	if d > l.longest && !math.IsInf(d, 0) {
		l.longest = d
		l.patience = max(l.patience, d)
	}
}

// gaveUp learns from a transfer given up after d seconds: the patience is the median of the
// latest such times (a node the run powered off gives up early, one the firmware timed out
// gives up at its patience), and never less than a transfer that completed.
func (l *learner) gaveUp(d float64) {
	if !(d > 0) || math.IsInf(d, 0) {
		return
	}
	if len(l.failed) == failSamples {
		l.failed = l.failed[1:]
	}
	l.failed = append(l.failed, d)
	s := slices.Clone(l.failed)
	slices.Sort(s)
	l.patience = max(s[len(s)/2], l.longest)
}

// Patience is the firmware's patience with one file that the run has learned, in seconds.
func (c *Controller) Patience() float64 { return c.learn.patience }

// LimitChanges lists every move of the links' limits, in order (the first of each link at the
// start: its limit from the plan).
func (c *Controller) LimitChanges() []LimitChange { return c.limitLog }

func (c *Controller) linkOf(i int32) int32 { return c.adm.classes[c.classOf[i]].link }

// entered notes node i entering its link (its first DHCP request, or a restart).
func (c *Controller) entered(i int32) {
	c.node[i].stalled, c.node[i].measured = false, false
	if r := c.linkOf(i); r >= 0 {
		c.node[i].epoch = c.adm.links[r].epoch
	}
}

// served notes node i's files in: its link's transfer time is measured, and a node that stayed
// above the floor since it entered raises the limit by 1/limit, one node a round of the limit's
// nodes, as TCP's congestion avoidance adds a segment a round trip. A node whose transfers no
// server measured (the dry run's) is judged by the time its files took in all: over the
// patience it was under the floor, within cutAt of it above.
func (c *Controller) served(now float64, i int32) {
	r := c.linkOf(i)
	if r < 0 {
		return
	}
	l := &c.adm.links[r]
	d := now - c.rec[i].LoadAt
	if d > 0 {
		l.transfer += ewma * (d - l.transfer)
		if !(l.transfer > 0) {
			l.transfer = d
		}
	}
	n := &c.node[i]
	if !n.measured && d > c.learn.patience {
		c.stalled(now, i, false)
	}
	if !n.stalled && n.epoch == l.epoch && (n.measured || d <= cutAt*c.learn.patience) && l.limit < float64(l.max) {
		c.setLimit(now, r, l.limit+1/l.limit, "raise")
	}
}

// measured applies a boot server's measurement of node i, in flight.
func (c *Controller) measured(now float64, ev Event) {
	i := int32(ev.Node)
	if c.rec[i].Phase != Loading {
		return
	}
	switch ev.Kind {
	case Restarted:
		c.entered(i)
	case GaveUp:
		c.learn.gaveUp(ev.Seconds)
		c.stalled(now, i, true)
		c.underCeilings(now)
	case Transfer:
		c.node[i].measured = true
		c.learn.biggest = max(c.learn.biggest, ev.Size)
		if ev.Done {
			c.learn.done(ev.Seconds)
			return
		}
		p := c.learn.patience
		if ev.Size <= 0 || ev.Seconds < judgeAfter*p || ev.Bytes >= ev.Size {
			return
		}
		// The time the whole file takes at the rate so far; no byte yet: never.
		whole := math.Inf(1)
		if ev.Bytes > 0 {
			whole = ev.Seconds * float64(ev.Size) / float64(ev.Bytes)
		}
		if whole > cutAt*p {
			c.stalled(now, i, whole > p)
		}
	}
}

// stalled handles node i under the floor (doomed: it will miss the firmware's patience, or
// has): its link's limit is cut once for the nodes that entered since the last cut, and a
// doomed node behind a link with more in flight than its limit is powered off and queued
// again, so that the others get its share.
func (c *Controller) stalled(now float64, i int32, doomed bool) {
	c.node[i].stalled = true
	r := c.linkOf(i)
	if r < 0 {
		return
	}
	l := &c.adm.links[r]
	if c.node[i].epoch == l.epoch {
		c.setLimit(now, r, l.limit*c.cfg.Decrease, "cut")
		l.epoch++
	}
	if doomed && l.used > l.cap() {
		c.evict(now, i)
	}
}

// evict powers node i off and queues it again after evictDelay; the attempt is not counted.
func (c *Controller) evict(now float64, i int32) {
	rec := &c.rec[i]
	rec.Failures = append(rec.Failures, Congested)
	c.node[i].evicted++
	c.hold(i, holdNone)
	c.gen[i]++
	rec.Phase = Queued
	c.out = append(c.out, Action{Kind: PowerOff, Node: int(i), Attempt: rec.Attempts, Class: Congested})
	c.requeue.push(now, i, c.gen[i])
}

// ceiling is the most link r's limit may be: the nodes behind it, and, once a transfer given
// up taught the firmware's patience, the nodes that each get the largest file within cutAt of
// it from the link's capacity. Learned from the measurements, it is the floor of the plan
// made true: AIMD alone would raise the limit past it and lose a patience's worth of transfers
// every time it does.
func (c *Controller) ceiling(r int32) float64 {
	l := &c.adm.links[r]
	top := float64(l.max)
	if int(r) >= len(c.cfg.CapacityMbps) || !(c.cfg.CapacityMbps[r] > 0) || len(c.learn.failed) == 0 || c.learn.biggest <= 0 {
		return top
	}
	fit := math.Floor(c.cfg.CapacityMbps[r] * 1e6 / 8 * cutAt * c.learn.patience / float64(c.learn.biggest))
	return max(1, min(top, fit))
}

// underCeilings brings every link's limit down to its ceiling: the patience just learned is
// every node's firmware's, whatever its link.
func (c *Controller) underCeilings(now float64) {
	for r := range c.adm.links {
		if top := c.ceiling(int32(r)); c.adm.links[r].limit > top {
			c.setLimit(now, int32(r), top, "patience")
		}
	}
}

// setLimit moves link r's limit to v (at least 1, at most its ceiling) and logs it.
func (c *Controller) setLimit(now float64, r int32, v float64, why string) {
	l := &c.adm.links[r]
	v = min(max(1, v), c.ceiling(r))
	if v == l.limit {
		return
	}
	old := l.cap()
	l.limit = v
	if why == "raise" && l.cap() == old {
		return // the log keeps the moves of the cap, not every fraction
	}
	c.limitLog = append(c.limitLog, LimitChange{At: now, Resource: int(r), Limit: math.Round(v*100) / 100, Why: why})
}

// logStart logs every link's limit at the start.
func (c *Controller) logStart(now float64) {
	for r, l := range c.adm.links {
		c.limitLog = append(c.limitLog, LimitChange{At: now, Resource: r, Limit: l.limit, Why: "start"})
	}
}
