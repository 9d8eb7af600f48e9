package bootsrv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/internal/promreg"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/nodestate/etcdstore"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// FleetOptions make a Server a member of a fleet.
//
// The live members own the nodes by one rule (AssignServers, recomputed whenever the live set
// changes); a node mid-boot stays with its holder until its boot ends, and a fenced server takes
// nothing over and answers at most its home nodes, whose addresses are fixed.
type FleetOptions struct {
	// Client is the fleet's etcd client; the caller closes it after the server.
	Client *fleet.Client
	// TTL is the membership lease. Default fleet.DefaultTTL (3 s).
	TTL time.Duration
	// Reconcile is how often deferred reclaims and kept nodes are re-checked. Default 500 ms.
	Reconcile time.Duration
	// FleetSecret is the secret every server of the fleet holds, at least MinFleetSecret bytes.
	// It authenticates the witness's answers (fleetwitness.go) and, with node_auth on, derives
	// the node tokens in place of the node secret file, so that a node's token holds at
	// whichever server answers it. Without it a fenced server asks no peer and answers its home
	// nodes until its lease is known to be lost.
	FleetSecret []byte
	// Membership is the server's (JoinFleet), required: the server acts under it and never
	// leaves, so that a process reloading its configuration stays a member throughout.
	Membership *fleet.Membership
	// MaxKeep bounds how long a server keeps a node mid-boot that the rule gave to another live
	// server, however alive the node looks: DISCOVERs with its MAC, which any host on the boot
	// network can send, kept such nodes from their owner for ever. Default 5 minutes.
	MaxKeep time.Duration
}

// fleetRuntime is a fleet server's shared state.
type fleetRuntime struct {
	opts  FleetOptions
	store *etcdstore.Store

	m         *fleet.Membership
	cur       atomic.Pointer[bootconfig.Authority]     // the rule's ownership for the live set
	curRes    atomic.Pointer[dhcpd.StaticReservations] // what DHCP answers now
	homeRes   dhcpd.StaticReservations                 // the home nodes, answered while fenced
	pending   atomic.Bool                              // deferred or kept nodes wait for a re-check
	liveIDs   atomic.Pointer[[]int]                    // live servers by index (unknown MACs' owners)
	peers     atomic.Pointer[[]witnessPeer]            // the other members, for the witness (fleetwitness.go)
	peerValid atomic.Bool                              // while fenced: a peer says it is a valid member
	term      atomic.Uint64                            // the membership term cur was computed under
	saveTerm  atomic.Uint64                            // the term the tracker's saves may go out in (fleetSaves)
	lease     atomic.Int64                             // the lease cur was computed under

	mu     sync.Mutex           // serialises reconcile
	dead   []string             // as last applied, for logs
	lostAt map[string]time.Time // nodes kept while lost to a live owner, since when (under mu)

	takeovers *prometheus.CounterVec
	owned     prometheus.Gauge
	live      prometheus.Gauge
	deferred  prometheus.Gauge
}

func newFleetRuntime(s *Server, o FleetOptions) (*fleetRuntime, error) {
	if o.Client == nil {
		return nil, errors.New("fleet: no etcd client")
	}
	store, err := etcdstore.New(o.Client, o.Membership)
	if err != nil {
		return nil, err
	}
	if o.TTL == 0 {
		o.TTL = fleet.DefaultTTL
	}
	if n := len(o.FleetSecret); n > 0 && n < MinFleetSecret {
		return nil, fmt.Errorf("fleet: fleet secret of %d bytes, want at least %d", n, MinFleetSecret)
	}
	if o.Reconcile == 0 {
		o.Reconcile = 500 * time.Millisecond
	}
	if o.MaxKeep == 0 {
		o.MaxKeep = 5 * time.Minute
	}
	f := &fleetRuntime{opts: o, store: store, m: o.Membership}
	empty := dhcpd.StaticReservations{}
	f.curRes.Store(&empty)
	home, err := s.auth.Reservations(s.cfg.DHCP.NetworkOptions())
	if err != nil {
		return nil, err
	}
	f.homeRes = home
	f.takeovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "bootfabric", Subsystem: "fleet", Name: "takeover_nodes_total",
		Help: "Nodes this server took over from a dead server, by the dead server.",
	}, []string{"from"})
	f.owned = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "bootfabric", Subsystem: "fleet", Name: "owned_nodes", Help: "Nodes this server answers now."})
	f.live = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "bootfabric", Subsystem: "fleet", Name: "live_servers", Help: "Live members of the fleet as this server last saw them."})
	f.deferred = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "bootfabric", Subsystem: "fleet", Name: "deferred_nodes", Help: "Nodes this server owns by the rule but leaves to their current holder until they finish booting."})
	valid := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "bootfabric", Subsystem: "fleet", Name: "membership_valid", Help: "1 while this server's lease renewal is on time (it acts for the fleet), else 0."}, func() float64 {
		if f.m.Valid() {
			return 1
		}
		return 0
	})
	// Lease renewals are the fleet client's bootfabric_fleet_lease_renewals_total{outcome}, which
	// serve --etcd adds to /metrics (Options.Gatherer): a second family of that name here would
	// make every scrape fail.
	written := prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "bootfabric", Subsystem: "fleet", Name: "state_records_written_total", Help: "Node boot-state records this server wrote to etcd (state_flush batches a node's transitions into one write)."}, func() float64 {
		return float64(f.store.Written())
	})
	if err := errors.Join(promreg.Register(s.reg, &f.takeovers), promreg.Register(s.reg, &f.owned), promreg.Register(s.reg, &f.live),
		promreg.Register(s.reg, &f.deferred), promreg.Register(s.reg, &valid), promreg.Register(s.reg, &written)); err != nil {
		return nil, err
	}
	return f, nil
}

// fleetReservations is DHCP's view of a fleet server's ownership: nothing before the first
// reconcile; the current ownership while the membership is valid in the term it was computed under;
// nothing once the lease was lost (the others may have taken the nodes over), until a reconcile
// under the new lease; else, fenced, the home nodes it answered at its last reconcile, or nothing
// when a peer says it is still a valid member (this server is the one cut off: fleetwitness.go).
type fleetReservations struct{ f *fleetRuntime }

// Lookup implements dhcpd.Reservations.
func (r fleetReservations) Lookup(mac net.HardwareAddr) (dhcpd.Reservation, bool) {
	m := r.f.m
	valid, term := m.Valid(), m.Term()
	switch {
	case valid && term == r.f.term.Load():
		return (*r.f.curRes.Load()).Lookup(mac)
	case m.LeaseID() != r.f.lease.Load() || leaseLost(m):
		return dhcpd.Reservation{}, false // a new lease: the fleet went on without this server
	case r.f.peerValid.Load():
		return dhcpd.Reservation{}, false // cut off alone: the others act for the fleet
	}
	// Fenced, or valid again on the same lease before the next reconcile: nobody can have
	// taken a node over while the lease lived, so the home nodes this server answered at its last
	// reconcile are still its own. A home node another server held then (taken over in an
	// earlier partition and still booting there) stays with that server.
	if _, ok := (*r.f.curRes.Load()).Lookup(mac); !ok {
		return dhcpd.Reservation{}, false
	}
	return r.f.homeRes.Lookup(mac)
}

// leaseLost says whether m's current lease is known to be gone.
func leaseLost(m *fleet.Membership) bool {
	select {
	case <-m.Lost():
		return true
	default:
		return false
	}
}

// runFleet follows the live set until ctx ends, re-applying the ownership rule on every change
// and every Reconcile interval while nodes are deferred or kept, while the live set changed
// within settleWindow, and once every resyncEvery.
func (s *Server) runFleet(ctx context.Context) error {
	go s.runWitness(ctx)
	f := s.fleet
	members := f.opts.Client.WatchMembers(ctx)
	tick := time.NewTicker(f.opts.Reconcile)
	defer tick.Stop()
	termTick := time.NewTicker(termCheck)
	defer termTick.Stop()
	var live []fleet.Member
	var settleUntil, last time.Time
	seen := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case ms, ok := <-members:
			if !ok {
				return nil
			}
			live, seen = ms, true
			peers := peersOf(s.cfg.Servers[s.cfg.ServerID].Name, ms)
			f.peers.Store(&peers)
			settleUntil = time.Now().Add(settleWindow)
		case <-tick.C:
			if !seen || !f.recheckDue(time.Now(), settleUntil, last) {
				continue
			}
		case <-termTick.C:
			ms, ok := s.membersAfterLapse(ctx)
			if !seen || !ok {
				continue
			}
			live = ms
		}
		last = time.Now()
		if err := s.reconcile(ctx, live); err != nil {
			s.log.Warn("fleet ownership", zap.Error(err))
		}
	}
}

// settleWindow is how long after a change of the live set a server keeps re-applying the rule
// every Reconcile interval. A peer that reacts to the change after this server did may hand a
// node to it then (the peer's own view was a change behind): the record names this server, which
// tracks nothing of it, while the rule's owner waits for this server to let go. Only a re-check
// here writes the handoff on (the node's record is "stale", see planOwnership).
const settleWindow = 10 * time.Second

// resyncEvery bounds the wait of such a node when the late peer lagged past settleWindow.
const resyncEvery = time.Minute

// recheckDue says whether a Reconcile tick at now re-applies the rule, given the end of the
// settle window and the last reconcile.
func (f *fleetRuntime) recheckDue(now, settleUntil, last time.Time) bool {
	return f.pending.Load() || now.Before(settleUntil) || now.Sub(last) >= resyncEvery
}

// firstReconcileWait bounds the ownership computed before a fleet server's endpoints answer: an
// etcd that does not answer within it leaves the first ownership to the fleet loop.
const firstReconcileWait = 5 * time.Second

// reconcileFirst computes this server's nodes once before its endpoints answer. Without it a
// server started (or restarted by a new revision) answered its first requests with no node at all:
// an operator's reboot of a healthy node went unheard, and the node's TFTP then counted as an
// unknown address's.
func (s *Server) reconcileFirst(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, firstReconcileWait)
	defer cancel()
	ms, _, err := s.fleet.opts.Client.Members(rctx)
	if err == nil {
		peers := peersOf(s.cfg.Servers[s.cfg.ServerID].Name, ms)
		s.fleet.peers.Store(&peers)
		err = s.reconcile(rctx, ms)
	}
	if err != nil {
		s.log.Warn("fleet ownership before serving: the fleet loop tries again", zap.Error(err))
	}
}

// membersAfterLapse reads the live set afresh when the membership is valid in a term the current
// ownership was not computed under (valid again after a lapse: the watch may not have caught up
// with what changed meanwhile). ok is false when there is nothing to do or the read failed.
func (s *Server) membersAfterLapse(ctx context.Context) (_ []fleet.Member, ok bool) {
	f := s.fleet
	m := f.m
	if !m.Valid() || m.Term() == f.term.Load() {
		return nil, false
	}
	ms, _, err := f.opts.Client.Members(ctx)
	if err != nil {
		s.log.Warn("fleet members after a lapse of the membership", zap.Error(err))
		return nil, false
	}
	return ms, true
}

// termCheck is how often the fleet loop looks for a new membership term: until it has reconciled
// under the new term, the server answers at most its home nodes.
const termCheck = 100 * time.Millisecond

// keepFor bounds how long a server keeps a node it lost to a live server after the node's last
// event: a boot that went quiet (its record resumed from a dead server, say, whose last write was
// lost) must not hold the node away from its owner for ever.
const keepFor = time.Minute

// stillBooting says whether the named node showed a sign of life within keepFor.
func (s *Server) stillBooting(name string) bool {
	n, ok := s.tracker.Node(name)
	if !ok {
		return false
	}
	last := n.LastSeen
	if last.IsZero() {
		last = n.Since
	}
	return s.tracker.Now().Sub(last) < keepFor
}

// midBoot says whether a node in state st is in the middle of a boot: a server that holds it keeps
// it, and a returning owner waits.
func midBoot(st nodestate.State) bool {
	return st != nodestate.Pending && st != nodestate.Healthy && st != nodestate.Failed
}

// fleetView is the live set as one reconcile sees it.
type fleetView struct {
	me        string          // this server's name
	live      map[string]bool // live members' names, this server included
	dead      []int           // configured servers that are neither live nor in failed_servers
	deadNames []string
}

// viewOf builds the fleet view of the live members.
func (s *Server) viewOf(members []fleet.Member) fleetView {
	v := fleetView{me: s.cfg.Servers[s.cfg.ServerID].Name, live: map[string]bool{}}
	v.live[v.me] = true
	for _, mb := range members {
		v.live[mb.Name] = true
	}
	for i, srv := range s.cfg.Servers {
		if !v.live[srv.Name] && !slices.Contains(s.cfg.FailedServers, i) {
			v.dead = append(v.dead, i)
			v.deadNames = append(v.deadNames, srv.Name)
		}
	}
	return v
}

// liveIDs returns the live servers by index, those in failed_servers left out.
func (s *Server) liveIDs(v fleetView) []int {
	var ids []int
	for i, srv := range s.cfg.Servers {
		if v.live[srv.Name] && !slices.Contains(s.cfg.FailedServers, i) {
			ids = append(ids, i)
		}
	}
	return ids
}

// ownershipPlan is what the ownership rule makes of this server's nodes in one reconcile.
type ownershipPlan struct {
	final    []*bootconfig.InventoryNode // the nodes this server answers from now on
	deferred int                         // nodes gained by the rule, left to a live holder for now
	kept     int                         // nodes lost by the rule, kept here until their boot ends
	handoff  map[string]string           // tracked nodes released now -> their new owner
	// displaced are tracked nodes this server owns that another live server holds: released
	// without a handoff, their unsaved changes dropped.
	displaced []string
	stale     map[string]nodestate.NodeStatus // untracked nodes whose record still names this server
}

// planOwnership applies the ownership rule au to every inventory node, given the nodes' records
// and what this server tracks now.
func (s *Server) planOwnership(au *bootconfig.Authority, v fleetView, recs map[string]nodestate.NodeStatus) ownershipPlan {
	p := ownershipPlan{handoff: map[string]string{}, stale: map[string]nodestate.NodeStatus{}}
	lostAt := map[string]time.Time{}
	defer func() { s.fleet.lostAt = lostAt }()
	inv := s.auth.Inventory()
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		owner := au.Owner(n)
		r, hasRec := recs[n.Name]
		if owner == s.cfg.ServerID {
			p.planOwned(n, s.tracker, hasRec && v.heldByOtherLive(r))
			continue
		}
		ownerName := ""
		if owner >= 0 {
			ownerName = s.cfg.Servers[owner].Name
		}
		st, tracked := s.tracker.State(n.Name)
		switch {
		case tracked && s.keepWhileBooting(n.Name, st, ownerName, v, lostAt):
			// Lost to a live server while booting here: keep it until the boot ends.
			p.kept++
			p.final = append(p.final, n)
		case tracked:
			p.handoff[n.Name] = ownerName
		case hasRec && r.Server == v.me && ownerName != v.me:
			// Named as holder but not tracked (this server restarted): hand it off too, or its
			// new owner would wait for it forever.
			r.Server = ownerName
			p.stale[n.Name] = r
		}
	}
	return p
}

// planOwned plans a node the rule gives this server; heldElsewhere says that its record names
// another live server as its holder.
//
// A node moves from one live server to another only once the holder has handed it off (its
// record names the new owner): the holder keeps a node mid-boot until the boot ends, and answers
// it until it has written the handoff, so the two never answer one node at once. A dead holder
// hands nothing off: take over at once. A node tracked here that another live server holds was
// taken over while this server was cut off from the fleet: leave it there too, and drop what
// this server did meanwhile rather than overwrite the holder's record.
func (p *ownershipPlan) planOwned(n *bootconfig.InventoryNode, t *nodestate.Tracker, heldElsewhere bool) {
	if !heldElsewhere {
		p.final = append(p.final, n)
		return
	}
	p.deferred++
	if _, tracked := t.State(n.Name); tracked {
		p.displaced = append(p.displaced, n.Name)
	}
}

// heldByOtherLive says whether record r names another live server as the node's holder.
func (v fleetView) heldByOtherLive(r nodestate.NodeStatus) bool {
	return r.Server != "" && r.Server != v.me && v.live[r.Server]
}

// keepWhileBooting says whether a tracked node in state st, lost to owner, stays here for now:
// it is mid-boot, still showing signs of life, its new owner is live (a dead one could not answer
// it anyway), and it has not been kept MaxKeep already. A node kept is recorded in lostAt with the
// time it was first kept (carried over from the last reconcile).
func (s *Server) keepWhileBooting(name string, st nodestate.State, owner string, v fleetView, lostAt map[string]time.Time) bool {
	if !midBoot(st) || owner == "" || !v.live[owner] || !s.stillBooting(name) {
		return false
	}
	now := s.tracker.Now()
	since, ok := s.fleet.lostAt[name]
	if !ok {
		since = now
	}
	if now.Sub(since) >= s.fleet.opts.MaxKeep {
		return false
	}
	lostAt[name] = since
	return true
}

// loadRecords returns the fleet's boot-state records by node name.
func (f *fleetRuntime) loadRecords() (map[string]nodestate.NodeStatus, error) {
	recList, err := f.store.Load()
	if err != nil {
		return nil, err
	}
	recs := make(map[string]nodestate.NodeStatus, len(recList))
	for _, r := range recList {
		recs[r.Name] = r
	}
	return recs, nil
}

// reconcile applies the ownership rule to the live members.
func (s *Server) reconcile(ctx context.Context, members []fleet.Member) error {
	f := s.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.m
	if !m.Valid() {
		return nil // fenced: this view may be stale; take nothing over
	}
	term, lease := m.Term(), m.LeaseID()
	v := s.viewOf(members)
	a, err := bootconfig.AssignServers(s.hier, s.cfg.Mapping, len(s.cfg.Servers), s.cfg.FailedServers, v.dead)
	if err != nil {
		return err
	}
	au, err := bootconfig.NewAuthority(s.auth.Inventory(), a, s.cfg.ServerID)
	if err != nil {
		return err
	}
	recs, err := f.loadRecords()
	if err != nil {
		return err
	}
	p := s.planOwnership(au, v, recs)
	if err := s.stopAnsweringReleased(p); err != nil {
		return err
	}
	added, removed, saveErr := s.applyOwnership(p, recs, term)
	res, err := bootconfig.NodeReservations(p.final, s.cfg.DHCP.NetworkOptions())
	if err != nil {
		return err
	}
	liveIDs := s.liveIDs(v)
	f.liveIDs.Store(&liveIDs)
	f.cur.Store(au)
	f.curRes.Store(&res)
	f.term.Store(term)
	f.lease.Store(lease)
	// Re-check soon while nodes wait for a handoff, a boot to end, or a handoff to be written.
	f.pending.Store(p.deferred > 0 || p.kept > 0 || len(p.stale) > 0 || len(p.handoff) > 0 && saveErr != nil)
	f.owned.Set(float64(len(p.final)))
	f.live.Set(float64(len(v.live)))
	f.deferred.Set(float64(p.deferred))
	s.recordTakeovers(ctx, v, added, recs)
	if len(added) > 0 || len(removed) > 0 || strings.Join(v.deadNames, ",") != strings.Join(f.dead, ",") {
		s.log.Info("fleet ownership", zap.Strings("dead", v.deadNames), zap.Int("live", len(v.live)),
			zap.Int("owned", len(p.final)), zap.Int("gained", len(added)), zap.Int("released", len(removed)),
			zap.Int("deferred", p.deferred), zap.Int("kept", p.kept))
	}
	f.dead = v.deadNames
	return nil
}

// stopAnsweringReleased makes DHCP answer, of the nodes it answers now, only those the plan
// keeps, before applyOwnership writes the handoffs: the new owner answers a node as soon as it
// reads the record naming it, and two servers must never answer one node at once. Nodes gained
// are answered once tracked, after applyOwnership.
func (s *Server) stopAnsweringReleased(p ownershipPlan) error {
	if len(p.handoff) == 0 && len(p.displaced) == 0 {
		return nil
	}
	var keep []*bootconfig.InventoryNode
	for _, n := range p.final {
		if _, tracked := s.tracker.State(n.Name); tracked {
			keep = append(keep, n)
		}
	}
	res, err := bootconfig.NodeReservations(keep, s.cfg.DHCP.NetworkOptions())
	if err != nil {
		return err
	}
	s.fleet.curRes.Store(&res)
	return nil
}

// applyOwnership makes the tracker follow the plan, made under membership term: the released
// nodes' records name their new owners, the tracker holds exactly the plan's nodes, and the stale
// records are handed off. It returns the nodes gained and released, and the error of saving the handed-off states (logged).
func (s *Server) applyOwnership(p ownershipPlan, recs map[string]nodestate.NodeStatus, term uint64) (added, removed []string, saveErr error) {
	if len(p.displaced) > 0 {
		s.tracker.Discard(p.displaced)
		s.log.Warn("nodes taken over while this server was cut off from the fleet stay with their holder until their boot ends",
			zap.Int("nodes", len(p.displaced)), zap.Strings("first", p.displaced[:min(len(p.displaced), 5)]))
	}
	// What this server did while cut off is dropped where another holds the node now; the rest
	// may be saved from here on, under the term this plan was made in.
	s.fleet.saveTerm.Store(term)
	added, removed, saveErr = s.tracker.Retrack(trackedNodes(p.final), gainedRecords(recs), p.handoff)
	if saveErr != nil {
		s.log.Warn("saving boot states before an ownership change", zap.Error(saveErr))
	}
	if len(p.stale) > 0 {
		list := make([]nodestate.NodeStatus, 0, len(p.stale))
		for _, name := range sortedKeys(p.stale) {
			list = append(list, p.stale[name])
		}
		if err := s.fleet.store.Save(list); err != nil {
			s.log.Warn("handing off nodes", zap.Error(err))
		}
	}
	return added, removed, saveErr
}

// gainedRecords returns recs with the token files (script, overlay) counted as served in every
// open attempt (Retrack uses a record only for a node new to this server's tracker). The server
// that held the node last may have served them after its last write (a partition cuts it off etcd
// before its records go out), and the record may name this server from an earlier hold while
// another served them since: serving them again here would hand the attempt's token to a host that
// took the node's address. The node's own firmware or iPXE starting over makes a DHCP exchange with
// this server first, which gives them out again.
func gainedRecords(recs map[string]nodestate.NodeStatus) map[string]nodestate.NodeStatus {
	out := make(map[string]nodestate.NodeStatus, len(recs))
	for name, r := range recs {
		if r.AttemptOpen() {
			r.Served = []nodestate.TokenFile{nodestate.ScriptFile, nodestate.OverlayFile}
		}
		out[name] = r
	}
	return out
}

// recordTakeovers counts, logs and records in the fleet's events the gained nodes whose last
// holder is dead, per dead holder.
func (s *Server) recordTakeovers(ctx context.Context, v fleetView, added []string, recs map[string]nodestate.NodeStatus) {
	f := s.fleet
	from := map[string][]string{}
	for _, name := range added {
		if r, ok := recs[name]; ok && r.Server != "" && r.Server != v.me && !v.live[r.Server] {
			from[r.Server] = append(from[r.Server], name)
		}
	}
	for _, dn := range sortedKeys(from) {
		nodes := from[dn]
		mid := 0
		for _, name := range nodes {
			if midBoot(recs[name].State) {
				mid++
			}
		}
		f.takeovers.WithLabelValues(dn).Add(float64(len(nodes)))
		s.log.Info("takeover", zap.String("from", dn), zap.String("to", v.me), zap.Int("nodes", len(nodes)), zap.Int("mid_boot", mid))
		ev, _ := json.Marshal(TakeoverEvent{From: dn, To: v.me, Nodes: len(nodes), MidBoot: mid, At: time.Now().UTC()})
		if _, err := f.opts.Client.AppendEvent(ctx, "takeover", ev); err != nil {
			s.log.Warn("recording a takeover", zap.Error(err))
		}
	}
}

// TakeoverEvent is the record of one takeover in the fleet's events (events/takeover/...).
type TakeoverEvent struct {
	From    string    `json:"from"`
	To      string    `json:"to"`
	Nodes   int       `json:"nodes"`
	MidBoot int       `json:"mid_boot"`
	At      time.Time `json:"at"`
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
