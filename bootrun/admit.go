package bootrun

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// admission holds the queued nodes by class (the same resources), in order of each class's
// first node, and admits round robin across the classes: interleaved across boot servers and
// segments, in the operator's order within each. A resource counts two kinds of node: those in
// flight (from their first DHCP request until their files are in), which its limit bounds, and
// those on their way (powered, in POST), which only pacing bounds.
type admission struct {
	links   []link
	max     int // 0: none
	flying  int // powered and not yet booted, on their way or in flight
	classes []admitClass
	active  []int32 // classes with queued nodes, in order
	rr      int
}

// link is one resource's admission state: its limit (AIMD: fractional, the cap is its floor),
// the nodes it holds and the pace of power-ons beyond its window.
type link struct {
	limit    float64
	max      int // the most nodes ever behind it: the limit grows no further
	used     int // in flight: DHCP requested, files not yet in
	onWay    int // powered, no DHCP request yet
	epoch    int // bumped at every cut: signals of nodes that entered before are not counted again
	transfer float64
	nextPace float64
	// alone is how long one node's files take on the link by themselves (Config.FilesMb over
	// its capacity; 0: unknown), and aloneAt the earliest next power-on it allows: the link
	// takes at most one node per alone, so a first wave does not arrive at once.
	alone   float64
	aloneAt float64
}

func (l *link) cap() int { return max(1, int(l.limit)) }

type admitClass struct {
	res   []int32
	link  int32   // the resource whose limit adapts to this class's measurements (-1: none)
	retry []int32 // retried nodes go first
	queue []int32
	head  int
}

func (c *admitClass) empty() bool { return len(c.retry) == 0 && c.head == len(c.queue) }

func newAdmission(cfg *Config, nodes []Node) (*admission, []int32) {
	a := &admission{links: make([]link, len(cfg.Caps)), max: cfg.MaxInFlight}
	users := make([]int, len(cfg.Caps))
	for _, n := range nodes {
		for _, r := range n.Resources {
			users[r]++
		}
	}
	for r, c := range cfg.Caps {
		a.links[r] = link{limit: float64(max(1, min(c, users[r]))), max: max(1, users[r]), transfer: cfg.Expect.Transfer, nextPace: math.Inf(-1), aloneAt: math.Inf(-1)}
		if r < len(cfg.CapacityMbps) && cfg.CapacityMbps[r] > 0 {
			a.links[r].alone = cfg.FilesMb / cfg.CapacityMbps[r]
		}
	}
	classOf := make([]int32, len(nodes))
	byKey := map[string]int32{}
	var key strings.Builder
	for i, n := range nodes {
		res := slices.Clone(n.Resources)
		slices.Sort(res)
		res = slices.Compact(res)
		key.Reset()
		for _, r := range res {
			key.WriteString(strconv.Itoa(int(r)))
			key.WriteByte(',')
		}
		c, ok := byKey[key.String()]
		if !ok {
			c = int32(len(a.classes))
			byKey[key.String()] = c
			a.classes = append(a.classes, admitClass{res: res, link: tightest(res, cfg.Caps)})
		}
		classOf[i] = c
	}
	return a, classOf
}

// tightest is the resource of res with the smallest cap (the first of equals): the link whose
// limit a node's measurements move, as the narrowest link of a path is the one TCP's window
// finds. -1 when res is empty.
func tightest(res []int32, caps []int) int32 {
	best := int32(-1)
	for _, r := range res {
		if best < 0 || caps[r] < caps[best] {
			best = r
		}
	}
	return best
}

// enqueue queues node i of class c; a retry goes before the class's first-time nodes.
func (a *admission) enqueue(c, i int32, retry bool) {
	cl := &a.classes[c]
	if cl.empty() {
		a.active = append(a.active, c)
	}
	if retry {
		cl.retry = append(cl.retry, i)
	} else {
		cl.queue = append(cl.queue, i)
	}
}

// pipe is how many nodes may be on their way to a link beyond its free slots: those its
// measured service rate (limit / transfer time) drains in the measured POST time, as a TCP
// window covers the bandwidth-delay product. 0 until both are measured, or while a POST is
// shorter than a node's transfer.
func (l *link) pipe(post float64) int {
	if !(l.transfer > 0) || !(post > 0) {
		return 0
	}
	return int(float64(l.cap()) / l.transfer * post) // rounded down: never more than drains
}

// fits says whether a node of class c may be powered on at now: every resource has a free slot
// counting the nodes on their way, or, beyond that, its pipe has room and its pace allows one.
func (a *admission) fits(c *admitClass, now, post float64) bool {
	if a.max > 0 && a.flying >= a.max {
		return false
	}
	for _, r := range c.res {
		l := &a.links[r]
		k := l.cap()
		if l.used >= k || now < l.aloneAt {
			return false
		}
		if l.used+l.onWay < k {
			continue
		}
		if l.used+l.onWay >= k+l.pipe(post) || now < l.nextPace {
			return false
		}
	}
	return true
}

// paced records a power-on at now on c's resources: a resource already full counting the nodes
// on their way lets the next one go a service time later.
func (a *admission) paced(c *admitClass, now float64) {
	for _, r := range c.res {
		l := &a.links[r]
		if l.used+l.onWay >= l.cap() && l.transfer > 0 {
			l.nextPace = now + l.transfer/float64(l.cap())
		}
		if l.alone > 0 {
			l.aloneAt = now + l.alone
		}
	}
}

// nextPace is the earliest time pacing lets a resource take a node (+Inf: none waits on pace).
func (a *admission) nextPaceAfter(now float64) float64 {
	t := math.Inf(1)
	for _, l := range a.links {
		if l.nextPace > now {
			t = min(t, l.nextPace)
		}
		if l.aloneAt > now {
			t = min(t, l.aloneAt)
		}
	}
	return t
}

// next takes the next node that fits at now, round robin over the classes, and counts it on
// its way; -1 when none fits.
func (a *admission) next(now, post float64) int32 {
	if a.max > 0 && a.flying >= a.max {
		return -1
	}
	for k := range len(a.active) {
		j := (a.rr + k) % len(a.active)
		c := &a.classes[a.active[j]]
		if !a.fits(c, now, post) {
			continue
		}
		var i int32
		if len(c.retry) > 0 {
			i, c.retry = c.retry[0], c.retry[1:]
		} else {
			i = c.queue[c.head]
			c.head++
		}
		a.paced(c, now)
		a.move(c.res, holdNone, holdOnWay)
		a.rr = j + 1
		if c.empty() {
			a.active = slices.Delete(a.active, j, j+1)
			a.rr = j
		}
		if len(a.active) > 0 {
			a.rr %= len(a.active)
		}
		return i
	}
	return -1
}

// hold is what a node holds of its resources.
type hold uint8

const (
	holdNone  hold = iota
	holdOnWay      // powered, no DHCP request yet
	holdSlot       // in flight
)

// move changes what one node holds of res from one kind to another.
func (a *admission) move(res []int32, from, to hold) {
	if from == to {
		return
	}
	a.flying += b2i(to != holdNone) - b2i(from != holdNone)
	for _, r := range res {
		l := &a.links[r]
		l.onWay += b2i(to == holdOnWay) - b2i(from == holdOnWay)
		l.used += b2i(to == holdSlot) - b2i(from == holdSlot)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// drain empties every queue and returns the nodes it held.
func (a *admission) drain() []int32 {
	var out []int32
	for _, c := range a.active {
		cl := &a.classes[c]
		out = append(out, cl.retry...)
		out = append(out, cl.queue[cl.head:]...)
		cl.retry, cl.head = nil, len(cl.queue)
	}
	a.active = nil
	return out
}
