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

// DefaultDetectSeconds is how long the fleet takes to see a server gone: the etcd lease TTL.
const DefaultDetectSeconds = 3.0

// ServerFailure is a boot server failing at a time during the boot.
type ServerFailure struct {
	// Server is an index into topology.Graph.Servers.
	Server int `json:"server"`
	// Seconds is the failure time from the start of the boot.
	Seconds float64 `json:"seconds"`
}

// FailurePlan is the failures of one simulated boot.
type FailurePlan struct {
	Failures []ServerFailure
	// DetectSeconds is the time from a failure to the takeover of the server's nodes.
	DetectSeconds float64
	// Absent marks the servers that were down from the start (the assignment was made without
	// them); they are never a new owner. nil: none.
	Absent []bool
	// Owners, when set, returns the owners of every node with the servers dead[s] (the plan's
	// failures detected so far) down, for callers that know the fleet's ownership rule
	// (mapping.AssignOwners). nil: mapping.Remap of the assignment with Absent and dead down.
	Owners func(dead []bool) (*mapping.Assignment, error)
}

// FailureSummary is the takeover of a run with failures, beside the same run without them.
type FailureSummary struct {
	DetectSeconds float64 `json:"detect_seconds"`
	// BatchSeconds is the batch time with the failures, BaselineBatchSeconds without them, and
	// ExtraSeconds the difference.
	BatchSeconds         float64 `json:"batch_seconds"`
	BaselineBatchSeconds float64 `json:"baseline_batch_seconds"`
	ExtraSeconds         float64 `json:"extra_seconds"`
	// TakenOver counts the nodes that changed server, Restarted those of them that lost a boot
	// in progress.
	TakenOver int `json:"taken_over"`
	Restarted int `json:"restarted"`
	// Effect is false when no failure touched an unfinished node: the run is then the baseline.
	Effect bool `json:"effect"`
	// Servers are the failures by time, then server index.
	Servers []ServerTakeover `json:"servers"`
	// Nodes are the batch's nodes' takeovers, parallel to FlowResult.NodeResults (nil without
	// Effect); JSON shows them in node_results.
	Nodes []NodeTakeover `json:"-"`
}

// NodeTakeover is what the failures did to one node.
type NodeTakeover struct {
	// Restarted is set when the node lost a boot in progress to a failed server and booted again
	// from DHCP on a new owner.
	Restarted bool `json:"restarted"`
	// Servers lists every server that owned the node during the boot, the first its own and the
	// last the one it finished on (only when it changed server).
	Servers []string `json:"servers,omitempty"`
}

// ServerTakeover is what one failed server left to the others.
type ServerTakeover struct {
	Server          string  `json:"server"`
	FailSeconds     float64 `json:"fail_seconds"`
	DetectedSeconds float64 `json:"detected_seconds"`
	// MidBoot nodes were booting from it (DHCP or a transfer) and start over on a new owner;
	// NotStarted nodes would have powered on (or restarted) on it after it failed and boot on a
	// new owner instead; Done nodes had fetched their last file and stay done. A node whose new
	// owner fails too is counted under both servers.
	MidBoot    int `json:"mid_boot"`
	NotStarted int `json:"not_started"`
	Done       int `json:"done"`
	// NewOwners counts the taken-over nodes by new owner, most nodes first.
	NewOwners []OwnerShare `json:"new_owners"`
	// Note says why a failure had no effect.
	Note string `json:"note,omitempty"`
}

// OwnerShare is a number of nodes a server took over.
type OwnerShare struct {
	Server string `json:"server"`
	Nodes  int    `json:"nodes"`
}

// SimulateFailures runs the flow simulation of booting batch under assignment a twice, without and
// with the boot servers' failures of fp, and returns the second with its FailureSummary. When no
// failure touches an unfinished node (all of them after the batch finished, say), the result is
// the baseline's, to the byte, with the summary saying so.
//
// A failed server's flows end where they are; its unfinished nodes restart their boot (DHCP, then
// every file) when the failure is detected (DetectSeconds, the lease TTL), on their owner by
// mapping.Remap with the failures detected by then. A node moves only when its own server fails.
func SimulateFailures(ctx context.Context, g *topology.Graph, r topology.Router, a *mapping.Assignment, batch []int,
	cfg FlowConfig, fp FailurePlan) (*FlowResult, error) {
	return simulateFailures(ctx, g, r, a, batch, cfg, fp, nil)
}

func simulateFailures(ctx context.Context, g *topology.Graph, r topology.Router, a *mapping.Assignment, batch []int,
	cfg FlowConfig, fp FailurePlan, check func(*maxMinInput, []float64) error) (*FlowResult, error) {
	if err := fp.check(len(g.Servers())); err != nil {
		return nil, fmt.Errorf("server failures: %w", err)
	}
	base, err := simulateAll(ctx, g, r, a, batch, cfg, check, nil, nil)
	if err != nil {
		return nil, err
	}
	res, err := simulateAll(ctx, g, r, a, batch, cfg, check, nil, &fp)
	if err != nil {
		return nil, err
	}
	sum := res.Failure
	sum.BaselineBatchSeconds = base.BatchSeconds
	if !sum.Effect {
		res = base
		res.Failure = sum
		sum.Nodes = nil
	}
	sum.BatchSeconds = res.BatchSeconds
	sum.ExtraSeconds = res.BatchSeconds - base.BatchSeconds
	for i := range sum.Servers {
		st := &sum.Servers[i]
		switch {
		case st.MidBoot+st.NotStarted > 0:
		case st.FailSeconds >= res.BatchSeconds:
			st.Note = "fails after the batch finished: no effect"
		case st.Done > 0:
			st.Note = "all its nodes had fetched their boot: no effect"
		default:
			st.Note = "serves no node of the batch: no effect"
		}
	}
	return res, nil
}

// check validates the plan for a machine of servers boot servers.
func (fp *FailurePlan) check(servers int) error {
	if !finite(fp.DetectSeconds) || fp.DetectSeconds < 0 {
		return fmt.Errorf("detection time must be a non-negative number of seconds, got %v", fp.DetectSeconds)
	}
	if len(fp.Absent) > servers {
		return fmt.Errorf("absent list has %d entries for %d servers", len(fp.Absent), servers)
	}
	down := make([]bool, servers)
	copy(down, fp.Absent)
	seen := make([]bool, servers)
	for _, f := range fp.Failures {
		if f.Server < 0 || f.Server >= servers {
			return fmt.Errorf("server %d out of range (machine has %d boot servers)", f.Server, servers)
		}
		if !finite(f.Seconds) || f.Seconds < 0 {
			return fmt.Errorf("server %d: failure time must be a non-negative number of seconds, got %v", f.Server, f.Seconds)
		}
		if seen[f.Server] {
			return fmt.Errorf("server %d fails twice", f.Server)
		}
		if down[f.Server] {
			return fmt.Errorf("server %d is down from the start and cannot fail again", f.Server)
		}
		seen[f.Server], down[f.Server] = true, true
	}
	if !slices.Contains(down, false) {
		return fmt.Errorf("no boot server is left: all %d fail or are down", servers)
	}
	return nil
}

// failState is a simulation's failures and incarnations. Positions 0..n-1 are the batch nodes'
// first incarnations (on their own servers); restarts follow.
type failState struct {
	plan   *FailurePlan
	failAt []float64 // per server: its failure time, +Inf if it does not fail
	order  []int     // failures (plan indices) by time, then server
	nextF  int       // next failure in order to process
	fidx   []int     // per server: its failure's index in order, or -1

	// Per position.
	node   []int32   // batch index
	server []int32   // boot server
	arr    []float64 // start of the DHCP exchange
	next   []int32   // the incarnation that follows if the server fails, -1 if it does not fail
	skip   []bool    // the server fails before the start: never started
	killed []bool    // stopped by the failure of its server
	moved  []float64 // bytes a killed incarnation fetched

	first, cur []int32 // per batch index: first and current incarnation that starts

	queue []int32 // restarts to start, by (arr, position) from qhead
	qhead int

	take   []ServerTakeover // by order
	owners [][]int          // by order: nodes per new owner
	moves  int
}

// nodeServer returns the node index (in the machine) and server of position p.
func (f *failState) nodeServer(s *sim, p int) (int, int32) {
	return s.batch[f.node[p]], f.server[p]
}

// init builds every node's chain of incarnations and sets s.positions.
func (f *failState) init(s *sim, a *mapping.Assignment) error {
	ns := len(s.g.Servers())
	if err := f.plan.check(ns); err != nil {
		return err
	}
	if a.NumServers != ns {
		return fmt.Errorf("assignment is for %d servers, machine %s has %d", a.NumServers, s.g.Name, ns)
	}
	f.orderFailures(s.g)
	own := &ownersCache{f: f, s: s, a: a, remapped: make([]*mapping.Assignment, len(f.order)+1)}
	n := s.n
	f.node = make([]int32, n, n+n/8)
	f.server = make([]int32, n, n+n/8)
	f.arr = make([]float64, n, n+n/8)
	f.next = make([]int32, n, n+n/8)
	f.skip = make([]bool, n, n+n/8)
	f.first = make([]int32, n)
	f.cur = make([]int32, n)
	for i, node := range s.batch {
		f.node[i], f.server[i] = int32(i), a.Server[node]
		if s.cfg.Arrivals != nil {
			f.arr[i] = s.cfg.Arrivals[i]
		}
		if err := f.chain(i, node, own); err != nil {
			return err
		}
		f.first[i] = f.advance(int32(i))
		f.cur[i] = f.first[i]
	}
	s.positions = len(f.node)
	f.killed = make([]bool, s.positions)
	f.moved = make([]float64, s.positions)
	return nil
}

// orderFailures sets each server's failure time and puts the failures in order (by time, then
// server), each with its takeover row.
func (f *failState) orderFailures(g *topology.Graph) {
	fp := f.plan
	ns := len(g.Servers())
	f.failAt = make([]float64, ns)
	f.fidx = make([]int, ns)
	for i := range f.failAt {
		f.failAt[i], f.fidx[i] = math.Inf(1), -1
	}
	for k, fl := range fp.Failures {
		f.failAt[fl.Server] = fl.Seconds
		f.order = append(f.order, k)
	}
	slices.SortFunc(f.order, func(x, y int) int {
		fx, fy := fp.Failures[x], fp.Failures[y]
		return cmp.Or(cmp.Compare(fx.Seconds, fy.Seconds), cmp.Compare(fx.Server, fy.Server))
	})
	f.take = make([]ServerTakeover, len(f.order))
	f.owners = make([][]int, len(f.order))
	for j, k := range f.order {
		fl := fp.Failures[k]
		f.fidx[fl.Server] = j
		f.take[j] = ServerTakeover{Server: g.VertexName(g.Servers()[fl.Server]), FailSeconds: fl.Seconds,
			DetectedSeconds: fl.Seconds + fp.DetectSeconds}
		f.owners[j] = make([]int, ns)
	}
}

// chain appends batch index i's (machine node node) incarnations after its first: while the
// server of the last one fails, the node restarts on its new owner once the failure is detected
// (or when it arrives, if later; the failed incarnation then never started).
func (f *failState) chain(i, node int, own *ownersCache) error {
	for p := i; ; {
		tf := f.failAt[f.server[p]]
		if math.IsInf(tf, 1) {
			f.next[p] = -1
			return nil
		}
		r := tf + f.plan.DetectSeconds
		if tf <= f.arr[p] {
			f.skip[p] = true
			r = max(r, f.arr[p])
		}
		a, err := own.at(r)
		if err != nil {
			return err
		}
		q := len(f.node)
		if q > math.MaxInt32-1 {
			return fmt.Errorf("too many restarts")
		}
		f.next[p] = int32(q)
		f.node = append(f.node, int32(i))
		f.server = append(f.server, a.Server[node])
		f.arr = append(f.arr, r)
		f.next = append(f.next, -1)
		f.skip = append(f.skip, false)
		p = q
	}
}

// ownersCache computes the owners under the first k failures by time, for the k that some restart
// needs, once each.
type ownersCache struct {
	f        *failState
	s        *sim
	a        *mapping.Assignment // the owners without failures
	remapped []*mapping.Assignment
}

// at returns the owners at time r: under the failures detected by then.
func (o *ownersCache) at(r float64) (*mapping.Assignment, error) {
	f := o.f
	k := 0
	for k < len(f.order) && f.take[k].FailSeconds+f.plan.DetectSeconds <= r {
		k++
	}
	if o.remapped[k] == nil {
		out, err := o.compute(k)
		if err != nil {
			return nil, fmt.Errorf("owners after %d failures: %w", k, err)
		}
		o.remapped[k] = out
	}
	return o.remapped[k], nil
}

// compute asks the plan's Owners (or mapping.Remap) for the owners under the first k failures
// and checks that every batch node has a live server.
func (o *ownersCache) compute(k int) (*mapping.Assignment, error) {
	fp, g := o.f.plan, o.s.g
	ns := len(g.Servers())
	dead := make([]bool, ns)
	for _, j := range o.f.order[:k] {
		dead[fp.Failures[j].Server] = true
	}
	var out *mapping.Assignment
	var err error
	if fp.Owners != nil {
		out, err = fp.Owners(dead)
	} else {
		down := slices.Clone(dead)
		for s, ab := range fp.Absent {
			down[s] = down[s] || ab
		}
		out, _, err = mapping.Remap(o.a, g.Hierarchy(), down)
	}
	if err != nil {
		return nil, err
	}
	if len(out.Server) != len(o.a.Server) {
		return nil, fmt.Errorf("%d nodes, want %d", len(out.Server), len(o.a.Server))
	}
	for _, node := range o.s.batch {
		if srv := out.Server[node]; srv < 0 || int(srv) >= ns || dead[srv] || int(srv) < len(fp.Absent) && fp.Absent[srv] {
			return nil, fmt.Errorf("node %s has server %d", g.VertexName(g.Nodes()[node]), srv)
		}
	}
	return out, nil
}

// advance returns the first incarnation from p that starts, counting the skipped ones as taken
// over before they started.
func (f *failState) advance(p int32) int32 {
	for f.skip[p] {
		j := f.fidx[f.server[p]]
		q := f.next[p]
		f.take[j].NotStarted++
		f.owners[j][f.server[q]]++
		f.moves++
		p = q
	}
	return p
}

// countUsers counts, per channel, the nodes whose incarnations that may start cross it: one
// node's incarnations never boot at once, so a channel only they cross stays private.
func (f *failState) countUsers(s *sim) {
	clear(s.users)
	mark := make([]int32, len(s.users))
	for c := range mark {
		mark[c] = -1
	}
	for i := int32(0); i < int32(s.n); i++ {
		for p := f.first[i]; p >= 0; p = f.next[p] {
			if f.skip[p] {
				continue
			}
			for _, c := range s.routeCh[s.routeStart[p]:s.routeStart[p+1]] {
				if mark[c] != i {
					mark[c] = i
					s.users[c]++
				}
			}
		}
	}
}

// nextStart returns when the first queued restart's first file starts, +Inf if none.
func (f *failState) nextStart(dhcp float64) float64 {
	for f.qhead < len(f.queue) && f.killed[f.queue[f.qhead]] {
		f.qhead++
	}
	if f.qhead == len(f.queue) {
		return math.Inf(1)
	}
	return f.arr[f.queue[f.qhead]] + dhcp
}

// nextFail returns the time of the next failure to process, +Inf if none.
func (f *failState) nextFail() float64 {
	if f.nextF == len(f.order) {
		return math.Inf(1)
	}
	return f.take[f.nextF].FailSeconds
}

// popStarts appends the queued restarts whose first file starts by now.
func (f *failState) popStarts(starters []int32, now, dhcp float64) []int32 {
	for f.qhead < len(f.queue) {
		p := f.queue[f.qhead]
		if !f.killed[p] {
			if f.arr[p]+dhcp > now {
				break
			}
			starters = append(starters, p)
		}
		f.qhead++
	}
	return starters
}

// failAll processes the failures due by now, in order.
func (f *failState) failAll(s *sim, now float64) {
	for f.nextF < len(f.order) && f.take[f.nextF].FailSeconds <= now {
		f.failOne(s, f.nextF, now)
		f.nextF++
	}
}

// failOne stops server j's (in order) unfinished incarnations and queues their successors.
func (f *failState) failOne(s *sim, j int, now float64) {
	srv := int32(f.plan.Failures[f.order[j]].Server)
	nf := int32(len(s.cfg.Files))
	var hit, classes []int32
	for i := range f.cur {
		p := f.cur[i]
		if f.server[p] != srv {
			continue
		}
		if s.fileNext[p] == nf {
			f.take[j].Done++
			continue
		}
		f.take[j].MidBoot++
		f.killed[p] = true
		if c := s.posClass[p]; c >= 0 {
			hit = append(hit, p)
			if len(classes) == 0 || classes[len(classes)-1] != c {
				classes = append(classes, c)
			}
		}
		q := f.next[p]
		f.owners[j][f.server[q]]++
		f.moves++
		q = f.advance(q)
		f.cur[i] = q
		f.queue = append(f.queue, q)
	}
	slices.SortFunc(f.queue[f.qhead:], func(x, y int32) int { return cmp.Or(cmp.Compare(f.arr[x], f.arr[y]), cmp.Compare(x, y)) })
	if len(hit) > 0 {
		f.dropKilled(s, classes, now)
	}
}

// dropKilled takes the killed members out of the classes they were in: each class keeps its
// survivors; its killed members leave it with the time they spent under each limit so far, and
// what they had fetched.
func (f *failState) dropKilled(s *sim, classes []int32, now float64) {
	slices.Sort(classes)
	classes = slices.Compact(classes)
	nf := len(s.cfg.Files)
	prefix := make([]float64, nf+1)
	for k, fl := range s.cfg.Files {
		prefix[k+1] = prefix[k] + fl.Bytes
	}
	var keep, gone []int32
	for _, c := range classes {
		cl := &s.classes[c]
		keep, gone = keep[:0], gone[:0]
		for _, p := range cl.members {
			if f.killed[p] {
				gone = append(gone, p)
			} else {
				keep = append(keep, p)
			}
		}
		rem := max(cl.target-s.groups[cl.group].progressAt(now), 0)
		for _, p := range gone {
			fi := s.fileNext[p]
			s.posClass[p] = -1
			f.moved[p] = prefix[fi] + max(0, s.cfg.Files[fi].Bytes-rem*1e6/8)
		}
		s.leave(c, gone, now)
		cl.members = append(cl.members[:0], keep...)
		if len(cl.members) == 0 {
			s.freeClass(c)
		}
	}
}

// used appends the incarnations of batch index i that started, in order, to buf.
func (f *failState) used(buf []int32, i int) []int32 {
	for p := f.first[i]; ; {
		buf = append(buf, p)
		if p == f.cur[i] {
			return buf
		}
		p = f.advance0(f.next[p])
	}
}

// advance0 is advance without counting.
func (f *failState) advance0(p int32) int32 {
	for f.skip[p] {
		p = f.next[p]
	}
	return p
}

// history fills in a node's restart flag and servers.
func (f *failState) history(s *sim, nr *NodeTakeover, i int) {
	if f.cur[i] == int32(i) {
		return
	}
	g := s.g
	nr.Servers = []string{g.VertexName(g.Servers()[f.server[i]])}
	for p := int32(i); p != f.cur[i]; {
		nr.Restarted = nr.Restarted || f.killed[p]
		p = f.next[p]
		nr.Servers = append(nr.Servers, g.VertexName(g.Servers()[f.server[p]]))
	}
}

// movedBytes returns the bytes position p fetched over its route: its whole boot for the
// incarnation that finished, what it had for a killed one, nothing for one that never started.
func (f *failState) movedBytes(p int, total float64) float64 {
	switch {
	case f.killed[p]:
		return f.moved[p]
	case f.cur[f.node[p]] == int32(p):
		return total
	}
	return 0
}

// summary returns the takeover summary (the batch times are SimulateFailures').
func (f *failState) summary(s *sim) *FailureSummary {
	g := s.g
	sum := &FailureSummary{DetectSeconds: f.plan.DetectSeconds, Servers: f.take, Nodes: make([]NodeTakeover, s.n)}
	for i := range f.cur {
		if f.cur[i] != int32(i) {
			nt := &sum.Nodes[i]
			f.history(s, nt, i)
			sum.TakenOver++
			if nt.Restarted {
				sum.Restarted++
			}
		}
	}
	sum.Effect = f.moves > 0
	for j := range f.take {
		st := &f.take[j]
		st.NewOwners = []OwnerShare{}
		for srv, k := range f.owners[j] {
			if k > 0 {
				st.NewOwners = append(st.NewOwners, OwnerShare{Server: g.VertexName(g.Servers()[srv]), Nodes: k})
			}
		}
		// Most nodes first; the servers' index order (as built) breaks ties.
		slices.SortStableFunc(st.NewOwners, func(x, y OwnerShare) int { return y.Nodes - x.Nodes })
	}
	return sum
}
