package bootrun

import (
	"slices"
	"strconv"
	"strings"
)

// admission holds the queued nodes by class (the same resources), in order of each class's
// first node, and admits round robin across the classes: interleaved across boot servers and
// segments, in the operator's order within each.
type admission struct {
	caps    []int
	used    []int
	max     int // 0: none
	flying  int
	classes []admitClass
	active  []int32 // classes with queued nodes, in order
	rr      int
}

type admitClass struct {
	res   []int32
	retry []int32 // retried nodes go first
	queue []int32
	head  int
}

func (c *admitClass) empty() bool { return len(c.retry) == 0 && c.head == len(c.queue) }

func newAdmission(cfg *Config, nodes []Node) (*admission, []int32) {
	a := &admission{caps: cfg.Caps, used: make([]int, len(cfg.Caps)), max: cfg.MaxInFlight}
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
			a.classes = append(a.classes, admitClass{res: res})
		}
		classOf[i] = c
	}
	return a, classOf
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

func (a *admission) fits(c *admitClass) bool {
	if a.max > 0 && a.flying >= a.max {
		return false
	}
	for _, r := range c.res {
		if a.used[r] >= a.caps[r] {
			return false
		}
	}
	return true
}

// next takes the next node that fits, round robin over the classes, and holds its resources;
// -1 when none fits.
func (a *admission) next() int32 {
	if a.max > 0 && a.flying >= a.max {
		return -1
	}
	for k := range len(a.active) {
		j := (a.rr + k) % len(a.active)
		c := &a.classes[a.active[j]]
		if !a.fits(c) {
			continue
		}
		var i int32
		if len(c.retry) > 0 {
			i, c.retry = c.retry[0], c.retry[1:]
		} else {
			i = c.queue[c.head]
			c.head++
		}
		a.hold(c.res, 1)
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

// hold takes (d=1) or frees (d=-1) one node's resources.
func (a *admission) hold(res []int32, d int) {
	a.flying += d
	for _, r := range res {
		a.used[r] += d
	}
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
