package fabricsim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"unsafe"

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

// sim holds one simulation's state.
type sim struct {
	g     *topology.Graph
	cfg   *FlowConfig
	batch []int
	n     int
	// np counts the positions: the batch's, then (with server failures) the restarts of its
	// nodes on new owners, which need routes of their own (see failState).
	np   int
	fail *failState

	numCh    int // graph channels; server caps are virtual channels after them
	capacity []float64
	chLab    []uint16 // label of each channel: its segment, or the server cap
	nSeg     int
	nLabels  int
	labels   []string
	rank     []int // display position of each label

	// Per position.
	routeStart []int32
	routeCh    []int32
	nodePath   []int32
	nodeProf   []int32
	privCap    []float64
	privLabel  []uint16
	rtt        []float64
	fileNext   []int32
	done       []float64
	posClass   []int32 // the class each position is in, -1 between files

	users    []int32 // booting nodes per channel
	pathCh   [][]int32
	profiles [][]uint16
	fileMb   []float64

	classes  []flowClass
	freeC    []int32 // recycled class slots
	groups   []flowGroup
	groupIdx map[groupKey]int32
	// slotClass is the first class made for each path at the current event, pathGroup the first
	// group of each path; mapped lists the classes put in the event's map instead, newC the
	// classes made at the event.
	slotClass []int32
	pathGroup []int32
	mapped    []int32
	newC      []int32
	evStamp   int32
	activeG   []int32   // groups with flows, in no order
	chGroups  [][]int32 // active groups by channel
	chMark    []uint32
	stamp     uint32
	comp      []int32
	dirty     []int32 // groups changed at the event
	solved    []int32
	// load is each channel's total rate (kept up to date by the groups' changes); the channels
	// met as cuts of the component (chCut = stamp) are solved with capEff, and used sums the new
	// rates on them.
	load, capEff, used []float64
	chCut              []uint32
	cut                []int32
	touchedG           []int32 // groups whose throughput is out of thr
	heap               groupHeap
	// Per batch node: seconds under each label while it boots (totSlot into totPool), then the
	// label that bounded it longest and for how long.
	totSlot   []int32
	totPool   []float64
	freeTot   []int32
	nodeBest  []int16
	nodeBound []float64
	doneN     int
	adm       *admitState // nil without FlowConfig.Admit
	mbDone    float64     // Mb of the files finished, over all nodes: for Progress
	lastMb    float64
	mm        maxMin
	in        maxMinInput
	stats     FlowStats
	thr       []float64 // throughput by segment now, kept up to date by the groups' changes
	recounted int
	series    []float64 // flattened: time, then nSeg throughputs
	peak      []float64
	segCap    []float64
	segChans  []int
	check     func(*maxMinInput, []float64) error
	mcBytes   []float64 // bytes the multicast trees' classes moved, by channel

	// Multicast delivery (see SimulateMulticast): mc holds the trees, mcNode marks the batch
	// positions served by one, pathMC the paths that are trees (a class on one is one flow).
	mc     *MulticastTrees
	mcNode []bool
	pathMC []bool
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
	s := &sim{g: g, cfg: &cfg, batch: batch, n: len(batch), np: len(batch), check: check, mc: mc}
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

func (s *sim) chLabel(c int32) uint16 { return s.chLab[c] }

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

// setupChannels sets each channel's capacity and label (server caps are virtual channels after
// the graph's, labelled "server"), the labels' display ranks and the files' sizes in Mb.
func (s *sim) setupChannels(r topology.Router) {
	g, cfg := s.g, s.cfg
	s.numCh = g.NumChannels()
	nVirt := 0
	if cfg.ServerCapMbps > 0 {
		nVirt = len(g.Servers())
	}
	s.capacity = make([]float64, s.numCh+nVirt)
	for c := 0; c < s.numCh; c++ {
		s.capacity[c] = g.ChannelCapacity(topology.Channel(c))
	}
	for c := s.numCh; c < len(s.capacity); c++ {
		s.capacity[c] = cfg.ServerCapMbps
	}
	s.nSeg = len(g.Segments())
	s.chLab = make([]uint16, len(s.capacity))
	for c := range s.chLab {
		if c < s.numCh {
			s.chLab[c] = uint16(g.Link(topology.Channel(c).Link()).Segment)
		} else {
			s.chLab[c] = uint16(s.nSeg) // server cap
		}
	}
	s.nLabels = s.nSeg + 3
	s.labels = append(slices.Clone(g.Segments()), "server", "tftp", "http")
	s.rank = make([]int, s.nLabels)
	for i, seg := range SegmentOrder(g, r) {
		s.rank[seg] = i
	}
	for l := s.nSeg; l < s.nLabels; l++ {
		s.rank[l] = l
	}
	for _, f := range cfg.Files {
		s.fileMb = append(s.fileMb, f.Bytes*8/1e6)
	}
}

// checkBatch rejects an assignment for another machine, batch nodes out of range or listed
// twice, and nodes without a boot server.
func (s *sim) checkBatch(a *mapping.Assignment) error {
	g := s.g
	if len(a.Server) != len(g.Nodes()) {
		return fmt.Errorf("assignment has %d nodes, machine %s has %d", len(a.Server), g.Name, len(g.Nodes()))
	}
	seen := make([]bool, len(g.Nodes()))
	for _, node := range s.batch {
		if node < 0 || node >= len(g.Nodes()) {
			return fmt.Errorf("batch node %d out of range (machine has %d nodes)", node, len(g.Nodes()))
		}
		if seen[node] {
			return fmt.Errorf("node %s is in the batch twice", g.VertexName(g.Nodes()[node]))
		}
		seen[node] = true
		if srv := a.Server[node]; srv < 0 || int(srv) >= len(g.Servers()) {
			return fmt.Errorf("node %s has no boot server", g.VertexName(g.Nodes()[node]))
		}
	}
	return nil
}

// mcRoutes is what setupRoutes gathers about the multicast trees: whether a tree's channels
// have been counted once, and the latency to each tree's farthest member.
type mcRoutes struct {
	counted []bool
	lat     []float64
}

// setupRoutes routes every position from its server, counts the booting nodes on each channel
// and sets each position's RTT. A position served by a multicast tree takes the tree's channels,
// counted once per tree, and the pace of its farthest member.
func (s *sim) setupRoutes(r topology.Router, a *mapping.Assignment) error {
	g := s.g
	s.routeStart = make([]int32, s.np+1)
	s.routeCh = make([]int32, 0, s.np*6)
	s.rtt = make([]float64, s.np)
	s.users = make([]int32, len(s.capacity))
	s.mcNode = make([]bool, s.np)
	var mc mcRoutes
	if s.mc != nil {
		mc = mcRoutes{counted: make([]bool, len(g.Servers())), lat: make([]float64, len(g.Servers()))}
	}
	var buf []topology.Channel
	for i := 0; i < s.np; i++ {
		var node int
		var srv int32
		if i < s.n {
			node = s.batch[i]
			srv = a.Server[node]
		} else {
			node, srv = s.fail.nodeServer(s, i)
		}
		var err error
		buf, err = r.Route(buf[:0], g.Servers()[srv], g.Nodes()[node])
		if err != nil {
			return err
		}
		if len(buf) == 0 {
			return fmt.Errorf("node %s: empty route from its server", g.VertexName(g.Nodes()[node]))
		}
		s.addRoute(i, srv, buf, &mc)
	}
	if s.fail != nil {
		s.fail.countUsers(s)
	}
	if s.mc != nil && s.cfg.RTTSeconds <= 0 {
		// A tree's members share its pace: that of its farthest member.
		for i, node := range s.batch {
			if s.mcNode[i] {
				s.rtt[i] = 2*mc.lat[a.Server[node]]*1e-6 + s.cfg.ServerSeconds
			}
		}
	}
	return nil
}

// addRoute appends position i's channels (route, from server srv) to routeCh, counts their
// users and sets its RTT.
func (s *sim) addRoute(i int, srv int32, route []topology.Channel, mc *mcRoutes) {
	lat := 0.0
	for _, c := range route {
		lat += s.g.Link(c.Link()).LatencyUS
	}
	if s.mc != nil && s.mc.Channels[srv] != nil {
		// A tree carries one copy per channel however many members it serves.
		s.mcNode[i] = true
		mc.lat[srv] = max(mc.lat[srv], lat)
		for _, c := range s.mc.Channels[srv] {
			s.routeCh = append(s.routeCh, int32(c))
			if !mc.counted[srv] {
				s.users[c]++
			}
		}
		mc.counted[srv] = true
	} else {
		for _, c := range route {
			s.routeCh = append(s.routeCh, int32(c))
			s.users[c]++
		}
	}
	if s.numCh < len(s.capacity) {
		c := int32(s.numCh) + srv // the server cap
		s.routeCh = append(s.routeCh, c)
		s.users[c]++
	}
	s.routeStart[i+1] = int32(len(s.routeCh))
	s.rtt[i] = 2*lat*1e-6 + s.cfg.ServerSeconds
	if s.cfg.RTTSeconds > 0 {
		s.rtt[i] = s.cfg.RTTSeconds
	}
}

// foldPrivate folds each position's private channels (one booting node) into its cap: the
// smallest capacity among them, ties to the label shown first.
func (s *sim) foldPrivate() {
	s.privCap = make([]float64, s.np)
	s.privLabel = make([]uint16, s.np)
	for i := 0; i < s.np; i++ {
		pc, pl := math.Inf(1), uint16(0)
		for _, c := range s.routeCh[s.routeStart[i]:s.routeStart[i+1]] {
			if s.users[c] > 1 || s.mcNode[i] {
				continue
			}
			l := s.chLabel(c)
			if cp := s.capacity[c]; cp < pc || (cp == pc && s.rank[l] < s.rank[pl]) {
				pc, pl = cp, l
			}
		}
		s.privCap[i], s.privLabel[i] = pc, pl
	}
}

// internPaths gives every position its path and profile, interned. The path is its route's
// channels that take part in the sharing (in the incremental mode not those that can never be
// saturated, see flow_engine.go; all of a multicast tree's); the profile is the segment labels of
// all its route's channels, sorted (for the utilisation series).
func (s *sim) internPaths() {
	s.nodePath = make([]int32, s.np)
	s.nodeProf = make([]int32, s.np)
	shares := s.sharingChannels()
	pathIndex := map[string]int32{}
	mcPathIndex := map[string]int32{}
	profIndex := map[string]int32{}
	var key []int32
	var prof []uint16
	for i := 0; i < s.np; i++ {
		key, prof = key[:0], prof[:0]
		for _, c := range s.routeCh[s.routeStart[i]:s.routeStart[i+1]] {
			prof = append(prof, s.chLabel(c))
			if s.mcNode[i] || (s.users[c] > 1 && shares[c]) {
				key = append(key, c)
			}
		}
		index := pathIndex
		if s.mcNode[i] {
			index = mcPathIndex
		}
		id, ok := index[int32Key(key)]
		if !ok {
			id = int32(len(s.pathCh))
			s.pathCh = append(s.pathCh, slices.Clone(key))
			s.pathMC = append(s.pathMC, s.mcNode[i])
			index[int32Key(s.pathCh[id])] = id
		}
		s.nodePath[i] = id
		slices.Sort(prof)
		pid, ok := profIndex[uint16Key(prof)]
		if !ok {
			pid = int32(len(s.profiles))
			s.profiles = append(s.profiles, slices.Clone(prof))
			profIndex[uint16Key(s.profiles[pid])] = pid
		}
		s.nodeProf[i] = pid
	}
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
	s.fileNext = make([]int32, s.np)
	s.done = make([]float64, s.np)
	s.posClass = make([]int32, s.np)
	for i := range s.posClass {
		s.posClass[i] = -1
	}
	s.totSlot = make([]int32, s.n)
	for i := range s.totSlot {
		s.totSlot[i] = -1
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

// int32Key and uint16Key view a slice's bytes as a string for map lookups; the map keeps only
// keys built from slices that are never modified afterwards.
func int32Key(v []int32) string {
	if len(v) == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

func uint16Key(v []uint16) string {
	if len(v) == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(&v[0])), 2*len(v))
}

// limit returns the per-flow cap of batch position i fetching file f, and what sets it.
func (s *sim) limit(i int32, f int) (float64, uint16) {
	lim, label := s.privCap[i], s.privLabel[i]
	var pc float64
	var pl uint16
	switch s.cfg.Files[f].Protocol {
	case TFTP:
		pc, pl = float64(s.cfg.TFTPBlockSize*s.cfg.TFTPWindowSize)*8/s.rtt[i]/1e6, uint16(s.nSeg+1)
	case HTTP:
		pc, pl = s.cfg.HTTPWindowBytes*8/s.rtt[i]/1e6, uint16(s.nSeg+2)
	default:
		return lim, label
	}
	if s.rtt[i] > 0 && pc < lim {
		return pc, pl
	}
	return lim, label
}

// sharingChannels marks the channels that take part in the sharing: in the reference mode every
// channel, else those that could be saturated. A channel is not when all the flows that could ever
// cross it, every booting position at the largest cap of its files, fit in it: its constraint
// never binds, so leaving it out changes no rate (max-min fairness is unique, and the allocation
// without the constraint already meets it). Channels of multicast trees always take part.
func (s *sim) sharingChannels() []bool {
	shares := make([]bool, len(s.capacity))
	if s.cfg.reference {
		for c := range shares {
			shares[c] = true
		}
		return shares
	}
	demand := make([]float64, len(s.capacity))
	for i := 0; i < s.np; i++ {
		route := s.routeCh[s.routeStart[i]:s.routeStart[i+1]]
		if s.mcNode[i] {
			for _, c := range route {
				shares[c] = true
			}
			continue
		}
		m := 0.0
		for f := range s.cfg.Files {
			if s.fileMb[f] > 0 {
				l, _ := s.limit(int32(i), f)
				m = max(m, l)
			}
		}
		for _, c := range route {
			if s.users[c] > 1 {
				demand[c] += m
			}
		}
	}
	for c := range shares {
		// A margin, so that rounding cannot hide a constraint that binds in a tie.
		shares[c] = shares[c] || !(demand[c]*(1+1e-9) < s.capacity[c])
	}
	return shares
}

// start moves the nodes at batch positions starters to their next non-empty file at time t,
// grouping them into new classes, or finishes them.
func (s *sim) start(t float64, starters []int32, group map[classKey]int32) {
	s.evStamp++
	// Most starters find their class through the slot of their path; the map is for paths whose
	// nodes differ in profile, file or limit at one event.
	mapped, newC := s.mapped[:0], s.newC[:0]
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
		slotFree := c < 0 || s.classes[c].stamp != s.evStamp || s.classes[c].path != k.path
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
	s.mapped, s.newC = mapped, newC
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
	cl.stamp, cl.weight, cl.members = s.evStamp, 0, cl.members[:0]
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

// progress is what FlowConfig.Progress is told at now: the finished files' megabits plus what
// the active flows have fetched of theirs (never less than last time: the groups' sums round).
func (s *sim) progress(now float64) Progress {
	mb := s.mbDone
	for _, gi := range s.activeG {
		g := &s.groups[gi]
		mb += g.members*g.progressAt(now) - g.joined
	}
	mb = max(mb, s.lastMb)
	s.lastMb = mb
	total := 0.0
	for _, f := range s.fileMb {
		total += f
	}
	return Progress{Done: s.doneN, Nodes: s.n, Seconds: now, Mb: mb, TotalMb: total * float64(s.n)}
}

// recountSmall is the number of active groups up to which record recomputes the throughputs at
// every event; above it, every that many events.
const recountSmall = 256

// record appends a point of the utilisation series: the throughput of each segment from now on.
// The throughputs are running totals that each group's change updates; rounding gathers in them,
// so they are recomputed from the groups at every event when there are few, and otherwise once
// per as many events as there are active groups (which keeps the cost per event constant).
func (s *sim) record(now float64, end bool) {
	if !end {
		if s.recounted++; len(s.activeG) <= recountSmall || s.recounted >= len(s.activeG) {
			s.recount()
			s.recounted = 0
		}
	}
	base := len(s.series)
	s.series = append(s.series, now)
	s.series = append(s.series, make([]float64, s.nSeg)...)
	thr := s.series[base+1:]
	if !end {
		for l, v := range s.thr {
			thr[l] = max(v, 0)
		}
	}
	for l, v := range thr {
		s.peak[l] = max(s.peak[l], v)
	}
	// Several events at one time (a start right after a completion) keep only the last point.
	if prev := base - (s.nSeg + 1); prev >= 0 && s.series[prev] == now {
		copy(s.series[prev:], s.series[base:])
		s.series = s.series[:base]
	}
}

// result gathers the run's outcome: every node's, the distributions, the bytes on each segment
// and the busiest links, the bottleneck attribution and the utilisation series.
func (s *sim) result(a *mapping.Assignment) *FlowResult {
	cfg := s.cfg
	res := &FlowResult{Nodes: s.n, Files: slices.Clone(cfg.Files), Stats: s.stats}
	if res.Files == nil {
		res.Files = []File{}
	}
	res.Stats.Paths = len(s.pathCh)
	res.Stats.Groups = len(s.groups)
	boundCount := s.nodeResults(a, res)
	bytes := s.channelBytes()
	segBytes := make([]float64, s.nSeg)
	for c := 0; c < s.numCh; c++ {
		if s.users[c] > 0 {
			segBytes[s.chLabel(int32(c))] += bytes[c]
		}
	}
	res.TopLinks = s.topLinks(bytes)
	shown := s.segmentUsage(res, segBytes, boundCount)
	res.Bottlenecks = []BottleneckShare{}
	for _, l := range s.byRank(s.nLabels) {
		if boundCount[l] > 0 {
			res.Bottlenecks = append(res.Bottlenecks, BottleneckShare{Limit: s.labels[l], Nodes: boundCount[l]})
		}
	}
	res.Utilisation = s.seriesResult(shown)
	if s.fail != nil {
		res.Failure = s.fail.summary(s)
	}
	return res
}

// nodeResults fills every node's outcome, the servers used and the completion and duration
// distributions, and returns how many nodes each label bounded.
func (s *sim) nodeResults(a *mapping.Assignment, res *FlowResult) []int {
	g, cfg := s.g, s.cfg
	serverName := make([]string, len(g.Servers()))
	usedServer := make([]bool, len(g.Servers()))
	boundCount := make([]int, s.nLabels)
	res.NodeResults = make([]NodeResult, s.n)
	comp := make([]float64, s.n)
	dur := make([]float64, s.n)
	var buf []int32
	for i, node := range s.batch {
		buf = s.incarnations(i, buf)
		ps := buf
		last := int(ps[len(ps)-1])
		var srv int32
		for _, p := range ps {
			srv = a.Server[node]
			if s.fail != nil {
				_, srv = s.fail.nodeServer(s, int(p))
			}
			if serverName[srv] == "" {
				serverName[srv] = g.VertexName(g.Servers()[srv])
			}
			if !usedServer[srv] {
				usedServer[srv] = true
				res.ServersUsed++
			}
		}
		arr := 0.0
		switch {
		case cfg.Arrivals != nil:
			arr = cfg.Arrivals[i]
		case s.adm != nil:
			arr = s.adm.at[i]
		}
		nr := NodeResult{Name: g.VertexName(g.Nodes()[node]), Server: serverName[srv], ArrivalSeconds: arr, DoneSeconds: s.done[last]}
		if best := s.nodeBest[i]; best >= 0 {
			nr.Bottleneck, nr.BoundSeconds = s.labels[best], s.nodeBound[i]
			boundCount[best]++
		}
		res.NodeResults[i] = nr
		comp[i], dur[i] = s.done[last], s.done[last]-arr
	}
	res.Completion = distribution(comp)
	res.Duration = distribution(dur)
	res.BatchSeconds = res.Completion.Max
	return boundCount
}

// incarnations returns the positions of batch node i's boot in buf: its own, or with failures
// each incarnation that started, the last one finishing.
func (s *sim) incarnations(i int, buf []int32) []int32 {
	if s.fail != nil {
		return s.fail.used(buf[:0], i)
	}
	return append(buf[:0], int32(i))
}

// channelBytes returns the bytes each graph channel carried: every node's whole boot crosses
// every channel of its route.
func (s *sim) channelBytes() []float64 {
	var total float64
	for _, f := range s.cfg.Files {
		total += f.Bytes
	}
	bytes := make([]float64, s.numCh)
	// A tree's class moves each of its files once over every channel of the tree.
	copy(bytes, s.mcBytes)
	for i := 0; i < s.np; i++ {
		if s.mcNode[i] {
			continue
		}
		moved := total
		if s.fail != nil {
			// A restarted node's lost attempt carried what it had fetched when its server failed.
			if moved = s.fail.movedBytes(i, total); moved == 0 {
				continue
			}
		}
		for _, c := range s.routeCh[s.routeStart[i]:s.routeStart[i+1]] {
			if int(c) < s.numCh {
				bytes[c] += moved
			}
		}
	}
	return bytes
}

// topLinks returns the cfg.TopLinks (default 10, negative: none) busiest used channels by bytes,
// ties to the lower channel.
func (s *sim) topLinks(bytes []float64) []LinkUsage {
	ntop := s.cfg.TopLinks
	if ntop == 0 {
		ntop = 10
	}
	var top []int32
	for c := 0; c < s.numCh && ntop > 0; c++ {
		if s.users[c] == 0 || (len(top) == ntop && bytes[c] <= bytes[top[ntop-1]]) {
			continue
		}
		j, _ := slices.BinarySearchFunc(top, int32(c), func(x, c int32) int {
			switch {
			case bytes[x] > bytes[c]:
				return -1
			case bytes[x] < bytes[c]:
				return 1
			}
			return int(x - c)
		})
		top = slices.Insert(top, j, int32(c))
		if len(top) > ntop {
			top = top[:ntop]
		}
	}
	g := s.g
	out := []LinkUsage{}
	for _, c := range top {
		ch := topology.Channel(c)
		out = append(out, LinkUsage{From: g.VertexName(g.ChannelFrom(ch)), To: g.VertexName(g.ChannelTo(ch)),
			Segment: s.labels[s.chLabel(c)], CapacityMbps: s.capacity[c], Bytes: bytes[c]})
	}
	return out
}

// segmentUsage fills the usage of every segment that has used channels, in display order, and
// returns those segments.
func (s *sim) segmentUsage(res *FlowResult, segBytes []float64, boundCount []int) []int {
	var shown []int
	for _, seg := range s.byRank(s.nSeg) {
		if s.segChans[seg] == 0 {
			continue
		}
		shown = append(shown, seg)
		u := SegmentUsage{Name: s.labels[seg], Channels: s.segChans[seg], CapacityMbps: s.segCap[seg], Bytes: segBytes[seg],
			PeakMbps: s.peak[seg], BottleneckNodes: boundCount[seg]}
		u.PeakUtilisation = u.PeakMbps / u.CapacityMbps
		res.Segments = append(res.Segments, u)
	}
	return shown
}

// byRank returns the labels 0..n-1 in display order.
func (s *sim) byRank(n int) []int {
	order := make([]int, n)
	for l := range order {
		order[l] = l
	}
	slices.SortFunc(order, func(a, b int) int { return s.rank[a] - s.rank[b] })
	return order
}

// seriesResult turns the recorded steps into the per-segment series of the segments shown.
func (s *sim) seriesResult(shown []int) Series {
	w := s.nSeg + 1
	np := len(s.series) / w
	t := make([]float64, np)
	vals := make([][]float64, s.nSeg)
	for l := range vals {
		vals[l] = make([]float64, np)
	}
	for p := 0; p < np; p++ {
		t[p] = s.series[p*w]
		for l := 0; l < s.nSeg; l++ {
			vals[l][p] = s.series[p*w+1+l]
		}
	}
	maxS := s.cfg.MaxSamples
	if maxS <= 0 {
		maxS = 400
	}
	if np > maxS+1 && t[np-1] > t[0] {
		t, vals = binSeries(t, vals, maxS)
	}
	out := Series{TimeSeconds: t, Segments: []SegmentSeries{}}
	for _, l := range shown {
		util := make([]float64, len(t))
		for i, v := range vals[l] {
			util[i] = v / s.segCap[l]
		}
		out.Segments = append(out.Segments, SegmentSeries{Name: s.labels[l], Mbps: vals[l], Utilisation: util})
	}
	return out
}

// gridUp moves an event at t up to the time-step grid of step q. Event times are sums and
// quotients of floating-point numbers, so an event that is on the grid by arithmetic is often a
// hair past it (0.2 + 0.4 = 0.6000000000000001); a plain ceil would then push it a whole step late
// (0.61 s with q = 0.01). So t/q within eventTolerance (relative) of a whole number counts as on the
// grid, and the event keeps its own time: never earlier than t, as every event of the step must
// still be due when it is processed.
func gridUp(t, q float64) float64 {
	k := t / q
	if r := math.Round(k); math.Abs(k-r) <= eventTolerance*max(1, math.Abs(r)) {
		k = r
	}
	return max(t, math.Ceil(k)*q)
}
