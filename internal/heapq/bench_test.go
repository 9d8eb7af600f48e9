package heapq

import "testing"

// handEntry and handHeap are a hand-written heap of the kind heapq replaced (fabricsim's level
// heap): the anchor the benchmark compares against in the same run.
type handEntry struct {
	level float64
	ch    int32
	_     uint32 // the version the level heap carried
}

func (a handEntry) less(b handEntry) bool {
	return a.level < b.level || (a.level == b.level && a.ch < b.ch)
}

type handHeap []handEntry

func (h *handHeap) push(e handEntry) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *handHeap) pop() handEntry {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	*h = s
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && s[r].less(s[l]) {
			j = r
		}
		if !s[j].less(s[i]) {
			break
		}
		s[i], s[j] = s[j], s[i]
		i = j
	}
	return top
}

// heapWork is the level heap's pattern in progressive filling: levels only grow, so each pop is
// followed by pushes of larger levels (the channels whose level it changed).
func heapWork(b *testing.B, push func(float64, int32), pop func() float64, size int) {
	x := uint64(1)
	rnd := func() float64 {
		x = x*6364136223846793005 + 1442695040888963407
		return float64(x>>11) / (1 << 53)
	}
	for b.Loop() {
		for i := range size {
			push(rnd(), int32(i))
		}
		for i := range 4 * size {
			l := pop()
			push(l+rnd(), int32(i))
			if i%2 == 0 {
				push(l+rnd(), int32(i))
			}
		}
		for range 3 * size {
			pop()
		}
	}
}

// BenchmarkHeap: heapq against the hand-written heap on the same work, 1,000 and 100,000 items.
func BenchmarkHeap(b *testing.B) {
	for _, size := range []int{1000, 100000} {
		b.Run("heapq/"+itoa(size), func(b *testing.B) {
			var h Heap[uint32]
			heapWork(b, func(k float64, c int32) { h.Push(Item[uint32]{Key: k, Tie: c}) }, func() float64 { return h.Pop().Key }, size)
		})
		b.Run("hand/"+itoa(size), func(b *testing.B) {
			var h handHeap
			heapWork(b, func(k float64, c int32) { h.push(handEntry{level: k, ch: c}) }, func() float64 { return h.pop().level }, size)
		})
	}
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
