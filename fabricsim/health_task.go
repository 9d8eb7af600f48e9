package fabricsim

import (
	"fmt"
	"math"

	"github.com/bootfabric/bootfabric/internal/heapq"
)

// hsMsg is a reduction message: its holder has the partial data, whose ids are the path.
type hsMsg struct {
	holder   int
	data     HealthSummary
	recovery bool
	// lastTask is the pace of the holder's last task, reported to the master with the message:
	// its duration over what it would take at full speed. The paper compares last task
	// durations, which is the same when every task moves the same n bytes; sparse partials grow,
	// and a raw duration would then mostly measure the task's size.
	lastTask float64
}

// hsTaskRun is a task whose execution a death interrupted; it is settled when the master
// detects the first of its failed sides.
type hsTaskRun struct {
	exec, src int
	mi, mj    *hsMsg // mi is exec's message, mj src's
	settled   bool
}

type hsCopy struct {
	node int
	at   float64 // when the copy exists
}

// hsEvent is what happens at the master; the event heap orders events by time, then by the
// order they were made in.
type hsEvent struct {
	msg  *hsMsg // arrival at the master, or
	dead int    // detection of this node's death (msg == nil)
}

type hsTaskSim struct {
	w         *hsWorld
	events    heapq.Heap[hsEvent]
	seq       int32    // events made, their order among events at one time
	queue     []*hsMsg // the master's FIFO
	busy      []float64
	lastTask  []float64 // last task pace, as the master knows it
	knownDead []bool
	stalled   map[int][]*hsTaskRun
	lostPosts map[int][]*hsMsg // posts that never left a node that died
	copies    [][]hsCopy       // raw record copies per node id
	holds     map[int][]int    // node -> records it has copies of (only nodes that die matter)
	lost      []bool
	nLost     int
	lostBy    map[int][]int

	msgs, tasks, recoveries int
	bytes                   float64
}

func (s *hsTaskSim) push(t float64, m *hsMsg, dead int) {
	s.seq++
	s.events.Push(heapq.Item[hsEvent]{Key: t, Tie: s.seq, Value: hsEvent{msg: m, dead: dead}})
}

// hsTask runs the task-parallel reduction as a discrete-event simulation. Deaths are known in
// advance (they are inputs), so a task's outcome is settled when it is dispatched: it either
// posts its merged message or stalls until the master detects the death that interrupted it.
func hsTask(w *hsWorld) (HealthResult, error) {
	p := w.p
	c := w.cfg
	s := &hsTaskSim{
		w: w, busy: make([]float64, p), lastTask: make([]float64, p), knownDead: make([]bool, p),
		stalled: map[int][]*hsTaskRun{}, lostPosts: map[int][]*hsMsg{}, copies: make([][]hsCopy, p),
		holds: map[int][]int{}, lost: make([]bool, p), lostBy: map[int][]int{},
	}
	// Raw records: at the node from the start, at (i+1) mod p once the asynchronous copy lands
	// (if both ends live that long).
	for i := 0; i < p; i++ {
		s.copies[i] = []hsCopy{{node: i}}
		s.noteHold(i, i)
		if p == 1 {
			continue
		}
		nx := (i + 1) % p
		at := w.xfer(i, nx, c.RecordBytes)
		if c.PreReplicated {
			at = 0
		}
		s.msgs++
		if w.alive(i, at) && w.alive(nx, at) {
			s.bytes += c.RecordBytes
			s.copies[i] = append(s.copies[i], hsCopy{node: nx, at: at})
			s.noteHold(nx, i)
		}
	}
	for _, f := range w.faults {
		s.push(w.detect(f.Node), nil, f.Node)
	}
	for i := 0; i < p; i++ {
		s.post(&hsMsg{holder: i, data: healthRecord(i, w.truth[i])}, 0)
	}
	// Every record is recovered at most once per death, and each step handles one message.
	limit := 8*p + 8*p*len(w.faults) + 1000
	for steps := 0; s.events.Len() > 0; steps++ {
		if steps > limit {
			return HealthResult{}, fmt.Errorf("health task reduction: no end after %d events (model bug)", steps)
		}
		if s.seq > math.MaxInt32/2 {
			// A step makes a few events; the sequence numbers that order them are 31 bits.
			return HealthResult{}, fmt.Errorf("health task reduction: more than %d events", math.MaxInt32/2)
		}
		it := s.events.Pop()
		e, t := it.Value, it.Key
		var done *hsMsg
		if e.msg != nil {
			done = s.arrive(e.msg, t)
		} else {
			done = s.detected(e.dead, t)
		}
		if done != nil {
			return s.finish(done, t), nil
		}
	}
	return HealthResult{}, fmt.Errorf("health task reduction: stalled with %d messages queued and %d records lost (model bug)",
		len(s.queue), s.nLost)
}

func (s *hsTaskSim) noteHold(node, rec int) {
	if !math.IsInf(s.w.death[node], 1) {
		s.holds[node] = append(s.holds[node], rec)
	}
}

// post sends m from its holder to the master, the holder being free to send at t.
func (s *hsTaskSim) post(m *hsMsg, t float64) {
	w := s.w
	sent := t + w.cfg.MessageTime*w.slow[m.holder]
	s.msgs++
	if !w.alive(m.holder, sent) {
		s.lostPosts[m.holder] = append(s.lostPosts[m.holder], m)
		return
	}
	s.push(sent+w.cfg.QueueTime, m, 0)
}

func (s *hsTaskSim) complete(m *hsMsg) bool { return m.data.Len()+s.nLost == s.w.p }

// arrive queues m at the master at t and hands out tasks; it returns m when m ends the reduction.
func (s *hsTaskSim) arrive(m *hsMsg, t float64) *hsMsg {
	if s.knownDead[m.holder] {
		s.split(m, t, m.holder)
		return s.dispatch(t)
	}
	if m.lastTask > 0 {
		s.lastTask[m.holder] = m.lastTask
	}
	if s.complete(m) {
		return m
	}
	s.queue = append(s.queue, m)
	return s.dispatch(t)
}

// dispatch pairs queued messages into tasks at time t. It returns a queued message that has
// become complete (after records were declared lost), if any.
func (s *hsTaskSim) dispatch(t float64) *hsMsg {
	for _, m := range s.queue {
		if s.complete(m) {
			return m
		}
	}
	for len(s.queue) >= 2 {
		a, b := s.queue[0], s.queue[1]
		s.queue[0], s.queue[1] = nil, nil
		s.queue = s.queue[2:]
		if s.pickB(a, b) {
			a, b = b, a
		}
		s.run(a, b, t)
	}
	return nil
}

// pickB reports whether b's holder, not a's, gets the task: the root first, then a holder
// flagged for recovery (it reads the raw record from its own disk), then the quicker pace of the
// last task. A worker that has not finished a task yet counts as slower than any measured one (the paper
// leaves this open; trusting unmeasured workers hands tasks to stragglers). Ties go to a, the
// message that arrived first.
func (s *hsTaskSim) pickB(a, b *hsMsg) bool {
	switch {
	case a.holder == b.holder, a.holder == 0:
		return false
	case b.holder == 0:
		return true
	case a.recovery != b.recovery:
		return b.recovery
	}
	la, lb := s.lastTask[a.holder], s.lastTask[b.holder]
	if la == 0 {
		la = math.Inf(1)
	}
	if lb == 0 {
		lb = math.Inf(1)
	}
	return lb < la
}

// run has mi's holder fold mj's data in, the task leaving the master at t.
func (s *hsTaskSim) run(mi, mj *hsMsg, t float64) {
	w := s.w
	c := w.cfg
	exec, src := mi.holder, mj.holder
	arrive := t + c.MessageTime*w.slow[exec] + c.QueueTime
	start := max(arrive, s.busy[exec])
	n := w.bytes(mj.data.Len())
	pullEnd := start + w.pull(exec, src, n)
	sent := pullEnd + w.fold(exec, n) + c.MessageTime*w.slow[exec]
	s.msgs++ // the task
	if src != exec {
		s.msgs++ // the pull
	}
	execFail := !w.alive(exec, sent)
	srcFail := src != exec && !w.alive(src, pullEnd)
	if !execFail && !srcFail {
		s.tasks++
		if src != exec {
			s.bytes += n
		}
		s.busy[exec] = sent
		nominal := n*(c.TransferPerByte+c.CombinePerByte) + c.MessageTime
		if src != exec {
			nominal += c.Latency
		}
		pace := 1.0
		if nominal > 0 {
			pace = (sent - start) / nominal
		}
		s.post(&hsMsg{holder: exec, data: mi.data.Merge(mj.data), lastTask: pace}, pullEnd+w.fold(exec, n))
		return
	}
	run := &hsTaskRun{exec: exec, src: src, mi: mi, mj: mj}
	if execFail {
		s.stalled[exec] = append(s.stalled[exec], run)
	}
	if srcFail {
		s.stalled[src] = append(s.stalled[src], run)
		// exec waits on the pull until the master tells it src is gone.
		s.busy[exec] = max(s.busy[exec], start, w.detect(src))
	}
}

// detected handles the master learning at t that node x died.
func (s *hsTaskSim) detected(x int, t float64) *hsMsg {
	s.knownDead[x] = true
	s.rereplicate(x, t)
	keep := s.queue[:0]
	var gone []*hsMsg
	for _, m := range s.queue {
		if m.holder == x {
			gone = append(gone, m)
		} else {
			keep = append(keep, m)
		}
	}
	for i := len(keep); i < len(s.queue); i++ {
		s.queue[i] = nil
	}
	s.queue = keep
	for _, m := range gone {
		s.split(m, t, x)
	}
	for _, m := range s.lostPosts[x] {
		s.split(m, t, x)
	}
	delete(s.lostPosts, x)
	for _, r := range s.stalled[x] {
		if r.settled {
			continue
		}
		r.settled = true
		switch {
		case r.exec == x && r.src == x:
			s.split(r.mi, t, x)
			s.split(r.mj, t, x)
		case r.exec == x: // fault cases 1 and 2: put Mj back, recompute Pi
			s.split(r.mi, t, x)
			s.putBack(r.mj, t)
		default: // fault case 3: put Mi back, recompute Pj
			s.split(r.mj, t, x)
			s.putBack(r.mi, t)
		}
	}
	delete(s.stalled, x)
	return s.dispatch(t)
}

func (s *hsTaskSim) putBack(m *hsMsg, t float64) {
	if s.knownDead[m.holder] {
		s.split(m, t, m.holder)
		return
	}
	s.queue = append(s.queue, m)
}

// split recomputes m's lost partial from raw records: one recovery message per record, held by
// a live copy's node; records without one are lost, blamed on the death of node cause.
func (s *hsTaskSim) split(m *hsMsg, t float64, cause int) {
	for _, e := range m.data.entries {
		k := e.Node
		best := -1
		for i, cp := range s.copies[k] {
			if s.knownDead[cp.node] || !s.w.alive(cp.node, cp.at) {
				continue
			}
			// Prefer the record's own node, then the copy available first.
			if best < 0 || cp.node == k || (s.copies[k][best].node != k && cp.at < s.copies[k][best].at) {
				best = i
			}
		}
		if best < 0 {
			s.lost[k] = true
			s.nLost++
			s.lostBy[cause] = append(s.lostBy[cause], k)
			continue
		}
		cp := s.copies[k][best]
		s.recoveries++
		rm := &hsMsg{holder: cp.node, data: healthRecord(k, e.Status), recovery: true}
		if cp.at > t {
			s.push(cp.at, rm, 0)
		} else {
			s.queue = append(s.queue, rm)
		}
	}
}

// rereplicate restores a second copy of every raw record that lost one with node x, copying
// from the surviving copy to the next live node that has none.
func (s *hsTaskSim) rereplicate(x int, t float64) {
	w := s.w
	for _, k := range s.holds[x] {
		live := -1
		n := 0
		for _, cp := range s.copies[k] {
			if cp.node != x && !s.knownDead[cp.node] && w.alive(cp.node, cp.at) {
				n++
				live = cp.node
			}
		}
		if n != 1 || w.p < 3 {
			continue
		}
		src := live
		from := max(t, s.copyAt(k, src))
		for step := 1; step < w.p; step++ {
			tgt := (x + step) % w.p
			if s.knownDead[tgt] || s.hasCopy(k, tgt) {
				continue
			}
			at := from + w.xfer(src, tgt, w.cfg.RecordBytes)
			s.msgs++
			if w.alive(src, at) && w.alive(tgt, at) {
				s.bytes += w.cfg.RecordBytes
				s.copies[k] = append(s.copies[k], hsCopy{node: tgt, at: at})
				s.noteHold(tgt, k)
			}
			break
		}
	}
	delete(s.holds, x)
}

func (s *hsTaskSim) hasCopy(k, node int) bool {
	for _, cp := range s.copies[k] {
		if cp.node == node {
			return true
		}
	}
	return false
}

func (s *hsTaskSim) copyAt(k, node int) float64 {
	for _, cp := range s.copies[k] {
		if cp.node == node {
			return cp.at
		}
	}
	return 0
}

// finish builds the result once the master has seen the complete message m at t.
func (s *hsTaskSim) finish(m *hsMsg, t float64) HealthResult {
	w := s.w
	sum := m.data
	if s.nLost > 0 {
		lost := make([]HealthEntry, 0, s.nLost)
		for k, l := range s.lost {
			if l {
				lost = append(lost, HealthEntry{Node: k, Status: HealthUnreachable})
			}
		}
		sum = sum.Merge(hsFromSorted(lost))
	}
	return HealthResult{
		CompletionSeconds: t + w.broadcast(),
		Summary:           sum,
		Faults:            w.faultResults(s.lostBy),
		Messages:          s.msgs + w.p - 1,
		Bytes:             s.bytes,
		Tasks:             s.tasks,
		RecoveryMessages:  s.recoveries,
	}
}
