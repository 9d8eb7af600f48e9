package fabricsim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/internal/heapq"
)

// simEngine is the event engine's state: every position's progress through its files, the
// classes and groups of flows, the heap of group finishing times, and the scratch of the
// incremental max-min re-solve.
type simEngine struct {
	// Per position.
	fileNext []int32
	done     []float64
	posClass []int32 // the class each position is in, -1 between files

	classes  []flowClass
	freeC    []int32 // recycled class slots
	groups   []flowGroup
	groupIdx map[groupKey]int32
	// slotClass is the first class made for each path at the current event, pathGroup the first
	// group of each path; mapped lists the classes put in the event's map instead, newClasses the
	// classes made at the event.
	slotClass  []int32
	pathGroup  []int32
	mapped     []int32
	newClasses []int32
	eventStamp int32
	activeG    []int32   // groups with flows, in no order
	chGroups   [][]int32 // active groups by channel
	chMark     []uint32
	stamp      uint32
	comp       []int32
	dirty      []int32 // groups changed at the event
	solved     []int32
	// load is each channel's total rate (kept up to date by the groups' changes); the channels
	// met as cuts of the component (chCut = stamp) are solved with capEff, and used sums the new
	// rates on them.
	load, capEff, used []float64
	chCut              []uint32
	cut                []int32
	heap               groupHeap
	mm                 maxMin
	in                 maxMinInput
	check              func(*maxMinInput, []float64) error
}

// A group's heap holds its classes by target, ties by class slot (Tie), each with the slot's
// generation (Value) when pushed: entries of a class that ended (gen moved on) are dropped when
// they reach the top.
type classHeap = heapq.Heap[uint32]

// groupHeap is an indexed min-heap of groups (Tie) by the time their next class finishes (Key):
// a group's key changes whenever its rate does, so the heap keeps each group's position (pos, -1
// if absent).
type groupHeap struct {
	h   heapq.Heap[struct{}]
	pos []int32 // by group
}

// set gives group g the key k (+Inf: out of the heap).
func (h *groupHeap) set(g int32, k float64) {
	if h.h.OnMove == nil {
		h.h.OnMove = func(e *heapq.Item[struct{}], i int) { h.pos[e.Tie] = int32(i) }
	}
	for int(g) >= len(h.pos) {
		h.pos = append(h.pos, -1)
	}
	i := h.pos[g]
	switch {
	case math.IsInf(k, 1):
		if i >= 0 {
			h.h.Remove(int(i))
			h.pos[g] = -1
		}
	case i < 0:
		h.h.Push(heapq.Item[struct{}]{Key: k, Tie: g})
	default:
		h.h.Set(int(i), heapq.Item[struct{}]{Key: k, Tie: g})
	}
}

// min is the earliest key (+Inf if the heap is empty).
func (h *groupHeap) min() float64 {
	if h.h.Len() == 0 {
		return math.Inf(1)
	}
	return h.h.Top().Key
}

// first is the group with the earliest key; the heap must not be empty.
func (h *groupHeap) first() int32 { return h.h.Top().Tie }

// progressAt is group g's progress per flow (Mb) at now. Max-min sharing gives every flow of a
// group the same rate until the next re-solve, so progress is kept lazily (p0 at t0, then rate):
// an event costs the classes and groups it touches, not every flow alive.
func (g *flowGroup) progressAt(now float64) float64 { return g.p0 + g.rate*(now-g.t0) }

// settleLabel adds the time since the last settlement to the group's current label.
func (g *flowGroup) settleLabel(now float64) {
	if now > g.since {
		g.btime[g.label] += now - g.since
	}
	g.since = now
}

// nextFinish is when the group's first class finishes at its current rate.
func (s *sim) nextFinish(g *flowGroup) float64 {
	for g.heap.Len() > 0 {
		if e := g.heap.Top(); s.classes[e.Tie].gen == e.Value {
			break
		}
		g.heap.Pop()
	}
	if g.heap.Len() == 0 || !(g.rate > 0) {
		return math.Inf(1)
	}
	return g.t0 + (g.heap.Top().Key-g.p0)/g.rate
}

// touch takes group g's throughput out of the running totals before it changes (see record).
func (s *sim) touch(gi int32) {
	g := &s.groups[gi]
	if g.touched {
		return
	}
	g.touched = true
	g.oldW, g.oldR = g.weight, g.rate
	s.touchedG = append(s.touchedG, gi)
	for l, v := range g.vec {
		s.thr[l] -= g.rate * v
	}
	if !g.dirty {
		g.dirty = true
		s.dirty = append(s.dirty, gi)
	}
}

// join adds class c, just made, to its group at now.
func (s *sim) join(c int32, now float64) {
	cl := &s.classes[c]
	gi := cl.group
	s.touch(gi)
	g := &s.groups[gi]
	if !g.active {
		s.activate(gi, now)
	}
	p := g.progressAt(now)
	cl.target = p + s.fileMb[cl.file]
	g.settleLabel(now)
	cl.snap = append(cl.snap[:0], g.btime...)
	g.heap.Push(heapq.Item[uint32]{Key: cl.target, Tie: c, Value: cl.gen})
	g.weight += cl.weight
	m := float64(len(cl.members))
	g.members += m
	g.joined += m * p
	s.addVec(g, cl, cl.weight)
}

// addVec adds w flows of class cl to the group's per-segment count of flows (see record).
func (s *sim) addVec(g *flowGroup, cl *flowClass, w float64) {
	for _, l := range s.profiles[cl.profile] {
		if int(l) < s.nSeg {
			g.vec[l] += w
		}
	}
}

// activate puts group gi on its channels.
func (s *sim) activate(gi int32, now float64) {
	g := &s.groups[gi]
	g.active = true
	g.rate, g.p0, g.t0 = 0, 0, now
	g.since = now
	g.apos = int32(len(s.activeG))
	s.activeG = append(s.activeG, gi)
	for _, c := range s.pathCh[g.path] {
		s.chGroups[c] = append(s.chGroups[c], gi)
	}
}

// deactivate takes group gi, now without flows, off its channels.
func (s *sim) deactivate(gi int32, now float64) {
	g := &s.groups[gi]
	g.settleLabel(now)
	g.active = false
	g.p0, g.t0, g.rate = g.progressAt(now), now, 0
	g.members, g.joined = 0, 0
	last := s.activeG[len(s.activeG)-1]
	s.activeG[g.apos] = last
	s.groups[last].apos = g.apos
	s.activeG = s.activeG[:len(s.activeG)-1]
	for _, c := range s.pathCh[g.path] {
		gs := s.chGroups[c]
		if i := slices.Index(gs, gi); i >= 0 {
			gs[i] = gs[len(gs)-1]
			s.chGroups[c] = gs[:len(gs)-1]
		}

	}
	s.heap.set(gi, math.Inf(1))
}

// leave takes k members (the first k, or all with k = len) of class c out of its group at now,
// adding the time they spent under each label to their nodes; with all members the class ends.
func (s *sim) leave(c int32, mem []int32, now float64) {
	cl := &s.classes[c]
	gi := cl.group
	s.touch(gi)
	g := &s.groups[gi]
	g.settleLabel(now)
	for _, i := range mem {
		tot := s.nodeTot(i)
		for l, v := range g.btime {
			tot[l] += v - cl.snap[l]
		}
	}
	m := float64(len(mem))
	w := m
	if s.pathMC[cl.path] {
		w = 0 // a tree carries one copy however many members leave; it leaves with the last
		if len(mem) == len(cl.members) {
			w = cl.weight
		}
	}
	g.weight -= w
	cl.weight -= w
	g.members -= m
	g.joined -= m * (cl.target - s.fileMb[cl.file])
	s.addVec(g, cl, -w)
}

// freeClass recycles class c once it has no members left.
func (s *sim) freeClass(c int32) {
	cl := &s.classes[c]
	cl.gen++
	cl.members = cl.members[:0]
	s.freeC = append(s.freeC, c)
}

// finishDue ends the classes whose flows finish by tol (the event at now), appending their members
// to starters.
func (s *sim) finishDue(now, tol float64, starters []int32) []int32 {
	for s.heap.min() <= tol {
		gi := s.heap.first()
		g := &s.groups[gi]
		for g.heap.Len() > 0 {
			e := *g.heap.Top()
			c := e.Tie
			cl := &s.classes[c]
			if cl.gen != e.Value {
				g.heap.Pop()
				continue
			}
			if g.t0+(e.Key-g.p0)/g.rate > tol {
				break
			}
			g.heap.Pop()
			s.leave(c, cl.members, now)
			s.mbDone += s.fileMb[cl.file] * float64(len(cl.members))
			for _, i := range cl.members {
				s.fileNext[i]++
				s.posClass[i] = -1
				starters = append(starters, i)
			}
			s.freeClass(c)
			g = &s.groups[gi]
		}
		s.heap.set(gi, s.nextFinish(g))
	}
	return starters
}

// slackMargin is how far below its capacity a channel's load must stay to count as slack: far
// above the rounding that the running loads gather between two recounts.
const slackMargin = 1e-9

// resolve re-shares the channels among the groups that the event's changes can reach, and sets
// their rates and finishing times from now.
//
// The groups re-solved are those connected to a changed group through channels that are
// saturated; a slack channel (load below capacity) is a cut: it stays in the problem with the
// capacity the groups beyond it leave, and if the new rates keep it slack, the groups beyond it
// keep their rates and their bottlenecks (none of them is bound by it, and every channel that
// binds them is saturated, so it would have brought them in). Otherwise the component grows
// through it and is solved again. The result is the max-min allocation of the whole problem.
func (s *sim) resolve(now float64) error {
	comp := s.component()
	for {
		solved, err := s.solveComponent(comp)
		if err != nil {
			return err
		}
		grown := len(comp)
		comp = s.growAtCuts(comp, solved)
		if len(comp) == grown {
			if err := s.applyRates(solved, now); err != nil {
				return err
			}
			break
		}
		s.stats.Regrowths++
	}
	for _, gi := range s.dirty {
		g := &s.groups[gi]
		g.dirty = false
		if g.active && g.weight == 0 {
			s.deactivate(gi, now)
		}
	}
	s.dirty = s.dirty[:0]
	for _, gi := range s.touchedG {
		g := &s.groups[gi]
		g.touched = false
		d := g.weight*g.rate - g.oldW*g.oldR
		for _, c := range s.pathCh[g.path] {
			if s.load[c] += d; len(s.chGroups[c]) == 0 {
				s.load[c] = 0 // no rounding left behind on an idle channel
			}
		}
		for l, v := range g.vec {
			s.thr[l] += g.rate * v
		}
		if g.active {
			s.heap.set(gi, s.nextFinish(g))
		}
	}
	s.touchedG = s.touchedG[:0]
	if s.check != nil {
		return s.certify(now)
	}
	return nil
}

// solveComponent solves max-min over the groups of comp that have flows, with the cut channels'
// capacities reduced by the load of the groups beyond them, and returns those groups (the rates
// are in s.mm, in their order).
func (s *sim) solveComponent(comp []int32) ([]int32, error) {
	solved := s.solved[:0]
	for _, gi := range comp {
		s.touch(gi)
		if s.groups[gi].weight > 0 {
			solved = append(solved, gi)
		}
	}
	s.solved = solved
	in := &s.in
	in.capacity = s.capacity
	if len(s.cut) > 0 {
		// The load of a cut channel before the event, less that of the component's groups.
		in.capacity = s.capEff
		for _, c := range s.cut {
			s.capEff[c] = s.capacity[c] - s.load[c]
		}
		for _, gi := range comp {
			g := &s.groups[gi]
			for _, c := range s.pathCh[g.path] {
				if s.chCut[c] == s.stamp {
					s.capEff[c] += g.oldW * g.oldR
				}
			}
		}
	}
	in.weight, in.limit, in.paths = in.weight[:0], in.limit[:0], in.paths[:0]
	for _, gi := range solved {
		g := &s.groups[gi]
		in.weight = append(in.weight, g.weight)
		in.limit = append(in.limit, g.limit)
		in.paths = append(in.paths, s.pathCh[g.path])
	}
	if len(solved) > 0 {
		if err := s.mm.solve(in); err != nil {
			return nil, err
		}
		s.stats.Allocations++
	}
	return solved, nil
}

// growAtCuts checks that the new rates of the solved groups keep every cut channel slack, and
// grows comp through those they do not; it restores the cut channels' capacities.
func (s *sim) growAtCuts(comp, solved []int32) []int32 {
	if len(s.cut) == 0 {
		return comp
	}
	for j, gi := range solved {
		g := &s.groups[gi]
		for _, c := range s.pathCh[g.path] {
			if s.chCut[c] == s.stamp {
				s.used[c] += g.weight * s.mm.rate[j]
			}
		}
	}
	from := len(comp)
	keep := s.cut[:0]
	for _, c := range s.cut {
		slack := s.used[c] < s.capEff[c]-slackMargin*s.capacity[c]
		s.used[c], s.capEff[c] = 0, s.capacity[c]
		if slack {
			keep = append(keep, c)
			continue
		}
		s.chCut[c] = 0
		comp = s.addGroups(comp, c)
	}
	s.cut = keep
	if len(comp) == from {
		return comp
	}
	comp = s.expand(comp, from)
	slices.Sort(comp)
	return comp
}

// applyRates gives the solved groups their new rates and labels from now.
func (s *sim) applyRates(solved []int32, now float64) error {
	for j, gi := range solved {
		g := &s.groups[gi]
		label := g.limitLabel
		if b := s.mm.bound[j]; b >= 0 {
			label = s.chLabel(b)
		}
		if r := s.mm.rate[j]; r != g.rate {
			if !(r > 0) {
				return fmt.Errorf("flow class of %g nodes got no bandwidth at %.6g s", g.members, now)
			}
			g.p0, g.t0, g.rate = g.progressAt(now), now, r
		}
		if label != g.label {
			g.settleLabel(now)
			g.label = label
		}
	}
	return nil
}

// component returns the groups (with flows or just emptied) whose rates the event's changes can
// move, in group order: all of them in the reference mode, else those connected to a changed
// group through saturated channels (see resolve).
func (s *sim) component() []int32 {
	comp := s.comp[:0]
	s.stamp++
	s.cut = s.cut[:0]
	if s.cfg.reference {
		comp = append(comp, s.activeG...)
		for _, gi := range s.dirty {
			if !s.groups[gi].active || s.groups[gi].weight == 0 {
				comp = append(comp, gi)
			}
		}
	} else {
		for _, gi := range s.dirty {
			if s.groups[gi].mark != s.stamp {
				s.groups[gi].mark = s.stamp
				comp = append(comp, gi)
			}
		}
		comp = s.expand(comp, 0)
	}
	slices.Sort(comp)
	comp = slices.Compact(comp)
	s.comp = comp
	return comp
}

// expand adds to queue the groups reachable from queue[from:] through saturated channels, and
// lists the slack channels it meets as cuts.
func (s *sim) expand(queue []int32, from int) []int32 {
	for k := from; k < len(queue); k++ {
		for _, c := range s.pathCh[s.groups[queue[k]].path] {
			if s.chMark[c] == s.stamp {
				continue
			}
			s.chMark[c] = s.stamp
			if s.load[c] < s.capacity[c]*(1-slackMargin) {
				s.chCut[c] = s.stamp
				s.cut = append(s.cut, c)
				continue
			}
			queue = s.addGroups(queue, c)
		}
	}
	return queue
}

// addGroups appends the active groups on channel c not yet in the component.
func (s *sim) addGroups(queue []int32, c int32) []int32 {
	for _, g2 := range s.chGroups[c] {
		if s.groups[g2].mark != s.stamp {
			s.groups[g2].mark = s.stamp
			queue = append(queue, g2)
		}
	}
	return queue
}

// certify hands the check hook the whole allocation: the active flows with their full shared
// paths (the channels left out of the groups' paths included), those of one class with the same
// path as one entry, and their group's rate.
func (s *sim) certify(now float64) error {
	in := maxMinInput{capacity: s.capacity}
	var rate []float64
	index := map[string]int{}
	var path []int32
	for _, gi := range s.activeG {
		g := &s.groups[gi]
		for _, e := range g.heap.Items() {
			cl := &s.classes[e.Tie]
			if cl.gen != e.Value || cl.weight == 0 {
				continue
			}
			clear(index)
			// Members of one class may differ in the channels left out of the group's path; a
			// tree is one flow.
			mem, w := cl.members, 1.0
			if s.pathMC[cl.path] {
				mem, w = mem[:1], cl.weight
			}
			for _, p := range mem {
				path = path[:0]
				for _, c := range s.routeCh[s.routeStart[p]:s.routeStart[p+1]] {
					if s.users[c] > 1 || s.mcNode[p] {
						path = append(path, c)
					}
				}
				if k, ok := index[int32Key(path)]; ok {
					in.weight[k] += w
					continue
				}
				index[strings.Clone(int32Key(path))] = len(in.weight)
				in.weight = append(in.weight, w)
				in.limit = append(in.limit, cl.limit)
				in.paths = append(in.paths, slices.Clone(path))
				rate = append(rate, g.rate)
			}
		}
	}
	if err := s.check(&in, rate); err != nil {
		return fmt.Errorf("allocation at %.6g s: %w", now, err)
	}
	return nil
}

// nodeTot returns the per-label seconds of position i's node, making them on first use.
func (s *sim) nodeTot(i int32) []float64 {
	b := s.batchIndex(i)
	slot := s.timeSlot[b]
	if slot < 0 {
		if n := len(s.freeTimeSlots); n > 0 {
			slot = s.freeTimeSlots[n-1]
			s.freeTimeSlots = s.freeTimeSlots[:n-1]
			clear(s.timePool[int(slot)*s.nLabels : int(slot+1)*s.nLabels])
		} else {
			slot = int32(len(s.timePool) / s.nLabels)
			s.timePool = append(s.timePool, make([]float64, s.nLabels)...)
		}
		s.timeSlot[b] = slot
	}
	return s.timePool[int(slot)*s.nLabels : int(slot+1)*s.nLabels]
}

// batchIndex is the batch index of position i.
func (s *sim) batchIndex(i int32) int32 {
	if s.fail != nil {
		return s.fail.node[i]
	}
	return i
}

// finishNode records the limit that bounded position i's node longest, now that it is done, and
// recycles its per-label seconds.
func (s *sim) finishNode(i int32) {
	if s.adm != nil {
		s.adm.finished = append(s.adm.finished, int(i))
	}
	b := s.batchIndex(i)
	s.nodeBest[b] = -1
	slot := s.timeSlot[b]
	if slot < 0 {
		return
	}
	tot := s.timePool[int(slot)*s.nLabels : int(slot+1)*s.nLabels]
	best := -1
	for l, v := range tot {
		if v > 0 && (best < 0 || v > tot[best] || (v == tot[best] && s.rank[l] < s.rank[best])) {
			best = l
		}
	}
	if best >= 0 {
		s.nodeBest[b], s.nodeBound[b] = int16(best), tot[best]
	}
	s.timeSlot[b] = -1
	s.freeTimeSlots = append(s.freeTimeSlots, slot)
}

// recount recomputes the per-segment throughput and the channels' loads from the active groups,
// dropping the rounding that the running totals gather (see record).
func (s *sim) recount() {
	clear(s.thr)
	for _, gi := range s.activeG {
		for _, c := range s.pathCh[s.groups[gi].path] {
			s.load[c] = 0
		}
	}
	for _, gi := range s.activeG {
		g := &s.groups[gi]
		for l, v := range g.vec {
			s.thr[l] += g.rate * v
		}
		for _, c := range s.pathCh[g.path] {
			s.load[c] += g.weight * g.rate
		}
	}
}
