package heapq

import (
	"cmp"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// pop is the op that pops in the tables below; every other value is pushed as a key.
const pop = -1

// keys pops everything and returns the keys in the order they left; Top must be the next.
func keys[T any](t *testing.T, h *Heap[T]) []float64 {
	t.Helper()
	var out []float64
	for h.Len() > 0 {
		top := *h.Top()
		if got := h.Pop(); got.Key != top.Key || got.Tie != top.Tie {
			t.Fatalf("Pop gave %+v, Top said %+v", got, top)
		}
		out = append(out, top.Key)
	}
	return out
}

func TestPushPop(t *testing.T) {
	tests := []struct {
		name string
		ops  []float64
		want []float64 // popped, then what a final drain pops
	}{
		{"empty", nil, nil},
		{"one", []float64{7, pop}, []float64{7}},
		{"ascending", []float64{1, 2, 3, 4}, []float64{1, 2, 3, 4}},
		{"descending", []float64{4, 3, 2, 1}, []float64{1, 2, 3, 4}},
		{"duplicates", []float64{2, 1, 2, 1, 2}, []float64{1, 1, 2, 2, 2}},
		{"interleaved", []float64{5, 3, pop, 4, 1, pop, 9, pop, pop}, []float64{3, 1, 4, 5, 9}},
		{"refill after empty", []float64{2, pop, 1, 3, pop}, []float64{2, 1, 3}},
		{"fractions and infinities", []float64{0.5, 1e300, -2.25, 0.25}, []float64{-2.25, 0.25, 0.5, 1e300}},
		{"odd sizes", []float64{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 10}, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h Heap[string]
			var got []float64
			for _, op := range tc.ops {
				if op == pop {
					got = append(got, h.Pop().Key)
				} else {
					h.Push(Item[string]{Key: op})
				}
			}
			got = append(got, keys(t, &h)...)
			if d := gocmp.Diff(tc.want, got); d != "" {
				t.Errorf("popped (-want +got):\n%s", d)
			}
		})
	}
}

// Equal keys leave by Tie, and the value travels with its item.
func TestTies(t *testing.T) {
	var h Heap[string]
	for _, it := range []Item[string]{{1, 3, "c"}, {0, 9, "first"}, {1, 1, "a"}, {1, 2, "b"}, {2, -5, "last"}} {
		h.Push(it)
	}
	var got []string
	for h.Len() > 0 {
		got = append(got, h.Pop().Value)
	}
	if d := gocmp.Diff([]string{"first", "a", "b", "c", "last"}, got); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
}

func TestHeapify(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
	}{
		{"empty", nil},
		{"one", []float64{3}},
		{"two reversed", []float64{2, 1}},
		{"many", []float64{5, 9, 1, 7, 3, 3, 8, 0, 6, 2, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h Heap[int]
			h.Push(Item[int]{Key: 100}) // Clear must drop it
			h.Clear()
			for _, v := range tc.in {
				h.Append(Item[int]{Key: v})
			}
			h.Heapify()
			want := slices.Sorted(slices.Values(tc.in))
			if d := gocmp.Diff(want, keys(t, &h)); d != "" {
				t.Errorf("popped (-want +got):\n%s", d)
			}
		})
	}
}

// indexed is a heap of IDs (their Tie) with keys that change, positions kept by OnMove, as an
// indexed heap with decrease-key uses it.
type indexed struct {
	pos []int // -1: not in the heap
	h   Heap[struct{}]
}

func newIndexed(n int) *indexed {
	x := &indexed{pos: make([]int, n)}
	for i := range x.pos {
		x.pos[i] = -1
	}
	x.h.OnMove = func(it *Item[struct{}], i int) { x.pos[it.Tie] = i }
	return x
}

// set gives id the key k, adding it if absent.
func (x *indexed) set(id int, k float64) {
	it := Item[struct{}]{Key: k, Tie: int32(id)}
	if x.pos[id] < 0 {
		x.h.Push(it)
		return
	}
	x.h.Set(x.pos[id], it)
}

func (x *indexed) remove(t *testing.T, id int) {
	t.Helper()
	if i := x.pos[id]; i >= 0 {
		if got := x.h.Remove(i); got.Tie != int32(id) {
			t.Fatalf("removed %d at %d, want %d", got.Tie, i, id)
		}
		x.pos[id] = -1
	}
}

func (x *indexed) pop() int {
	id := int(x.h.Pop().Tie)
	x.pos[id] = -1
	return id
}

// check verifies that every position is where its item is and that the heap property holds.
func (x *indexed) check(t *testing.T) {
	t.Helper()
	items := x.h.Items()
	for i := range items {
		if id := items[i].Tie; x.pos[id] != i {
			t.Fatalf("item %d at %d, pos says %d", id, i, x.pos[id])
		}
		if i > 0 && items[i].before(&items[(i-1)/2]) {
			t.Fatalf("item %d at %d is less than its parent", items[i].Tie, i)
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
		id     int
		k      float64
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
		{"remove a leaf that must move up", []op{{what: "set", id: 0, k: 1}, {what: "set", id: 1, k: 10}, {what: "set", id: 2, k: 2},
			{what: "set", id: 3, k: 11}, {what: "set", id: 4, k: 12}, {what: "set", id: 5, k: 3}, {what: "remove", id: 3},
			{what: "pop", popped: 0}, {what: "pop", popped: 2}, {what: "pop", popped: 5}, {what: "pop", popped: 1}, {what: "pop", popped: 4}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := newIndexed(6)
			for i, o := range tc.ops {
				switch o.what {
				case "set":
					x.set(o.id, o.k)
				case "remove":
					x.remove(t, o.id)
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

func TestPushDoesNotAllocate(t *testing.T) {
	type event struct {
		p *int
		n int
	}
	var h Heap[event]
	for i := range 64 {
		h.Push(Item[event]{Key: float64(i)})
	}
	h.Clear()
	v := 1
	allocs := testing.AllocsPerRun(100, func() {
		for i := range 64 {
			h.Push(Item[event]{Key: float64(64 - i), Tie: int32(i), Value: event{p: &v, n: i}})
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
		drop := func(id int) {
			ref = slices.DeleteFunc(ref, func(it item) bool { return it.id == id })
		}
		for i, b := range ops {
			id := i % ids
			switch {
			case b < 200: // set id's key (push, decrease or increase)
				x.set(id, float64(b))
				drop(id)
				ref = append(ref, item{int(b), id})
				slices.SortFunc(ref, func(a, b item) int { return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.id, b.id)) })
			case b < 240: // remove an item by its ID
				id = int(b-200) % ids
				x.remove(t, id)
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
