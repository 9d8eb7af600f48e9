package fabricsim

// hsBinomial reduces along the binomial tree: node r receives from r+2^k for every k below its
// lowest set bit (all k for the root), in increasing k, then sends to its parent. Children have
// larger ids, so one pass from p-1 down to 0 settles every node's timeline.
func hsBinomial(w *hsWorld) (HealthResult, error) {
	b := &hsBinom{w: w, ready: make([]float64, w.p), part: make([]HealthSummary, w.p), lostBy: map[int][]int{}}
	for r := w.p - 1; r >= 0; r-- {
		b.part[r] = healthRecord(r, w.truth[r])
		t := 0.0
		for k := 0; r+(1<<k) < w.p && (r == 0 || k < hsLowBit(r)); k++ {
			t = b.recv(r, r+(1<<k), t)
		}
		b.ready[r] = t
	}
	return HealthResult{
		CompletionSeconds: b.ready[0],
		Summary:           b.part[0],
		Faults:            w.faultResults(b.lostBy),
		Messages:          b.msgs,
		Bytes:             b.bytes,
		Tasks:             b.tasks,
	}, nil
}

type hsBinom struct {
	w      *hsWorld
	ready  []float64       // when the node's partial is final and it starts sending
	part   []HealthSummary // the node's final partial, as if it stayed alive
	lostBy map[int][]int
	msgs   int
	bytes  float64
	tasks  int
}

// hsLowBit is the index of n's lowest set bit (n > 0): node n sends at that step.
func hsLowBit(n int) int {
	k := 0
	for n&1 == 0 {
		n >>= 1
		k++
	}
	return k
}

// recv has r, free from time t, receive child c's partial; it returns when r is free again.
func (b *hsBinom) recv(r, c int, t float64) float64 {
	w := b.w
	start := max(t, b.ready[c])
	n := w.bytes(b.part[c].Len())
	x := w.xfer(c, r, n)
	b.msgs++
	if w.alive(c, start+x) {
		b.bytes += n
		b.tasks++
		b.part[r] = b.part[r].Merge(b.part[c])
		return start + x + w.fold(r, n)
	}
	// c died before its partial arrived; r learns it from the failure detector.
	t = max(t, w.detect(c))
	if !w.cfg.Reparent {
		// Everything that would have come through c is gone: c's subtree [c, c+2^lowbit(c)).
		end := min(c+(1<<hsLowBit(c)), w.p)
		lost := make([]HealthEntry, 0, end-c)
		for id := c; id < end; id++ {
			lost = append(lost, HealthEntry{Node: id, Status: HealthUnreachable})
			b.lostBy[c] = append(b.lostBy[c], id)
		}
		b.part[r] = b.part[r].Merge(hsFromSorted(lost))
		return t
	}
	// Adopt c's children: they kept their partials and resend them to r.
	b.lostBy[c] = append(b.lostBy[c], c)
	b.part[r] = b.part[r].Merge(healthRecord(c, HealthUnreachable))
	for k := 0; k < hsLowBit(c) && c+(1<<k) < w.p; k++ {
		t = b.recv(r, c+(1<<k), t)
	}
	return t
}
