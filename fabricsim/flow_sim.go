package fabricsim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// eventTolerance merges completions closer than this fraction of the current time (1 ns per
// second simulated), so that classes which should finish together do not cost one event each.
const eventTolerance = 1e-9

// FlowBatchSeconds is the flow model's batch time for booting batch under a with one image of
// imageBytes, all nodes starting at 0, no DHCP or health time and no protocol or server caps: the
// number to put beside the analytic model's BootSeconds.
func FlowBatchSeconds(g *topology.Graph, r topology.Router, a *mapping.Assignment, batch []int, imageBytes float64) (float64, error) {
	cfg := FlowConfig{Files: []File{{Name: "image", Bytes: imageBytes, Protocol: Uncapped}}, MaxSamples: 2, TopLinks: -1}
	res, err := Simulate(context.Background(), g, r, a, batch, cfg)
	if err != nil {
		return 0, err
	}
	return res.BatchSeconds, nil
}

// flowClass is a set of flows that started together on the same shared channels with the same file
// and limit, and so behave identically. Class slots are recycled when their flows end, so memory
// follows the flows alive, not all the flows of the boot.
type flowClass struct {
	path, profile int32
	file          int32
	weight        float64
	limit         float64 // per-flow cap, Mb/s
	limitLabel    uint16
	group         int32
	target        float64 // the group's progress at which the flows finish
	gen           uint32  // bumped when the slot is recycled
	stamp         int32   // the event that made it
	members       []int32 // batch positions
	snap          []float64
}

type classKey struct {
	path, profile, file int32
	limit               uint64
}

// flowGroup gathers the active classes that max-min cannot tell apart (same shared channels, same
// limit): they always get the same rate, so the allocation runs over groups, whose number is
// bounded by the paths, not by how many start times there were. See flow_engine.go for how the
// group keeps its classes' progress.
type flowGroup struct {
	path       int32
	limit      float64
	limitLabel uint16
	weight     float64 // of the active classes
	rate       float64
	label      uint16
	// p0 is the progress per flow (Mb) at t0; since is when btime (seconds under each label)
	// was last brought up to date.
	p0, t0, since float64
	btime         []float64
	// vec counts the group's flows on each segment (shared and private channels), for the
	// utilisation series.
	vec []float64
	// heap holds the classes by target; members and joined are the count of member nodes and
	// the sum of their progress at joining (for Progress).
	heap            classHeap
	members, joined float64
	apos            int32 // index in sim.activeG
	mark            uint32
	oldW, oldR      float64 // weight and rate before the event's changes
	active          bool
	dirty, touched  bool
}

type groupKey struct {
	path       int32
	limitLabel uint16
	limit      uint64
}

// sim holds one simulation's state, in three parts: the routes (what is fixed once set up), the
// engine (classes, groups and the max-min re-solve) and the accounting (what the result reports).
type sim struct {
	simRoutes
	simEngine
	simAccount
	cfg  *FlowConfig
	fail *failState  // nil without server failures
	adm  *admitState // nil without FlowConfig.Admit
}

// Simulate runs the flow-level simulation of booting batch (node indices, no duplicates) under
// assignment a on g, with routes from r (nil: g's tree routes).
//
// Every (node, file) is a flow from the node's server along its route, sharing channels by
// weighted max-min fairness under per-flow protocol caps. Flows that start together on the same
// channels with the same size and cap are one class; a channel only one booting node crosses is
// folded into its cap.
func Simulate(ctx context.Context, g *topology.Graph, r topology.Router, a *mapping.Assignment, batch []int, cfg FlowConfig) (*FlowResult, error) {
	return simulate(ctx, g, r, a, batch, cfg, nil)
}

// simulate is Simulate with a hook that sees every allocation (tests check each against the
// max-min certificate).
func simulate(ctx context.Context, g *topology.Graph, r topology.Router, a *mapping.Assignment, batch []int, cfg FlowConfig,
	check func(*maxMinInput, []float64) error) (*FlowResult, error) {
	return simulateMC(ctx, g, r, a, batch, cfg, check, nil)
}

// simulateMC is simulate with multicast trees for some servers (mc may be nil).
func simulateMC(ctx context.Context, g *topology.Graph, r topology.Router, a *mapping.Assignment, batch []int, cfg FlowConfig,
	check func(*maxMinInput, []float64) error, mc *MulticastTrees) (*FlowResult, error) {
	return simulateAll(ctx, g, r, a, batch, cfg, check, mc, nil)
}

// simulateAll is simulateMC with server failures (fp may be nil; not with mc).
func simulateAll(ctx context.Context, g *topology.Graph, r topology.Router, a *mapping.Assignment, batch []int, cfg FlowConfig,
	check func(*maxMinInput, []float64) error, mc *MulticastTrees, fp *FailurePlan) (*FlowResult, error) {
	if r == nil {
		r = g.TreeRouter()
		if r == nil {
			return nil, fmt.Errorf("flow model: %s is not a tree; a router is needed", g.Name)
		}
	}
	if err := cfg.check(len(batch)); err != nil {
		return nil, fmt.Errorf("flow model: %w", err)
	}
	if !(cfg.ServerCapMbps >= 0) {
		return nil, fmt.Errorf("flow model: server cap must not be negative")
	}
	s := &sim{cfg: &cfg, simRoutes: simRoutes{g: g, batch: batch, n: len(batch), positions: len(batch), mc: mc}}
	s.check = check
	if fp != nil {
		if mc != nil {
			return nil, fmt.Errorf("flow model: server failures are not simulated with multicast delivery")
		}
		s.fail = &failState{plan: fp}
	}
	if cfg.Admit != nil {
		if fp != nil {
			return nil, fmt.Errorf("flow model: server failures are not simulated with an admitter")
		}
		s.adm = newAdmitState(cfg.Admit, len(batch))
	}
	if mc != nil && len(mc.Channels) != len(g.Servers()) {
		return nil, fmt.Errorf("flow model: %d multicast trees for %d boot servers", len(mc.Channels), len(g.Servers()))
	}
	if err := s.setup(r, a); err != nil {
		return nil, fmt.Errorf("flow model: %w", err)
	}
	if err := s.run(ctx); err != nil {
		return nil, fmt.Errorf("flow model: %w", err)
	}
	return s.result(a), nil
}

// setup builds everything the run needs: channels and labels, every position's route, the
// interned paths and profiles, and the per-position and per-channel state.
func (s *sim) setup(r topology.Router, a *mapping.Assignment) error {
	s.setupChannels(r)
	if err := s.checkBatch(a); err != nil {
		return err
	}
	if s.fail != nil {
		if err := s.fail.init(s, a); err != nil {
			return err
		}
	}
	if err := s.setupRoutes(r, a); err != nil {
		return err
	}
	s.foldPrivate()
	s.internPaths()
	s.allocState()
	return nil
}

// mcRoutes is what setupRoutes gathers about the multicast trees: whether a tree's channels
// have been counted once, and the latency to each tree's farthest member.
type mcRoutes struct {
	counted []bool
	lat     []float64
}

// allocState sizes the segments' capacities and the run's per-position, per-node, per-channel
// and per-path state.
func (s *sim) allocState() {
	s.segCap = make([]float64, s.nSeg)
	s.segChans = make([]int, s.nSeg)
	for c := 0; c < s.numCh; c++ {
		if s.users[c] > 0 {
			l := s.chLabel(int32(c))
			s.segCap[l] += s.capacity[c]
			s.segChans[l]++
		}
	}
	s.fileNext = make([]int32, s.positions)
	s.done = make([]float64, s.positions)
	s.posClass = make([]int32, s.positions)
	for i := range s.posClass {
		s.posClass[i] = -1
	}
	s.timeSlot = make([]int32, s.n)
	for i := range s.timeSlot {
		s.timeSlot[i] = -1
	}
	s.nodeBest = make([]int16, s.n)
	s.nodeBound = make([]float64, s.n)
	s.peak = make([]float64, s.nSeg)
	s.thr = make([]float64, s.nSeg)
	s.chGroups = make([][]int32, len(s.capacity))
	s.chMark = make([]uint32, len(s.capacity))
	s.chCut = make([]uint32, len(s.capacity))
	s.load = make([]float64, len(s.capacity))
	s.used = make([]float64, len(s.capacity))
	s.capEff = slices.Clone(s.capacity)
	s.groupIdx = map[groupKey]int32{}
	s.slotClass = make([]int32, len(s.pathCh))
	s.pathGroup = make([]int32, len(s.pathCh))
	for p := range s.slotClass {
		s.slotClass[p], s.pathGroup[p] = -1, -1
	}
	if s.mc != nil {
		s.mcBytes = make([]float64, s.numCh)
	}
}

// start moves the nodes at batch positions starters to their next non-empty file at time t,
// grouping them into new classes, or finishes them.
func (s *sim) start(t float64, starters []int32, group map[classKey]int32) {
	s.eventStamp++
	// Most starters find their class through the slot of their path; the map is for paths whose
	// nodes differ in profile, file or limit at one event.
	mapped, newC := s.mapped[:0], s.newClasses[:0]
	nf := int32(len(s.cfg.Files))
	for _, i := range starters {
		for s.fileNext[i] < nf && s.fileMb[s.fileNext[i]] == 0 {
			s.fileNext[i]++
		}
		f := s.fileNext[i]
		if f == nf {
			s.done[i] = t + s.cfg.HealthSeconds
			s.doneN++
			s.finishNode(i)
			continue
		}
		lim, ll := s.limit(i, int(f))
		k := classKey{path: s.nodePath[i], profile: s.nodeProf[i], file: f, limit: math.Float64bits(lim)}
		c, ok := s.slotClass[k.path], false
		slotFree := c < 0 || s.classes[c].stamp != s.eventStamp || s.classes[c].path != k.path
		if !slotFree {
			cl := &s.classes[c]
			ok = cl.profile == k.profile && cl.file == f && math.Float64bits(cl.limit) == k.limit
		}
		if !ok {
			c, ok = group[k]
		}
		if !ok {
			c = s.newClass(k, lim, ll)
			if slotFree {
				s.slotClass[k.path] = c
			} else {
				group[k] = c
				mapped = append(mapped, c)
			}
			newC = append(newC, c)
		}
		s.classes[c].members = append(s.classes[c].members, i)
		s.posClass[i] = c
		s.stats.Flows++
	}
	for _, c := range newC {
		s.joinNew(c, t)
	}
	// Delete this event's keys only: clearing a map that once grew large costs its size.
	for _, c := range mapped {
		cl := &s.classes[c]
		delete(group, classKey{path: cl.path, profile: cl.profile, file: cl.file, limit: math.Float64bits(cl.limit)})
	}
	s.mapped, s.newClasses = mapped, newC
}

// joinNew weighs new class c, now that its members are in, and joins it to its group at t.
func (s *sim) joinNew(c int32, t float64) {
	cl := &s.classes[c]
	cl.weight = float64(len(cl.members))
	if s.pathMC[cl.path] {
		cl.weight = 1 // one copy down the tree for all its members
		for _, ch := range s.pathCh[cl.path] {
			if int(ch) < s.numCh {
				s.mcBytes[ch] += s.cfg.Files[cl.file].Bytes
			}
		}
	}
	s.join(c, t)
}

// newClass makes an empty class for key k in a recycled slot if there is one.
func (s *sim) newClass(k classKey, lim float64, ll uint16) int32 {
	gi := s.pathGroup[k.path]
	if gi < 0 || s.groups[gi].limitLabel != ll || math.Float64bits(s.groups[gi].limit) != k.limit {
		gk := groupKey{path: k.path, limitLabel: ll, limit: k.limit}
		var found bool
		if gi, found = s.groupIdx[gk]; !found {
			gi = int32(len(s.groups))
			s.groupIdx[gk] = gi
			s.groups = append(s.groups, flowGroup{path: k.path, limit: lim, limitLabel: ll, apos: -1,
				btime: make([]float64, s.nLabels), vec: make([]float64, s.nSeg)})
			if s.pathGroup[k.path] < 0 {
				s.pathGroup[k.path] = gi
			}
		}
	}
	var c int32
	if n := len(s.freeC); n > 0 {
		c = s.freeC[n-1]
		s.freeC = s.freeC[:n-1]
	} else {
		c = int32(len(s.classes))
		s.classes = append(s.classes, flowClass{})
	}
	cl := &s.classes[c]
	cl.path, cl.profile, cl.file, cl.limit, cl.limitLabel, cl.group = k.path, k.profile, k.file, lim, ll, gi
	cl.stamp, cl.weight, cl.members = s.eventStamp, 0, cl.members[:0]
	s.stats.Classes++
	return c
}

// run processes the events in time order until every node is done: first files starting (on
// arrival after DHCP, or restarts after a failure), classes finishing, servers failing.
func (s *sim) run(ctx context.Context) error {
	q := s.arrivalQueue()
	fs := s.fail
	group := map[classKey]int32{}
	var starters []int32
	now := 0.0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		tStart, tEnd, tFail := q.peek(), s.heap.min(), math.Inf(1)
		if fs != nil {
			tStart = min(tStart, fs.nextStart(s.cfg.DHCPSeconds))
			tFail = fs.nextFail()
		}
		if s.adm != nil {
			tStart = min(tStart, s.adm.next(s.cfg.DHCPSeconds))
		}
		if math.IsInf(tStart, 1) && math.IsInf(tEnd, 1) {
			break
		}
		now = min(tStart, tEnd, tFail)
		if step := s.cfg.TimeStep; step > 0 {
			now = gridUp(now, step)
		}
		var err error
		if starters, err = s.event(now, q, group, starters[:0]); err != nil {
			return err
		}
	}
	if len(s.activeG) > 0 {
		return fmt.Errorf("%d flow groups stalled at %.6g s", len(s.activeG), now)
	}
	if s.adm != nil {
		if n := s.adm.unadmitted(); n > 0 {
			return fmt.Errorf("admitter: %d of %d nodes never powered on", n, s.n)
		}
	}
	if fs != nil {
		// Failures after the last node finished change nothing; they are only counted.
		fs.failAll(s, math.Inf(1))
	}
	s.record(now, true)
	if s.cfg.Progress != nil {
		s.cfg.Progress(s.progress(now))
	}
	return nil
}

// event processes everything due at now: the classes that finish, the nodes whose next file
// (or first, or a restart's) starts, the failures, then re-solves the sharing. starters is a
// buffer, returned for reuse.
func (s *sim) event(now float64, q *arrivals, group map[classKey]int32, starters []int32) ([]int32, error) {
	starters = s.finishDue(now, now+eventTolerance*max(1, now), starters)
	starters = q.popDue(now, starters)
	if s.fail != nil {
		starters = s.fail.popStarts(starters, now, s.cfg.DHCPSeconds)
	}
	if s.adm != nil {
		starters = s.adm.popDue(now, s.cfg.DHCPSeconds, starters)
	}
	s.start(now, starters, group)
	if s.adm != nil {
		var err error
		if starters, err = s.admitEvent(now, group, starters); err != nil {
			return starters, err
		}
	}
	if s.fail != nil {
		s.fail.failAll(s, now)
	}
	if err := s.resolve(now); err != nil {
		return starters, err
	}
	s.record(now, false)
	s.stats.Events++
	if s.cfg.Progress != nil && s.stats.Events%progressEvery == 0 {
		s.cfg.Progress(s.progress(now))
	}
	return starters, nil
}

// arrivals is the queue of batch positions by the time their first file starts.
type arrivals struct {
	order  []int32
	at     func(int32) float64 // when position p's first file starts
	next   int
	killed []bool // with failures: the incarnations that never start (nil without)
}

// arrivalQueue orders the batch positions by the time their first file starts: DHCP after their
// arrival or, with failures, after that of each node's first incarnation that starts (restarts
// join through failState.queue).
func (s *sim) arrivalQueue() *arrivals {
	cfg := s.cfg
	if s.adm != nil {
		return &arrivals{} // the admitter's queue has them
	}
	q := &arrivals{order: make([]int32, s.n)}
	for i := range q.order {
		q.order[i] = int32(i)
	}
	switch fs := s.fail; {
	case fs != nil:
		q.at = func(p int32) float64 { return fs.arr[p] + cfg.DHCPSeconds }
		q.killed = fs.killed
		copy(q.order, fs.first)
		slices.SortStableFunc(q.order, func(a, b int32) int { return cmp.Compare(fs.arr[a], fs.arr[b]) })
	case cfg.Arrivals != nil:
		q.at = func(i int32) float64 { return cfg.Arrivals[i] + cfg.DHCPSeconds }
		slices.SortStableFunc(q.order, func(a, b int32) int {
			switch ta, tb := cfg.Arrivals[a], cfg.Arrivals[b]; {
			case ta < tb:
				return -1
			case ta > tb:
				return 1
			}
			return 0
		})
	default:
		q.at = func(int32) float64 { return cfg.DHCPSeconds }
	}
	return q
}

// peek returns when the next position's first file starts (+Inf: none left), skipping the
// incarnations killed before they started.
func (q *arrivals) peek() float64 {
	for q.killed != nil && q.next < len(q.order) && q.killed[q.order[q.next]] {
		q.next++
	}
	if q.next < len(q.order) {
		return q.at(q.order[q.next])
	}
	return math.Inf(1)
}

// popDue appends the positions whose first file starts by now to starters.
func (q *arrivals) popDue(now float64, starters []int32) []int32 {
	for q.next < len(q.order) && q.at(q.order[q.next]) <= now {
		if q.killed == nil || !q.killed[q.order[q.next]] {
			starters = append(starters, q.order[q.next])
		}
		q.next++
	}
	return starters
}

// recountSmall is the number of active groups up to which record recomputes the throughputs at
// every event; above it, every that many events.
const recountSmall = 256
