package fabricsim

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/bootfabric/bootfabric/internal/heapq"
)

// maxMinInput is one weighted max-min problem: classes of identical flows, each class k holding
// weight[k] flows that cross the channels paths[k] and may each carry at most limit[k] (+Inf: no
// limit). Channel c carries at most capacity[c] in total.
type maxMinInput struct {
	capacity []float64
	weight   []float64
	limit    []float64
	paths    [][]int32
}

// maxMin solves weighted max-min problems by progressive filling, reusing its buffers. All
// unfrozen flows rise together; a channel saturates when its remaining capacity divided by the
// weight of its unfrozen flows is reached, which freezes them; a class reaching its limit freezes
// alone. Channel levels only grow as classes freeze, so a heap with lazy deletion finds the next
// saturation: the work is O(sum of path lengths x log channels) per problem.
type maxMin struct {
	// rate[k] is the per-flow rate of class k; bound[k] the channel that froze it, or -1 for its
	// limit.
	rate  []float64
	bound []int32

	left    []float64 // remaining capacity by channel
	wsum    []float64 // unfrozen weight by channel
	cnt     []int32   // classes by channel, then fill position
	off     []int32   // start of the channel's classes in users
	ver     []uint32  // heap entries with an older version are stale
	users   []int32
	touched []int32
	order   []int32 // classes with a finite limit, by limit
	frozen  []bool
	// heap holds the channels by saturation level, then channel; the value is the channel's
	// version when pushed (an entry with an older one is stale).
	heap heapq.Heap[uint32]
}

func (m *maxMin) grow(channels, classes int) {
	if len(m.left) < channels {
		m.left = make([]float64, channels)
		m.wsum = make([]float64, channels)
		m.cnt = make([]int32, channels)
		m.off = make([]int32, channels)
		m.ver = make([]uint32, channels)
	}
	if cap(m.rate) < classes {
		m.rate = make([]float64, classes)
		m.bound = make([]int32, classes)
		m.frozen = make([]bool, classes)
	}
	m.rate, m.bound, m.frozen = m.rate[:classes], m.bound[:classes], m.frozen[:classes]
}

// solve fills m.rate and m.bound for in.
func (m *maxMin) solve(in *maxMinInput) error {
	m.grow(len(in.capacity), len(in.weight))
	defer m.reset()
	m.index(in)
	m.initLevels()
	return m.fill(in)
}

// index lists each channel's classes (users[off[c] : off[c]+cnt[c]]) and the classes with a
// limit, by limit, and resets the classes' outcome.
func (m *maxMin) index(in *maxMinInput) {
	k := len(in.weight)
	m.order = m.order[:0]
	total := 0
	for i := 0; i < k; i++ {
		m.frozen[i], m.rate[i], m.bound[i] = false, 0, -1
		for _, c := range in.paths[i] {
			if m.cnt[c] == 0 {
				m.touched = append(m.touched, c)
			}
			m.cnt[c]++
			m.wsum[c] += in.weight[i]
		}
		total += len(in.paths[i])
		if !math.IsInf(in.limit[i], 1) {
			m.order = append(m.order, int32(i))
		}
	}
	// Channels in increasing ID so that ties break the same way whatever the class order.
	slices.Sort(m.touched)
	if cap(m.users) < total {
		m.users = make([]int32, total)
	}
	m.users = m.users[:total]
	pos := int32(0)
	for _, c := range m.touched {
		m.off[c] = pos
		pos += m.cnt[c]
		m.cnt[c] = 0
		m.left[c] = in.capacity[c]
	}
	for i := 0; i < k; i++ {
		for _, c := range in.paths[i] {
			m.users[m.off[c]+m.cnt[c]] = int32(i)
			m.cnt[c]++
		}
	}
	slices.SortFunc(m.order, func(a, b int32) int {
		if r := cmp.Compare(in.limit[a], in.limit[b]); r != 0 {
			return r
		}
		return cmp.Compare(a, b)
	})
}

// initLevels fills the heap with every channel's saturation level.
func (m *maxMin) initLevels() {
	m.heap.Clear()
	for _, c := range m.touched {
		m.heap.Append(heapq.Item[uint32]{Key: m.left[c] / m.wsum[c], Tie: c, Value: m.ver[c]})
	}
	m.heap.Heapify()
}

// fill raises the rates of the unfrozen classes together; at each step the lower of the next
// limit and the next channel saturation freezes the classes it binds.
func (m *maxMin) fill(in *maxMinInput) error {
	next := 0 // into m.order
	for unfrozen := len(in.weight); unfrozen > 0; {
		for next < len(m.order) && m.frozen[m.order[next]] {
			next++
		}
		limit := math.Inf(1)
		if next < len(m.order) {
			limit = in.limit[m.order[next]]
		}
		level := m.nextLevel()
		switch {
		case math.IsInf(limit, 1) && math.IsInf(level, 1):
			return fmt.Errorf("max-min: %d flow classes have neither a channel nor a limit", unfrozen)
		case limit <= level:
			m.freeze(in, m.order[next], limit, -1)
			unfrozen--
		default:
			c := m.heap.Pop().Tie
			for _, i := range m.users[m.off[c] : m.off[c]+m.cnt[c]] {
				if !m.frozen[i] {
					m.freeze(in, i, max(level, 0), c)
					unfrozen--
				}
			}
		}
	}
	return nil
}

// nextLevel drops stale heap entries and returns the lowest saturation level (+Inf: none).
func (m *maxMin) nextLevel() float64 {
	for m.heap.Len() > 0 {
		top := m.heap.Top()
		if c := top.Tie; top.Value == m.ver[c] && m.wsum[c] > 0 {
			return top.Key
		}
		m.heap.Pop()
	}
	return math.Inf(1)
}

// freeze sets class i's rate r, bound by channel by (-1: its limit), and takes it out of its
// channels' remaining capacity and weight; their levels change, so they are pushed again.
func (m *maxMin) freeze(in *maxMinInput, i int32, r float64, by int32) {
	m.frozen[i], m.rate[i], m.bound[i] = true, r, by
	w := in.weight[i]
	for _, c := range in.paths[i] {
		m.left[c] -= w * r
		m.wsum[c] -= w
		m.ver[c]++
		if m.wsum[c] > 0 && c != by {
			m.heap.Push(heapq.Item[uint32]{Key: max(m.left[c], 0) / m.wsum[c], Tie: c, Value: m.ver[c]})
		}
	}
}

func (m *maxMin) reset() {
	for _, c := range m.touched {
		m.cnt[c], m.wsum[c], m.left[c] = 0, 0, 0
	}
	m.touched = m.touched[:0]
}
