package heapq

import (
	"cmp"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// pop is the op that pops in the tables below; every other value is pushed.
const pop = -1

func intHeap() Heap[int] { return New(func(a, b int) bool { return a < b }) }

func TestPushPop(t *testing.T) {
	tests := []struct {
		name string
		ops  []int
		want []int // popped, then what a final drain pops
	}{
		{"empty", nil, nil},
		{"one", []int{7, pop}, []int{7}},
		{"ascending", []int{1, 2, 3, 4}, []int{1, 2, 3, 4}},
		{"descending", []int{4, 3, 2, 1}, []int{1, 2, 3, 4}},
		{"duplicates", []int{2, 1, 2, 1, 2}, []int{1, 1, 2, 2, 2}},
		{"interleaved", []int{5, 3, pop, 4, 1, pop, 9, pop, pop}, []int{3, 1, 4, 5, 9}},
		{"refill after empty", []int{2, pop, 1, 3, pop}, []int{2, 1, 3}},
		{"odd sizes", []int{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 10}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := intHeap()
			var got []int
			for _, op := range tc.ops {
				if op == pop {
					got = append(got, h.Pop())
				} else {
					h.Push(op)
				}
			}
			for h.Len() > 0 {
				got = append(got, h.Pop())
			}
			if d := gocmp.Diff(tc.want, got); d != "" {
				t.Errorf("popped (-want +got):\n%s", d)
			}
		})
	}
}

func TestHeapify(t *testing.T) {
	tests := []struct {
		name string
		in   []int
	}{
		{"empty", nil},
		{"one", []int{3}},
		{"two reversed", []int{2, 1}},
		{"many", []int{5, 9, 1, 7, 3, 3, 8, 0, 6, 2, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := intHeap()
			h.Push(100) // Clear must drop it
			h.Clear()
			for _, v := range tc.in {
				h.Append(v)
			}
			h.Heapify()
			var got []int
			for h.Len() > 0 {
				if top := h.Top(); top != h.Items()[0] {
					t.Fatalf("Top %d is not Items()[0] %d", top, h.Items()[0])
				}
				got = append(got, h.Pop())
			}
			want := slices.Sorted(slices.Values(tc.in))
			if d := gocmp.Diff(want, got); d != "" {
				t.Errorf("popped (-want +got):\n%s", d)
			}
		})
	}
}

// indexed is a heap of IDs keyed by an outside table, positions kept by OnMove, as an indexed
// heap with decrease-key uses it.
type indexed struct {
	key []int
	pos []int // -1: not in the heap
	h   Heap[int]
}

func newIndexed(n int) *indexed {
	x := &indexed{key: make([]int, n), pos: make([]int, n)}
	for i := range x.pos {
		x.pos[i] = -1
	}
	x.h = New(func(a, b int) bool { return x.key[a] < x.key[b] || (x.key[a] == x.key[b] && a < b) })
	x.h.OnMove = func(id, i int) { x.pos[id] = i }
	return x
}

// set gives id the key k, adding it if absent.
func (x *indexed) set(id, k int) {
	x.key[id] = k
	if x.pos[id] < 0 {
		x.h.Push(id)
		return
	}
	x.h.Fix(x.pos[id])
}

func (x *indexed) remove(id int) {
	if i := x.pos[id]; i >= 0 {
		if got := x.h.Remove(i); got != id {
			panic("removed the wrong item")
		}
		x.pos[id] = -1
	}
}

func (x *indexed) pop() int {
	id := x.h.Pop()
	x.pos[id] = -1
	return id
}

// check verifies that every position is where its item is and that the heap property holds.
func (x *indexed) check(t *testing.T) {
	t.Helper()
	items := x.h.Items()
	for i, id := range items {
		if x.pos[id] != i {
			t.Fatalf("item %d at %d, pos says %d", id, i, x.pos[id])
		}
		if i > 0 && x.h.Less(id, items[(i-1)/2]) {
			t.Fatalf("item %d at %d is less than its parent", id, i)
		}
	}
	n := 0
	for _, p := range x.pos {
		if p >= 0 {
			n++
		}
	}
	if n != len(items) {
		t.Fatalf("%d positions for %d items", n, len(items))
	}
}

func TestIndexed(t *testing.T) {
	type op struct {
		what   string // set, remove, pop
		id, k  int
		popped int
	}
	tests := []struct {
		name string
		ops  []op
	}{
		{"decrease key", []op{{what: "set", id: 0, k: 5}, {what: "set", id: 1, k: 3}, {what: "set", id: 2, k: 4},
			{what: "set", id: 0, k: 1}, {what: "pop", popped: 0}, {what: "pop", popped: 1}, {what: "pop", popped: 2}}},
		{"increase key", []op{{what: "set", id: 0, k: 1}, {what: "set", id: 1, k: 2}, {what: "set", id: 2, k: 3},
			{what: "set", id: 0, k: 9}, {what: "pop", popped: 1}, {what: "pop", popped: 2}, {what: "pop", popped: 0}}},
		{"ties by id", []op{{what: "set", id: 3, k: 1}, {what: "set", id: 1, k: 1}, {what: "set", id: 2, k: 1},
			{what: "pop", popped: 1}, {what: "pop", popped: 2}, {what: "pop", popped: 3}}},
		{"remove middle and last", []op{{what: "set", id: 0, k: 1}, {what: "set", id: 1, k: 2}, {what: "set", id: 2, k: 3},
			{what: "set", id: 3, k: 4}, {what: "remove", id: 1}, {what: "remove", id: 3}, {what: "pop", popped: 0},
			{what: "pop", popped: 2}}},
		{"remove top then re-add", []op{{what: "set", id: 0, k: 1}, {what: "set", id: 1, k: 2}, {what: "remove", id: 0},
			{what: "set", id: 0, k: 3}, {what: "pop", popped: 1}, {what: "pop", popped: 0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := newIndexed(4)
			for i, o := range tc.ops {
				switch o.what {
				case "set":
					x.set(o.id, o.k)
				case "remove":
					x.remove(o.id)
				case "pop":
					if got := x.pop(); got != o.popped {
						t.Fatalf("op %d: popped %d, want %d", i, got, o.popped)
					}
				}
				x.check(t)
			}
		})
	}
}

type event struct {
	t   float64
	seq int
	p   *int
}

func TestPushDoesNotAllocate(t *testing.T) {
	h := New(func(a, b event) bool { return a.t < b.t || (a.t == b.t && a.seq < b.seq) })
	for i := range 64 {
		h.Push(event{t: float64(i)})
	}
	for h.Len() > 0 {
		h.Pop()
	}
	v := 1
	allocs := testing.AllocsPerRun(100, func() {
		for i := range 64 {
			h.Push(event{t: float64(64 - i), seq: i, p: &v})
		}
		for h.Len() > 0 {
			h.Pop()
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per 64 pushes and pops into a grown heap, want 0", allocs)
	}
}

// FuzzHeap runs a sequence of operations on an indexed heap and checks every result against a
// sorted list of the same items.
func FuzzHeap(f *testing.F) {
	f.Add([]byte{5, 3, 200, 4, 1, 210, 9, 220, 255})
	f.Add([]byte{1, 1, 1, 250, 250, 250})
	f.Add([]byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 230, 231, 232, 233})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const ids = 16
		x := newIndexed(ids)
		type item struct{ k, id int }
		var ref []item // sorted by (key, id)
		sortRef := func() {
			slices.SortFunc(ref, func(a, b item) int { return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.id, b.id)) })
		}
		drop := func(id int) {
			ref = slices.DeleteFunc(ref, func(it item) bool { return it.id == id })
		}
		for i, b := range ops {
			id := i % ids
			switch {
			case b < 200: // set id's key (push, decrease or increase)
				x.set(id, int(b))
				drop(id)
				ref = append(ref, item{int(b), id})
				sortRef()
			case b < 240: // remove an item by its ID
				id = int(b-200) % ids
				x.remove(id)
				drop(id)
			default: // pop
				if len(ref) == 0 {
					if x.h.Len() != 0 {
						t.Fatalf("op %d: heap holds %d items, want none", i, x.h.Len())
					}
					continue
				}
				if got := x.pop(); got != ref[0].id {
					t.Fatalf("op %d: popped %d, want %d (key %d)", i, got, ref[0].id, ref[0].k)
				}
				ref = ref[1:]
			}
			x.check(t)
			if x.h.Len() != len(ref) {
				t.Fatalf("op %d: %d items, want %d", i, x.h.Len(), len(ref))
			}
		}
		for _, want := range ref {
			if got := x.pop(); got != want.id {
				t.Fatalf("drain: popped %d, want %d", got, want.id)
			}
		}
	})
}
