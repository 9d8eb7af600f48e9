// Package heapq is a typed binary min-heap.
//
// Why not container/heap: its Push and Pop take and return any, so every push of a struct value
// boxes it (an allocation), and every comparison goes through an interface; the simulators push
// millions of small events. Heap[T] keeps its items in a []T, so a push allocates only when the
// slice grows, and its Less is a plain function. An optional OnMove callback tells the caller
// where each item lands, which is what an indexed heap (decrease-key, removal of an item by its
// identity) needs; without it the heap keeps no positions at all.
package heapq

// Heap is a binary min-heap of T. Its zero value is not usable: Less must be set (see New).
// Equal items may leave in any order; a caller that needs a deterministic order makes Less a
// total order (break ties on an ID).
type Heap[T any] struct {
	// Less reports whether a must leave the heap before b.
	Less func(a, b T) bool
	// OnMove, if not nil, is called with an item and its new index every time the item is
	// placed (pushed, moved, or moved to the end of the slice before Pop or Remove returns it),
	// so that the caller can find it again for Fix or Remove.
	OnMove func(x T, i int)
	items  []T
}

// New returns an empty heap ordered by less.
func New[T any](less func(a, b T) bool) Heap[T] {
	return Heap[T]{Less: less}
}

// Len is the number of items.
func (h *Heap[T]) Len() int { return len(h.items) }

// Items is the heap's backing slice, in heap order; the caller must not reorder or resize it.
func (h *Heap[T]) Items() []T { return h.items }

// Top is the least item; the heap must not be empty.
func (h *Heap[T]) Top() T { return h.items[0] }

// Clear empties the heap, keeping its storage.
func (h *Heap[T]) Clear() { h.items = h.items[:0] }

// Append adds x at the end without ordering it: a caller refilling the heap appends all its items
// and then orders them once with Heapify, in O(n) rather than O(n log n) for as many Pushes.
func (h *Heap[T]) Append(x T) { h.items = append(h.items, x) }

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
func (h *Heap[T]) Push(x T) {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	h.moved(i)
	h.up(i)
}

// Pop removes and returns the least item; the heap must not be empty.
func (h *Heap[T]) Pop() T {
	return h.Remove(0)
}

// Remove removes and returns the item at index i.
func (h *Heap[T]) Remove(i int) T {
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	x := h.items[last]
	var zero T
	h.items[last] = zero // let the garbage collector have what x points to
	h.items = h.items[:last]
	if i < last {
		h.down(i)
		h.up(i)
	}
	return x
}

// Fix restores the order after the item at index i changed its key.
func (h *Heap[T]) Fix(i int) {
	h.down(i)
	h.up(i)
}

// Set replaces the item at index i by x and restores the order.
func (h *Heap[T]) Set(i int, x T) {
	h.items[i] = x
	h.moved(i)
	h.Fix(i)
}

func (h *Heap[T]) moved(i int) {
	if h.OnMove != nil {
		h.OnMove(h.items[i], i)
	}
}

func (h *Heap[T]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	if h.OnMove != nil {
		h.OnMove(h.items[i], i)
		h.OnMove(h.items[j], j)
	}
}

func (h *Heap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.Less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *Heap[T]) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && h.Less(h.items[r], h.items[l]) {
			j = r
		}
		if !h.Less(h.items[j], h.items[i]) {
			return
		}
		h.swap(i, j)
		i = j
	}
}
