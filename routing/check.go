package routing

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/bootfabric/bootfabric/topology"
)

// CheckOptions select what Check verifies and measures.
type CheckOptions struct {
	// UpDown checks that no route goes up after going down (fat-tree engines).
	UpDown bool
	// Congestion measures routes per channel for all-to-all and shift permutations.
	Congestion bool
	// MaxShifts bounds the shift permutations measured: 0 means all of them when there are at most
	// 2048 healthy endpoints, else 1024 evenly spaced shifts.
	MaxShifts int
	// MaxPairs bounds the unreachable pairs listed (default 5).
	MaxPairs int
	// Workers bounds parallelism; 0 means GOMAXPROCS.
	Workers int
	// Progress, when set, is told how many destinations are checked of all, then, with
	// Congestion, how many shifts are measured of all (the total changes between the two), every
	// few hundredth of the work and possibly from several goroutines at once: the paper's machine
	// takes seconds to check.
	Progress func(done, total int)
}

// Pair is a source and a destination, by name.
type Pair struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
}

// Congestion is the number of routes per channel (one direction of a link) of a traffic pattern.
type Congestion struct {
	Max  int64   `json:"max"`
	Mean float64 `json:"mean"`
}

// ShiftCongestion summarises the shift permutations i -> i+k (mod healthy endpoints).
type ShiftCongestion struct {
	Shifts int `json:"shifts"`
	// Max is the largest number of routes on one channel in any shift.
	Max int64 `json:"max"`
	// MeanMax is the mean over shifts of each shift's largest channel load.
	MeanMax float64 `json:"mean_max"`
	// Mean is the mean channel load over shifts and channels.
	Mean float64 `json:"mean"`
}

// Report is the outcome of Check.
type Report struct {
	Engine    string `json:"engine"`
	Switches  int    `json:"switches"`
	Endpoints int    `json:"endpoints"`
	Healthy   int    `json:"healthy_endpoints"`
	// Valid: every healthy pair is routed, without loops, in up*/down* order when checked, and
	// without a cycle in the channel-dependency graph.
	Valid            bool   `json:"valid"`
	Unreachable      int64  `json:"unreachable_pairs"`
	FirstUnreachable []Pair `json:"first_unreachable,omitempty"`
	// Loops counts destinations for which some switch forwards in a cycle.
	Loops            int64            `json:"loops"`
	UpDownChecked    bool             `json:"updown_checked"`
	UpDownViolations int64            `json:"updown_violations"`
	VCs              int              `json:"vcs"`
	DeadlockFree     bool             `json:"deadlock_free"`
	CyclicVCs        []int            `json:"cyclic_vcs,omitempty"`
	AllToAll         *Congestion      `json:"all_to_all,omitempty"`
	Shift            *ShiftCongestion `json:"shift,omitempty"`
}

// Check verifies tables and measures congestion. Work is O(destinations x switches) for validity,
// deadlock and all-to-all (routes to one destination form an in-tree whose flows are summed in
// topological order), and O(shifts x endpoints x hops) for shift permutations.
func Check(t *Tables, opt CheckOptions) *Report {
	g := t.g
	if opt.MaxPairs <= 0 {
		opt.MaxPairs = 5
	}
	S, D := len(t.switches), len(t.dests)
	rep := &Report{Engine: t.engine, Switches: S, Endpoints: D, VCs: t.nvc, UpDownChecked: opt.UpDown}
	V := t.nvc
	// Per switch: healthy sources attached, and up to two of them to name pairs.
	own := make([]int64, S)
	first := make([][2]int32, S)
	for s := range first {
		first[s] = [2]int32{-1, -1}
	}
	var healthy []int32
	for d := 0; d < D; d++ {
		if !t.Healthy(d) {
			continue
		}
		healthy = append(healthy, int32(d))
		s := t.leafOf[d]
		own[s]++
		if first[s][0] < 0 {
			first[s][0] = int32(d)
		} else if first[s][1] < 0 {
			first[s][1] = int32(d)
		}
	}
	rep.Healthy = len(healthy)
	// Per switch and port: the out channel and the next switch (-1: an endpoint).
	portCh := make([][]topology.Channel, S)
	portNext := make([][]int32, S)
	for s, v := range t.switches {
		ls := g.Links(v)
		portCh[s] = make([]topology.Channel, len(ls))
		portNext[s] = make([]int32, len(ls))
		for p, l := range ls {
			portCh[s][p] = topology.ChannelOf(l, g.Link(l).A != v)
			portNext[s][p] = t.swIdx[g.Other(l, v)]
		}
	}
	// Channel-dependency bitsets: for a switch-to-switch channel c and VC vin, one bit per (out
	// port of the switch c enters, VC out).
	nch := g.NumChannels()
	base := make([]int64, nch+1)
	for c := 0; c < nch; c++ {
		base[c+1] = base[c]
		from, to := g.ChannelFrom(topology.Channel(c)), g.ChannelTo(topology.Channel(c))
		if t.swIdx[from] >= 0 && t.swIdx[to] >= 0 {
			base[c+1] += int64(V * len(g.Links(to)) * V)
		}
	}
	words := (base[nch] + 63) / 64

	type acc struct {
		load        []int64
		cdg         []uint64
		unreachable int64
		loops       int64
		updown      int64
		// pairs are unreachable pairs by destination position; the report lists those of the
		// first destinations, whichever worker found them, so that it is the same on every run.
		pairs []rankedPair
	}
	var mu sync.Mutex
	var accs []*acc
	newAcc := func() *acc {
		a := &acc{load: make([]int64, nch), cdg: make([]uint64, words)}
		mu.Lock()
		accs = append(accs, a)
		mu.Unlock()
		return a
	}
	pool := sync.Pool{New: func() any { return newAcc() }}
	type scratch struct {
		next  []int32
		indeg []int32
		flow  []int64
		who   []int32
		desc  []bool
		done  []bool
		queue []int32
	}
	spool := sync.Pool{New: func() any {
		return &scratch{make([]int32, S), make([]int32, S), make([]int64, S), make([]int32, S), make([]bool, S), make([]bool, S), make([]int32, 0, S)}
	}}
	const toDest, dead = -1, -2
	prog := newCounter(opt.Progress, len(healthy))
	parallel(len(healthy), opt.Workers, func(hi int) {
		defer prog.done()
		a := pool.Get().(*acc)
		defer pool.Put(a)
		sc := spool.Get().(*scratch)
		defer spool.Put(sc)
		d := int(healthy[hi])
		dv := t.dests[d]
		for s := 0; s < S; s++ {
			sc.indeg[s] = 0
		}
		for s := 0; s < S; s++ {
			p := t.Port(s, d)
			nx := int32(dead)
			if p != NoPort && p <= len(portNext[s]) {
				if n := portNext[s][p-1]; n >= 0 {
					nx = n
					sc.indeg[n]++
				} else if g.ChannelTo(portCh[s][p-1]) == dv {
					nx = toDest
				}
			}
			sc.next[s] = nx
			sc.flow[s] = own[s]
			sc.who[s] = first[s][0]
			if int(t.leafOf[d]) == s {
				sc.flow[s]--
				if first[s][0] == int32(d) {
					sc.who[s] = first[s][1]
				}
			}
			sc.desc[s] = false
			sc.done[s] = false
		}
		q := sc.queue[:0]
		for s := 0; s < S; s++ {
			if sc.indeg[s] == 0 {
				q = append(q, int32(s))
			}
		}
		var delivered int64
		npairs := 0
		addPair := func(src int32) {
			if npairs < opt.MaxPairs {
				a.pairs = append(a.pairs, rankedPair{int32(hi), Pair{g.VertexName(t.dests[src]), g.VertexName(dv)}})
				npairs++
			}
		}
		for i := 0; i < len(q); i++ {
			u := q[i]
			sc.done[u] = true
			nx := sc.next[u]
			if f := sc.flow[u]; f > 0 {
				switch {
				case nx == dead:
					addPair(sc.who[u])
				case nx == toDest:
					a.load[portCh[u][t.Port(int(u), d)-1]] += f
					delivered += f
				default:
					pu := t.Port(int(u), d)
					c := portCh[u][pu-1]
					a.load[c] += f
					sc.flow[nx] += f
					if sc.who[nx] < 0 {
						sc.who[nx] = sc.who[u]
					}
					lu, ln := g.Level(t.switches[u]), g.Level(t.switches[nx])
					if opt.UpDown && (ln == lu || (sc.desc[u] && ln > lu)) {
						a.updown++
					}
					if ln < lu || sc.desc[u] {
						sc.desc[nx] = true
					}
					if nn := sc.next[nx]; nn >= 0 {
						pn := t.Port(int(nx), d)
						bit := base[c] + int64((t.VC(int(u), d)*len(portCh[nx])+(pn-1))*V+t.VC(int(nx), d))
						a.cdg[bit>>6] |= 1 << (bit & 63)
					}
				}
			}
			if nx >= 0 {
				sc.indeg[nx]--
				if sc.indeg[nx] == 0 {
					q = append(q, nx)
				}
			}
		}
		sc.queue = q
		loop := false
		for s := 0; s < S; s++ {
			if !sc.done[s] && sc.flow[s] > 0 {
				loop = true
				if sc.who[s] >= 0 {
					addPair(sc.who[s])
				}
			}
		}
		if loop {
			a.loops++
		}
		a.unreachable += int64(len(healthy)-1) - delivered
		if len(a.pairs) > 2*opt.MaxPairs {
			a.pairs = firstPairs(a.pairs, opt.MaxPairs)
		}
	})
	load := make([]int64, nch)
	cdg := make([]uint64, words)
	var pairs []rankedPair
	for _, a := range accs {
		for i, x := range a.load {
			load[i] += x
		}
		for i, x := range a.cdg {
			cdg[i] |= x
		}
		rep.Unreachable += a.unreachable
		rep.Loops += a.loops
		rep.UpDownViolations += a.updown
		pairs = append(pairs, a.pairs...)
	}
	for _, rp := range firstPairs(pairs, opt.MaxPairs) {
		rep.FirstUnreachable = append(rep.FirstUnreachable, rp.pair)
	}
	// Injection channels carry one route to every other healthy endpoint.
	for _, d := range healthy {
		l := t.attLink[d]
		load[topology.ChannelOf(l, g.Link(l).A != t.dests[d])] += int64(len(healthy) - 1)
	}
	rep.CyclicVCs = cyclicVCs(t, portCh, base, cdg)
	rep.DeadlockFree = len(rep.CyclicVCs) == 0
	rep.Valid = rep.Unreachable == 0 && rep.Loops == 0 && rep.DeadlockFree && (!opt.UpDown || rep.UpDownViolations == 0)
	if opt.Congestion {
		live := 0
		var sum, mx int64
		for c := 0; c < nch; c++ {
			live++
			sum += load[c]
			mx = max(mx, load[c])
		}
		rep.AllToAll = &Congestion{Max: mx, Mean: float64(sum) / float64(max(live, 1))}
		rep.Shift = shifts(t, healthy, portCh, opt)
	}
	return rep
}

// cyclicVCs finds cycles in the channel-dependency graph and returns the VCs they run on.
func cyclicVCs(t *Tables, portCh [][]topology.Channel, base []int64, cdg []uint64) []int {
	g := t.g
	V := t.nvc
	nch := g.NumChannels()
	// Nodes: (channel, vc) for switch-to-switch channels.
	color := make([]uint8, nch*V) // 0 white, 1 grey, 2 black
	type frame struct {
		node int
		next int // next edge bit to look at
	}
	edges := func(node int) (lo, hi int64, to int32) {
		c, vin := node/V, node%V
		to = t.swIdx[g.ChannelTo(topology.Channel(c))]
		deg := len(portCh[to])
		lo = base[c] + int64(vin*deg*V)
		return lo, lo + int64(deg*V), to
	}
	cyc := map[int]bool{}
	var stack []frame
	for start := 0; start < nch*V; start++ {
		c := start / V
		if base[c+1] == base[c] || color[start] != 0 {
			continue
		}
		stack = append(stack[:0], frame{start, 0})
		color[start] = 1
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			lo, hi, to := edges(top.node)
			found := false
			for b := lo + int64(top.next); b < hi; b++ {
				top.next++
				if cdg[b>>6]&(1<<(b&63)) == 0 {
					continue
				}
				k := int(b - lo)
				p, vout := k/V, k%V
				nc := int(portCh[to][p])
				n := nc*V + vout
				switch color[n] {
				case 1:
					cyc[vout] = true
				case 0:
					color[n] = 1
					stack = append(stack, frame{n, 0})
					found = true
				}
				if found {
					break
				}
			}
			if !found {
				color[top.node] = 2
				stack = stack[:len(stack)-1]
			}
		}
	}
	var out []int
	for v := 0; v < V; v++ {
		if cyc[v] {
			out = append(out, v)
		}
	}
	return out
}

// shifts measures the shift permutations.
func shifts(t *Tables, healthy []int32, portCh [][]topology.Channel, opt CheckOptions) *ShiftCongestion {
	g := t.g
	h := len(healthy)
	if h < 2 {
		return &ShiftCongestion{}
	}
	var ks []int
	switch {
	case opt.MaxShifts > 0 && opt.MaxShifts < h-1:
		for i := 0; i < opt.MaxShifts; i++ {
			ks = append(ks, 1+i*(h-1)/opt.MaxShifts)
		}
	case opt.MaxShifts == 0 && h > 2048:
		for i := 0; i < 1024; i++ {
			ks = append(ks, 1+i*(h-1)/1024)
		}
	default:
		for k := 1; k < h; k++ {
			ks = append(ks, k)
		}
	}
	nch := g.NumChannels()
	maxes := make([]int64, len(ks))
	sums := make([]int64, len(ks))
	// One counter slice per worker call, reused through the pool; a *[]int32 keeps Put from
	// allocating a slice header each time (SA6002).
	var pool = sync.Pool{New: func() any { c := make([]int32, nch); return &c }}
	prog := newCounter(opt.Progress, len(ks))
	parallel(len(ks), opt.Workers, func(i int) {
		defer prog.done()
		cp := pool.Get().(*[]int32)
		defer pool.Put(cp)
		cnt := *cp
		k := ks[i]
		var touched []topology.Channel
		var mx, sum int64
		for j := 0; j < h; j++ {
			s, d := int(healthy[j]), int(healthy[(j+k)%h])
			l := t.attLink[s]
			c := topology.ChannelOf(l, g.Link(l).A != t.dests[s])
			for hop := 0; hop <= len(t.switches)+1; hop++ {
				if cnt[c] == 0 {
					touched = append(touched, c)
				}
				cnt[c]++
				sum++
				mx = max(mx, int64(cnt[c]))
				to := g.ChannelTo(c)
				sw := t.swIdx[to]
				if sw < 0 {
					break
				}
				p := t.Port(int(sw), d)
				if p == NoPort {
					break
				}
				c = portCh[sw][p-1]
			}
		}
		for _, c := range touched {
			cnt[c] = 0
		}
		maxes[i], sums[i] = mx, sum
	})
	out := &ShiftCongestion{Shifts: len(ks)}
	var tm, ts int64
	for i := range ks {
		out.Max = max(out.Max, maxes[i])
		tm += maxes[i]
		ts += sums[i]
	}
	out.MeanMax = float64(tm) / float64(len(ks))
	out.Mean = float64(ts) / float64(len(ks)) / float64(max(nch, 1))
	return out
}

// String summarises a report on one line.
func (r *Report) String() string {
	return fmt.Sprintf("%s: %d switches, %d/%d healthy endpoints, valid=%v unreachable=%d loops=%d updown_violations=%d vcs=%d deadlock_free=%v",
		r.Engine, r.Switches, r.Healthy, r.Endpoints, r.Valid, r.Unreachable, r.Loops, r.UpDownViolations, r.VCs, r.DeadlockFree)
}

// rankedPair is an unreachable pair found while checking the routes to the hi-th healthy
// destination.
type rankedPair struct {
	hi   int32
	pair Pair
}

// firstPairs returns the first n pairs by destination, in the order found for each destination
// (one destination is checked by one worker, in a fixed order).
func firstPairs(ps []rankedPair, n int) []rankedPair {
	slices.SortStableFunc(ps, func(a, b rankedPair) int { return cmp.Compare(a.hi, b.hi) })
	return ps[:min(n, len(ps))]
}
