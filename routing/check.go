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
	if opt.MaxPairs <= 0 {
		opt.MaxPairs = 5
	}
	c := newChecker(t, opt)
	rep := &Report{Engine: t.engine, Switches: len(t.switches), Endpoints: len(t.dests), VCs: t.nvc,
		UpDownChecked: opt.UpDown, Healthy: len(c.healthy)}
	load, cdg := c.followAll(rep)
	c.addInjection(load)
	rep.CyclicVCs = cyclicVCs(t, c.portCh, c.base, cdg)
	rep.DeadlockFree = len(rep.CyclicVCs) == 0
	rep.Valid = rep.Unreachable == 0 && rep.Loops == 0 && rep.DeadlockFree && (!opt.UpDown || rep.UpDownViolations == 0)
	if opt.Congestion {
		rep.AllToAll = allToAll(load)
		rep.Shift = shifts(t, c.healthy, c.portCh, opt)
	}
	return rep
}

// checker holds what Check derives once from the tables, for every destination's walk.
type checker struct {
	t   *Tables
	g   *topology.Graph
	opt CheckOptions
	// healthy are the healthy endpoints (destination indices); own counts them per switch and
	// first holds up to two of them per switch, to name pairs.
	healthy []int32
	own     []int64
	first   [][2]int32
	// portCh and portNext give, per switch and port, the out channel and the next switch (-1: an
	// endpoint).
	portCh   [][]topology.Channel
	portNext [][]int32
	// base is the first bit of each channel's dependencies in the channel-dependency bitset: for a
	// switch-to-switch channel c and VC vin, one bit per (out port of the switch c enters, VC out).
	base  []int64
	words int64
}

func newChecker(t *Tables, opt CheckOptions) *checker {
	c := &checker{t: t, g: t.g, opt: opt}
	c.findHealthy()
	c.mapPorts()
	c.layoutDependencies()
	return c
}

// findHealthy lists the healthy endpoints and counts them per leaf switch.
func (c *checker) findHealthy() {
	t := c.t
	S := len(t.switches)
	c.own = make([]int64, S)
	c.first = make([][2]int32, S)
	for s := range c.first {
		c.first[s] = [2]int32{-1, -1}
	}
	for d := 0; d < len(t.dests); d++ {
		if !t.Healthy(d) {
			continue
		}
		c.healthy = append(c.healthy, int32(d))
		s := t.leafOf[d]
		c.own[s]++
		if c.first[s][0] < 0 {
			c.first[s][0] = int32(d)
		} else if c.first[s][1] < 0 {
			c.first[s][1] = int32(d)
		}
	}
}

// mapPorts fills portCh and portNext.
func (c *checker) mapPorts() {
	t, g := c.t, c.g
	S := len(t.switches)
	c.portCh = make([][]topology.Channel, S)
	c.portNext = make([][]int32, S)
	for s, v := range t.switches {
		ls := g.Links(v)
		c.portCh[s] = make([]topology.Channel, len(ls))
		c.portNext[s] = make([]int32, len(ls))
		for p, l := range ls {
			c.portCh[s][p] = topology.ChannelOf(l, g.Link(l).A != v)
			c.portNext[s][p] = t.swIdx[g.Other(l, v)]
		}
	}
}

// layoutDependencies fills base and words.
func (c *checker) layoutDependencies() {
	t, g := c.t, c.g
	V := t.nvc
	nch := g.NumChannels()
	c.base = make([]int64, nch+1)
	for ch := 0; ch < nch; ch++ {
		c.base[ch+1] = c.base[ch]
		from, to := g.ChannelFrom(topology.Channel(ch)), g.ChannelTo(topology.Channel(ch))
		if t.swIdx[from] >= 0 && t.swIdx[to] >= 0 {
			c.base[ch+1] += int64(V * len(g.Links(to)) * V)
		}
	}
	c.words = (c.base[nch] + 63) / 64
}

// checkAcc is one worker's share of Check's counts.
type checkAcc struct {
	load        []int64
	cdg         []uint64
	unreachable int64
	loops       int64
	updown      int64
	// pairs are unreachable pairs by destination position; the report lists those of the
	// first destinations, whichever worker found them, so that it is the same on every run.
	pairs []rankedPair
}

// checkScratch is the per-switch state of one destination's in-tree.
type checkScratch struct {
	next  []int32
	indeg []int32
	flow  []int64
	who   []int32
	desc  []bool
	done  []bool
	queue []int32
}

// Next-switch values beside switch indices: the port reaches the destination, or nothing.
const (
	toDest = -1
	dead   = -2
)

// followAll walks the in-tree of every healthy destination in parallel and merges the workers'
// counts into rep; it returns the all-to-all load per channel and the channel-dependency bitset.
func (c *checker) followAll(rep *Report) ([]int64, []uint64) {
	nch := c.g.NumChannels()
	S := len(c.t.switches)
	var mu sync.Mutex
	var accs []*checkAcc
	pool := sync.Pool{New: func() any {
		a := &checkAcc{load: make([]int64, nch), cdg: make([]uint64, c.words)}
		mu.Lock()
		accs = append(accs, a)
		mu.Unlock()
		return a
	}}
	spool := sync.Pool{New: func() any {
		return &checkScratch{make([]int32, S), make([]int32, S), make([]int64, S), make([]int32, S), make([]bool, S), make([]bool, S), make([]int32, 0, S)}
	}}
	prog := newCounter(c.opt.Progress, len(c.healthy))
	parallel(len(c.healthy), c.opt.Workers, func(hi int) {
		defer prog.done()
		a := pool.Get().(*checkAcc)
		defer pool.Put(a)
		sc := spool.Get().(*checkScratch)
		defer spool.Put(sc)
		w := destWalk{checker: c, a: a, sc: sc, hi: hi, d: int(c.healthy[hi])}
		w.run()
	})
	return c.merge(rep, accs)
}

// merge sums the workers' counts into rep.
func (c *checker) merge(rep *Report, accs []*checkAcc) ([]int64, []uint64) {
	load := make([]int64, c.g.NumChannels())
	cdg := make([]uint64, c.words)
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
	for _, rp := range firstPairs(pairs, c.opt.MaxPairs) {
		rep.FirstUnreachable = append(rep.FirstUnreachable, rp.pair)
	}
	return load, cdg
}

// addInjection counts the injection channels, which carry one route to every other healthy
// endpoint.
func (c *checker) addInjection(load []int64) {
	t, g := c.t, c.g
	for _, d := range c.healthy {
		l := t.attLink[d]
		load[topology.ChannelOf(l, g.Link(l).A != t.dests[d])] += int64(len(c.healthy) - 1)
	}
}

// allToAll summarises the all-to-all load over every channel.
func allToAll(load []int64) *Congestion {
	var sum, mx int64
	for _, x := range load {
		sum += x
		mx = max(mx, x)
	}
	return &Congestion{Max: mx, Mean: float64(sum) / float64(max(len(load), 1))}
}

// destWalk follows the routes to one destination: they form an in-tree of the switches, whose
// flows (one per healthy source) are summed in topological order.
type destWalk struct {
	*checker
	a         *checkAcc
	sc        *checkScratch
	hi, d     int
	delivered int64
	npairs    int
}

func (w *destWalk) run() {
	w.plant()
	w.sumFlows()
	w.findLoops()
	a := w.a
	a.unreachable += int64(len(w.healthy)-1) - w.delivered
	if len(a.pairs) > 2*w.opt.MaxPairs {
		a.pairs = firstPairs(a.pairs, w.opt.MaxPairs)
	}
}

// plant sets every switch's next hop towards the destination, its in-degree in the in-tree and
// its own sources' flow.
func (w *destWalk) plant() {
	t, sc, d := w.t, w.sc, w.d
	S := len(t.switches)
	dv := t.dests[d]
	for s := 0; s < S; s++ {
		sc.indeg[s] = 0
	}
	for s := 0; s < S; s++ {
		p := t.Port(s, d)
		nx := int32(dead)
		if p != NoPort && p <= len(w.portNext[s]) {
			if n := w.portNext[s][p-1]; n >= 0 {
				nx = n
				sc.indeg[n]++
			} else if w.g.ChannelTo(w.portCh[s][p-1]) == dv {
				nx = toDest
			}
		}
		sc.next[s] = nx
		sc.flow[s] = w.own[s]
		sc.who[s] = w.first[s][0]
		if int(t.leafOf[d]) == s {
			sc.flow[s]--
			if w.first[s][0] == int32(d) {
				sc.who[s] = w.first[s][1]
			}
		}
		sc.desc[s] = false
		sc.done[s] = false
	}
}

// sumFlows passes each switch's flow on to its next hop in topological order (Kahn's), counting
// channel loads, deliveries, up*/down* violations and channel dependencies.
func (w *destWalk) sumFlows() {
	sc := w.sc
	q := sc.queue[:0]
	for s := range sc.indeg {
		if sc.indeg[s] == 0 {
			q = append(q, int32(s))
		}
	}
	for i := 0; i < len(q); i++ {
		u := q[i]
		sc.done[u] = true
		nx := sc.next[u]
		if sc.flow[u] > 0 {
			w.forward(u)
		}
		if nx >= 0 {
			sc.indeg[nx]--
			if sc.indeg[nx] == 0 {
				q = append(q, nx)
			}
		}
	}
	sc.queue = q
}

// forward moves switch u's flow one hop.
func (w *destWalk) forward(u int32) {
	t, sc, a, d := w.t, w.sc, w.a, w.d
	f, nx := sc.flow[u], sc.next[u]
	switch nx {
	case dead:
		w.addPair(sc.who[u])
		return
	case toDest:
		a.load[w.portCh[u][t.Port(int(u), d)-1]] += f
		w.delivered += f
		return
	}
	c := w.portCh[u][t.Port(int(u), d)-1]
	a.load[c] += f
	sc.flow[nx] += f
	if sc.who[nx] < 0 {
		sc.who[nx] = sc.who[u]
	}
	lu, ln := w.g.Level(t.switches[u]), w.g.Level(t.switches[nx])
	if w.opt.UpDown && (ln == lu || (sc.desc[u] && ln > lu)) {
		a.updown++
	}
	if ln < lu || sc.desc[u] {
		sc.desc[nx] = true
	}
	if sc.next[nx] >= 0 {
		V := t.nvc
		pn := t.Port(int(nx), d)
		bit := w.base[c] + int64((t.VC(int(u), d)*len(w.portCh[nx])+(pn-1))*V+t.VC(int(nx), d))
		a.cdg[bit>>6] |= 1 << (bit & 63)
	}
}

// findLoops counts the destination as looping when flow is left on switches the topological
// order never reached (they are on or behind a forwarding cycle).
func (w *destWalk) findLoops() {
	sc := w.sc
	loop := false
	for s := range sc.done {
		if !sc.done[s] && sc.flow[s] > 0 {
			loop = true
			if sc.who[s] >= 0 {
				w.addPair(sc.who[s])
			}
		}
	}
	if loop {
		w.a.loops++
	}
}

// addPair records the unreachable pair (src, destination), up to MaxPairs per destination.
func (w *destWalk) addPair(src int32) {
	if w.npairs < w.opt.MaxPairs {
		t := w.t
		w.a.pairs = append(w.a.pairs, rankedPair{int32(w.hi), Pair{w.g.VertexName(t.dests[src]), w.g.VertexName(t.dests[w.d])}})
		w.npairs++
	}
}

// cyclicVCs finds cycles in the channel-dependency graph and returns the VCs they run on.
func cyclicVCs(t *Tables, portCh [][]topology.Channel, base []int64, cdg []uint64) []int {
	V := t.nvc
	nch := t.g.NumChannels()
	// Nodes: (channel, vc) for switch-to-switch channels.
	s := &cdgSearch{t: t, portCh: portCh, base: base, cdg: cdg, color: make([]uint8, nch*V), cyc: map[int]bool{}}
	for start := 0; start < nch*V; start++ {
		c := start / V
		if base[c+1] == base[c] || s.color[start] != 0 {
			continue
		}
		s.dfs(start)
	}
	var out []int
	for v := 0; v < V; v++ {
		if s.cyc[v] {
			out = append(out, v)
		}
	}
	return out
}

// cdgSearch is a depth-first search of the channel-dependency graph (Dally and Seitz: routing is
// deadlock-free when the graph is acyclic) whose nodes are (channel, VC) pairs.
type cdgSearch struct {
	t      *Tables
	portCh [][]topology.Channel
	base   []int64
	cdg    []uint64
	color  []uint8 // 0 white, 1 grey, 2 black
	cyc    map[int]bool
	stack  []cdgFrame
}

type cdgFrame struct {
	node int
	next int // next edge bit to look at
}

// edges returns the bit range of node's dependencies and the switch its channel enters.
func (s *cdgSearch) edges(node int) (lo, hi int64, to int32) {
	V := s.t.nvc
	c, vin := node/V, node%V
	to = s.t.swIdx[s.t.g.ChannelTo(topology.Channel(c))]
	deg := len(s.portCh[to])
	lo = s.base[c] + int64(vin*deg*V)
	return lo, lo + int64(deg*V), to
}

// dfs searches from start, marking the VC of every edge back to a grey node as cyclic.
func (s *cdgSearch) dfs(start int) {
	s.stack = append(s.stack[:0], cdgFrame{start, 0})
	s.color[start] = 1
	for len(s.stack) > 0 {
		top := &s.stack[len(s.stack)-1]
		if !s.descend(top) {
			s.color[top.node] = 2
			s.stack = s.stack[:len(s.stack)-1]
		}
	}
}

// descend follows top's next unvisited dependency, pushing its node; it reports false when top
// has none left.
func (s *cdgSearch) descend(top *cdgFrame) bool {
	V := s.t.nvc
	lo, hi, to := s.edges(top.node)
	for b := lo + int64(top.next); b < hi; b++ {
		top.next++
		if s.cdg[b>>6]&(1<<(b&63)) == 0 {
			continue
		}
		k := int(b - lo)
		p, vout := k/V, k%V
		n := int(s.portCh[to][p])*V + vout
		switch s.color[n] {
		case 1:
			s.cyc[vout] = true
		case 0:
			s.color[n] = 1
			s.stack = append(s.stack, cdgFrame{n, 0})
			return true
		}
	}
	return false
}

// shifts measures the shift permutations.
func shifts(t *Tables, healthy []int32, portCh [][]topology.Channel, opt CheckOptions) *ShiftCongestion {
	h := len(healthy)
	if h < 2 {
		return &ShiftCongestion{}
	}
	ks := shiftDistances(h, opt.MaxShifts)
	nch := t.g.NumChannels()
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
		maxes[i], sums[i] = shiftLoad(t, healthy, portCh, ks[i], *cp)
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

// shiftDistances returns the shifts k (i -> i+k) measured among h endpoints: every one, or
// maxShifts (1024 beyond 2048 endpoints when 0) evenly spaced.
func shiftDistances(h, maxShifts int) []int {
	var ks []int
	switch {
	case maxShifts > 0 && maxShifts < h-1:
		for i := 0; i < maxShifts; i++ {
			ks = append(ks, 1+i*(h-1)/maxShifts)
		}
	case maxShifts == 0 && h > 2048:
		for i := 0; i < 1024; i++ {
			ks = append(ks, 1+i*(h-1)/1024)
		}
	default:
		for k := 1; k < h; k++ {
			ks = append(ks, k)
		}
	}
	return ks
}

// shiftLoad follows the routes of shift k hop by hop, counting routes per channel in cnt (zero
// on entry and on return), and returns the largest count and the sum.
func shiftLoad(t *Tables, healthy []int32, portCh [][]topology.Channel, k int, cnt []int32) (mx, sum int64) {
	g := t.g
	h := len(healthy)
	var touched []topology.Channel
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
			sw := t.swIdx[g.ChannelTo(c)]
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
	return mx, sum
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
