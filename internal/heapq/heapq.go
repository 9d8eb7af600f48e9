// Package heapq is a typed binary min-heap of items ordered by a float64 key, ties broken by an
// integer: the priority queue of discrete-event simulations (events by time, then by sequence)
// and of progressive filling (levels by value, then by channel).
//
// Why not container/heap: its Push and Pop take and return any, so every push of a struct value
// boxes it (an allocation), and every comparison is a call through an interface. Why not a
// generic heap with a less function: the compiler cannot inline a call through a function value
// (nor a method of a type parameter); with one, the fabric simulator's full re-solve
// (fabricsim's BenchmarkFlowSunwayRamp/full-step0.01) took 15-20 % more CPU than with its
// hand-written heaps. Here the order is fixed, (Key, Tie), so the comparison inlines; the
// payload is a type parameter stored in place, so a push allocates only when the slice grows;
// Tie is 32 bits so that an item with a 32-bit value is 16 bytes, as the hand-written entries
// were. BenchmarkHeap compares it with a hand-written heap in the same run.
//
// An optional OnMove callback tells the caller where each item lands, which is what an indexed
// heap (decrease-key, removal of an item by its identity) needs; without it the heap keeps no
// positions at all.
package heapq

// Item is a heap entry: Key orders the items (least first), Tie orders items of equal keys
// (least first; an ID or a sequence number), Value is the caller's. Keys must not be NaN.
type Item[T any] struct {
	Key   float64
	Tie   int32
	Value T
}

// before is the heap's order: by Key, then by Tie.
func (a *Item[T]) before(b *Item[T]) bool {
	return a.Key < b.Key || (a.Key == b.Key && a.Tie < b.Tie)
}

// Heap is a binary min-heap of items by (Key, Tie). The zero value is an empty heap.
type Heap[T any] struct {
	items []Item[T]
	// OnMove, if not nil, is called with an item and its new index every time the item is
	// placed (pushed or moved), so that the caller can find it again for Fix, Set or Remove.
	OnMove func(x *Item[T], i int)
}

// Len is the number of items.
func (h *Heap[T]) Len() int { return len(h.items) }

// Items is the heap's backing slice, in heap order; the caller must not reorder or resize it,
// nor change a Key or Tie without calling Fix.
func (h *Heap[T]) Items() []Item[T] { return h.items }

// Top is the least item; the heap must not be empty.
func (h *Heap[T]) Top() *Item[T] { return &h.items[0] }

// Clear empties the heap, keeping its storage.
func (h *Heap[T]) Clear() {
	clear(h.items) // let the garbage collector have what the values point to
	h.items = h.items[:0]
}

// Append adds x at the end without ordering it: a caller refilling the heap appends all its items
// and then orders them once with Heapify, in O(n) rather than O(n log n) for as many Pushes.
func (h *Heap[T]) Append(x Item[T]) { h.items = append(h.items, x) }

// Heapify orders the items after Appends.
func (h *Heap[T]) Heapify() {
	for i := range h.items {
		h.moved(i)
	}
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// Push adds x.
func (h *Heap[T]) Push(x Item[T]) {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	h.moved(i)
	h.up(i)
}

// Pop removes and returns the least item; the heap must not be empty.
func (h *Heap[T]) Pop() Item[T] {
	top := h.items[0]
	last := len(h.items) - 1
	x := h.items[last]
	h.items[last] = Item[T]{} // let the garbage collector have what the value points to
	h.items = h.items[:last]
	if last > 0 {
		h.sinkTop(x)
	}
	return top
}

// Remove removes and returns the item at index i.
func (h *Heap[T]) Remove(i int) Item[T] {
	if i == 0 {
		return h.Pop()
	}
	x := h.items[i]
	last := len(h.items) - 1
	y := h.items[last]
	h.items[last] = Item[T]{}
	h.items = h.items[:last]
	if i < last {
		h.Set(i, y)
	}
	return x
}

// Fix restores the order after the key or tie of the item at index i changed.
func (h *Heap[T]) Fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

// Set replaces the item at index i by x and restores the order.
func (h *Heap[T]) Set(i int, x Item[T]) {
	h.items[i] = x
	h.moved(i)
	h.Fix(i)
}

func (h *Heap[T]) moved(i int) {
	if h.OnMove != nil {
		h.OnMove(&h.items[i], i)
	}
}

// place stores x at index j of s and tells onMove, if any.
func place[T any](s []Item[T], j int, x Item[T], onMove func(*Item[T], int)) {
	s[j] = x
	if onMove != nil {
		onMove(&s[j], j)
	}
}

// The sifting loops work on a local copy of the slice and of OnMove: through h, every store
// into the items would make the compiler load both again (the store might change them).

// up moves the item at i towards the root while it is less than its parent, shifting the
// parents down into the hole rather than swapping (one write per level).
func (h *Heap[T]) up(i int) {
	s, onMove := h.items, h.OnMove
	x := s[i]
	j := i
	for j > 0 {
		p := (j - 1) / 2
		if !x.before(&s[p]) {
			break
		}
		place(s, j, s[p], onMove)
		j = p
	}
	if j != i {
		place(s, j, x, onMove)
	}
}

// down moves the item at i towards the leaves while a child is less, shifting the lesser child
// up into the hole; it reports whether the item moved.
func (h *Heap[T]) down(i int) bool {
	s, onMove := h.items, h.OnMove
	n := len(s)
	x := s[i]
	j := i
	for {
		l := 2*j + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && s[r].before(&s[l]) {
			c = r
		}
		if !s[c].before(&x) {
			break
		}
		place(s, j, s[c], onMove)
		j = c
	}
	if j != i {
		place(s, j, x, onMove)
	}
	return j != i
}

// sinkTop puts x, the former last item, in place of the root that Pop took. The last item
// nearly always belongs near the leaves, so instead of comparing it on the way down (two
// comparisons per level) the hole goes down along the lesser children to a leaf (one per
// level) and x then moves up from there, usually not at all (Floyd's bottom-up heap).
func (h *Heap[T]) sinkTop(x Item[T]) {
	s, onMove := h.items, h.OnMove
	n := len(s)
	j := 0
	for {
		l := 2*j + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && s[r].before(&s[l]) {
			c = r
		}
		place(s, j, s[c], onMove)
		j = c
	}
	place(s, j, x, onMove)
	h.up(j)
}
