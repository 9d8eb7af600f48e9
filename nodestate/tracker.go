package nodestate

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/bootfabric/bootfabric/internal/promreg"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Node is what a tracker needs of an inventory node.
type Node struct {
	Name     string
	MAC      net.HardwareAddr
	IP       netip.Addr // the reserved address; invalid when there is none
	Position string
	Profile  string // "" is the tracker's default profile
}

// ErrUnknownNode is returned for a node the tracker does not hold.
var ErrUnknownNode = errors.New("unknown node")

// TrackerOptions configures a Tracker. Zero values: no persistence, time.Now, no metrics, no logs.
type TrackerOptions struct {
	// Store persists the states; nil keeps them in memory only. The tracker does not close it.
	Store StateStore
	// Shared says the store holds other servers' nodes too (a fleet): saved nodes this tracker
	// does not track are left alone instead of deleted.
	Shared bool
	// Flush is how long changes may wait before being saved together; 0 saves each at once. With
	// Flush > 0, Run must be running (or Flush called).
	Flush time.Duration
	// Now is the clock.
	Now func() time.Time
	// Registerer receives the boot-state metrics.
	Registerer prometheus.Registerer
	Logger     *zap.Logger
	// Server and ServerID label summaries.
	Server   string
	ServerID int
	// ResetOnDiscover lets any DISCOVER start a booted or healthy node over (reset_on_discover).
	ResetOnDiscover bool
	// DHCPStartsBoots says the server answers the nodes' DHCP, whose exchange starts each boot
	// attempt: then a download, from a node in no attempt yet, moves nothing (the address
	// alone would let another host open an attempt, and take its token); the node's next
	// DISCOVER starts one.
	DHCPStartsBoots bool
	// History bounds each node's kept transitions. 0: 32.
	History int
}

// Tracker holds the boot state of every node this server owns, applies events to it through Next,
// and persists it. Safe for concurrent use.
type Tracker struct {
	opts TrackerOptions
	log  *zap.Logger
	now  func() time.Time

	mu    sync.Mutex
	nodes map[string]*NodeStatus
	order []string
	byMAC map[string]string // by the MAC's text form, NodeStatus.MAC
	byHW  map[string]string // by the raw hardware address bytes: the DHCP path's lookup, without allocating
	byIP  map[netip.Addr]string
	dirty map[string]bool // nodes changed since the last save, to be saved within Flush
	// lazy holds nodes whose only unsaved changes are a DHCP handshake (states discover, offered,
	// bound) or a last-seen time, with when that began: they are saved within lazyFlush. A DHCP
	// exchange lasts milliseconds and a client repeats it after any restart, while under a DHCP
	// storm writing every handshake of every node was the serve path's largest cost.
	lazy map[string]time.Time
	// lazyQ lists the lazy nodes in the order they became lazy (oldest first from lazyHead), so
	// that a flush finds the due ones without scanning them all; an entry whose node left lazy
	// (saved, or made urgent) since is skipped.
	lazyQ    []lazyEntry
	lazyHead int
	// live holds each node's boot counters and transfers (live.go); nil until the first.
	live map[string]*liveNode

	saveMu  sync.Mutex // serialises saves so that an older snapshot never overwrites a newer one
	stopped bool       // under saveMu: the store is closed, changes stay in memory
	kick    chan struct{}

	defaultProfile string

	gauge       *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	reports     *prometheus.CounterVec
	// The vectors' children by state, resolved once: WithLabelValues hashes its labels on every call.
	stateGauge        [numStates]prometheus.Gauge
	transitionCounter [numStates]prometheus.Counter
}

// NewTracker tracks the given nodes, restoring their saved states from the store. Saved nodes no
// longer owned are dropped; a node whose MAC changed starts afresh.
func NewTracker(nodes []Node, defaultProfile string, opts TrackerOptions) (*Tracker, error) {
	t := &Tracker{
		opts: opts, log: opts.Logger, now: opts.Now,
		nodes: map[string]*NodeStatus{}, byMAC: map[string]string{}, byHW: map[string]string{}, byIP: map[netip.Addr]string{},
		kick: make(chan struct{}, 1), dirty: map[string]bool{}, lazy: map[string]time.Time{},
	}
	if t.log == nil {
		t.log = zap.NewNop()
	}
	if t.now == nil {
		t.now = time.Now
	}
	var saved map[string]NodeStatus
	if opts.Store != nil {
		list, err := opts.Store.Load()
		if err != nil {
			return nil, err
		}
		saved = make(map[string]NodeStatus, len(list))
		for _, n := range list {
			saved[n.Name] = n
		}
	}
	t.defaultProfile = defaultProfile
	restored := 0
	for _, n := range nodes {
		if _, dup := t.nodes[n.Name]; dup {
			return nil, fmt.Errorf("node %s listed twice", n.Name)
		}
		if t.addLocked(n, saved) {
			restored++
		}
	}
	if opts.Store != nil && !opts.Shared {
		// Nodes no longer served here (inventory or mapping changed) leave the database.
		var gone []string
		for name := range saved {
			if _, ok := t.nodes[name]; !ok {
				gone = append(gone, name)
			}
		}
		slices.Sort(gone)
		if err := opts.Store.Delete(gone); err != nil {
			return nil, err
		}
	}
	if err := t.initMetrics(opts.Registerer); err != nil {
		return nil, err
	}
	t.log.Info("boot states loaded", zap.Int("nodes", len(nodes)), zap.Int("restored", restored))
	return t, nil
}

// addLocked starts tracking inventory node n, from its saved state when saved has one for the same
// MAC (the boot resumes where it was), else from Pending. It reports whether the state was restored.
func (t *Tracker) addLocked(n Node, saved map[string]NodeStatus) bool {
	profile := n.Profile
	if profile == "" {
		profile = t.defaultProfile
	}
	st := &NodeStatus{Name: n.Name, MAC: n.MAC.String(), Position: n.Position, Profile: profile, State: Pending, Times: map[State]time.Time{}}
	if n.IP.IsValid() {
		st.IP = n.IP.String()
	}
	restored := false
	if s, ok := saved[n.Name]; !ok || s.MAC != st.MAC || s.State >= numStates {
		t.markLocked(n.Name, true, time.Time{}) // the first save records the node even before any event
	} else {
		restored = true
		// Own copies of the map and the slice: applyLocked changes both in place.
		st.State, st.Since, st.Attempt, st.Times = s.State, s.Since, s.Attempt, maps.Clone(s.Times)
		st.LastEvent, st.LastSeen, st.Error, st.Health, st.History = s.LastEvent, s.LastSeen, s.Error, s.Health, slices.Clone(s.History)
		st.HistoryDropped, st.RebootRequested, st.Reported, st.PoweredOff = s.HistoryDropped, s.RebootRequested, s.Reported, s.PoweredOff
		st.Served = slices.Clone(s.Served)
		st.Server = s.Server
		if st.Times == nil {
			st.Times = map[State]time.Time{}
		}
		if st.IP == "" && s.IP != "" {
			st.IP = s.IP // learned from a DHCP ACK (proxy mode)
		}
	}
	if t.opts.Server != "" && st.Server != t.opts.Server {
		st.Server = t.opts.Server
		t.markLocked(n.Name, true, time.Time{})
	}
	t.nodes[n.Name] = st
	t.order = append(t.order, n.Name)
	t.byMAC[st.MAC] = n.Name
	t.byHW[string(n.MAC)] = n.Name
	if a, err := netip.ParseAddr(st.IP); err == nil {
		t.byIP[a] = n.Name
	}
	return restored
}

// Now reads the tracker's clock (TrackerOptions.Now), the one its states' times come from.
func (t *Tracker) Now() time.Time { return t.now() }

// Discard drops the unsaved changes of the named nodes: another server holds them now (this one
// was cut off from the fleet), and its record, not this server's stale one, is the truth.
func (t *Tracker) Discard(names []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, name := range names {
		delete(t.dirty, name)
		delete(t.lazy, name)
	}
}

// Retrack changes the set of tracked nodes to nodes (in that order), as when a fleet's ownership
// moves: nodes no longer listed are saved and dropped; nodes new to the tracker start from their
// state in saved (a takeover resumes the boot from the dead server's last record) or from Pending.
// A dropped node named in handoff is saved last with that server as its holder (a fleet's
// handoff), in one write after it is dropped. It returns the names added and removed.
func (t *Tracker) Retrack(nodes []Node, saved map[string]NodeStatus, handoff map[string]string) (added, removed []string, err error) {
	want := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		want[n.Name] = true
	}
	t.mu.Lock()
	for _, name := range t.order {
		if !want[name] {
			removed = append(removed, name)
		}
	}
	t.mu.Unlock()
	// No other save runs until the dropped nodes' last one is written: an older save of theirs
	// landing after it would name this server their holder again.
	t.saveMu.Lock()
	// Save what is pending first, so the removed nodes' events so far reach the store.
	var ferr error
	if t.opts.Store != nil {
		ferr = t.flushSaveLocked(time.Time{})
	}
	t.mu.Lock()
	last := t.dropLocked(removed, handoff)
	t.order = t.order[:0]
	for _, n := range nodes {
		if _, ok := t.nodes[n.Name]; !ok {
			t.addLocked(n, saved)
			t.order = t.order[:len(t.order)-1] // addLocked appended it; the order is rebuilt here
			added = append(added, n.Name)
			t.stateGauge[t.nodes[n.Name].State].Inc()
		}
		t.order = append(t.order, n.Name)
	}
	t.mu.Unlock()
	if len(last) > 0 && t.opts.Store != nil && !t.stopped {
		if err := t.opts.Store.Save(last); err != nil {
			ferr = errors.Join(ferr, fmt.Errorf("handing off %d nodes: %w", len(last), err))
		}
	}
	t.saveMu.Unlock() // before changed, which may flush
	if len(added) > 0 {
		t.changed()
	}
	return added, removed, ferr
}

// dropLocked stops tracking the named nodes and returns the last status of those in handoff,
// naming their new holder. Every change accepted for them is in it: a later one finds no node.
func (t *Tracker) dropLocked(names []string, handoff map[string]string) []NodeStatus {
	var last []NodeStatus
	for _, name := range names {
		n := t.nodes[name]
		if to, ok := handoff[name]; ok {
			c := copyStatus(n)
			c.Server = to
			last = append(last, c)
		}
		t.stateGauge[n.State].Dec()
		delete(t.nodes, name)
		delete(t.live, name)
		delete(t.dirty, name)
		delete(t.lazy, name)
		if t.byMAC[n.MAC] == name {
			delete(t.byMAC, n.MAC)
		}
		if hw, err := net.ParseMAC(n.MAC); err == nil && t.byHW[string(hw)] == name {
			delete(t.byHW, string(hw))
		}
		if a, err := netip.ParseAddr(n.IP); err == nil && t.byIP[a] == name {
			delete(t.byIP, a)
		}
	}
	return last
}

func (t *Tracker) initMetrics(reg prometheus.Registerer) error {
	t.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "bootfabric", Subsystem: "boot", Name: "nodes",
		Help: "Nodes of this boot server by boot state.",
	}, []string{"state"})
	t.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "bootfabric", Subsystem: "boot", Name: "transitions_total",
		Help: "Boot state transitions by the state entered.",
	}, []string{"state"})
	t.reports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "bootfabric", Subsystem: "boot", Name: "health_reports_total",
		Help: "Health reports received from nodes, by status.",
	}, []string{"status"})
	if err := errors.Join(promreg.Register(reg, &t.gauge), promreg.Register(reg, &t.transitions), promreg.Register(reg, &t.reports)); err != nil {
		return err
	}
	counts := make([]int, numStates)
	for _, n := range t.nodes {
		counts[n.State]++
	}
	for _, s := range States() {
		t.stateGauge[s] = t.gauge.WithLabelValues(s.String())
		t.stateGauge[s].Set(float64(counts[s]))
		t.transitionCounter[s] = t.transitions.WithLabelValues(s.String())
	}
	return nil
}

// NameByMAC returns the name of the tracked node with the given MAC.
func (t *Tracker) NameByMAC(mac net.HardwareAddr) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name, ok := t.byMAC[mac.String()]
	return name, ok
}

// ObserveDHCP applies the boot events of one handled DHCP request from the node with hardware
// address mac, under one lock: ip (when valid) is the address an ACK gave it. It is the DHCP
// reply path's only call into the tracker, so it allocates nothing on the way (detail is one of
// a fixed set of strings) and reports false for a MAC it does not track.
//
// from is the kind of client that sent the request (ClientUnknown where it is not known): with
// it, a DISCOVER from firmware or iPXE mid-boot starts the attempt over (NextOnDiscover).
func (t *Tracker) ObserveDHCP(mac net.HardwareAddr, evs []Event, ip netip.Addr, detail string, from Client) bool {
	t.mu.Lock()
	name, ok := t.byHW[string(mac)]
	if !ok {
		t.mu.Unlock()
		return false
	}
	n := t.nodes[name]
	// The changes are logged after the lock is let go; a request brings one to three events, so
	// the buffer stays on the stack and the reply path allocates nothing more than the log does.
	var buf [4]Transition
	moves := buf[:0]
	for _, ev := range evs {
		if ev == EvAck && ip.IsValid() && !addressSettled(n) {
			t.learnIPLocked(n, ip)
		}
		if tr, ch := t.applyLocked(n, ev, detail, from); ch {
			moves = append(moves, tr)
		}
	}
	urgent := t.dirty[name]
	t.mu.Unlock()
	for _, tr := range moves {
		t.logTransition(name, tr)
	}
	if urgent {
		t.changed()
	}
	return true
}

// State returns a node's current state.
func (t *Tracker) State(name string) (State, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.nodes[name]
	if !ok {
		return 0, false
	}
	return n.State, true
}

// NameByIP returns the name of the tracked node with the given address (reserved or learned).
func (t *Tracker) NameByIP(ip netip.Addr) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name, ok := t.byIP[ip.Unmap()]
	return name, ok
}

// addressSettled says whether n's address stays what it is whatever DHCP acknowledges now: its
// attempt went past the DHCP exchange (it fetched boot files from that address, or booted, or
// reported), so a later ACK to another address is another client with its MAC (the booted
// system, or a host spoofing it), and only a new attempt (the operator's reboot) moves it.
func addressSettled(n *NodeStatus) bool {
	return n.IP != "" && n.State >= NBP && n.State != Failed
}

// LearnIP records the address a node was given (by DHCP), so that its TFTP and HTTP requests can
// be attributed to it.
func (t *Tracker) LearnIP(name string, ip netip.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n, ok := t.nodes[name]; ok {
		t.learnIPLocked(n, ip)
	}
}

func (t *Tracker) learnIPLocked(n *NodeStatus, ip netip.Addr) {
	ip = ip.Unmap()
	if !ip.IsValid() || t.byIP[ip] == n.Name && n.IP != "" {
		return // the common case, a node asking again for its address: no string to build
	}
	if n.IP == ip.String() {
		t.byIP[ip] = n.Name
		return
	}
	if old, err := netip.ParseAddr(n.IP); err == nil && t.byIP[old] == n.Name {
		delete(t.byIP, old)
	}
	n.IP = ip.String()
	t.byIP[ip] = n.Name
	t.markLocked(n.Name, true, time.Time{})
}

// Observe applies event ev to the named node and returns the resulting transition and whether the
// state changed. detail is kept with the transition (and as the error when the node fails).
func (t *Tracker) Observe(name string, ev Event, detail string) (Transition, bool, error) {
	t.mu.Lock()
	n, ok := t.nodes[name]
	if !ok {
		t.mu.Unlock()
		return Transition{}, false, fmt.Errorf("%w %q", ErrUnknownNode, name)
	}
	tr, changed := t.applyLocked(n, ev, detail, ClientUnknown)
	urgent := t.dirty[name]
	t.mu.Unlock()
	if urgent {
		t.changed()
	}
	if changed {
		t.logTransition(name, tr)
	}
	return tr, changed, nil
}

// logTransition logs one change of a node's state at info level: at the default level an admin
// sees each node go through its boot (one line a step), and nothing for events that change
// nothing (a DHCP retransmit, a second download).
func (t *Tracker) logTransition(name string, tr Transition) {
	ce := t.log.Check(zap.InfoLevel, "node state")
	if ce == nil {
		return
	}
	fields := []zap.Field{zap.String("node", name), zap.Stringer("from", tr.From), zap.Stringer("to", tr.To), zap.Stringer("event", tr.Event)}
	if tr.Detail != "" {
		fields = append(fields, zap.String("detail", tr.Detail))
	}
	ce.Write(fields...)
}

// Report records a health report (status "ok" or "failed") and applies its event.
func (t *Tracker) Report(name string, h Health) (State, error) {
	ev := EvHealthOK
	switch h.Status {
	case "ok":
	case "failed":
		ev = EvHealthFailed
	default:
		return 0, fmt.Errorf("status %q is not ok or failed", h.Status)
	}
	t.mu.Lock()
	n, ok := t.nodes[name]
	if !ok {
		t.mu.Unlock()
		return 0, fmt.Errorf("%w %q", ErrUnknownNode, name)
	}
	if h.At.IsZero() {
		h.At = t.now()
	}
	h.At = h.At.UTC()
	n.Health = &h
	n.Reported = true
	t.markLocked(n.Name, true, t.now())
	detail := ""
	if ev == EvHealthFailed {
		detail = "health report: failed"
		if len(h.Details) > 0 {
			detail += ": " + string(h.Details)
		}
	}
	tr, changed := t.applyLocked(n, ev, detail, ClientUnknown)
	state := n.State
	t.mu.Unlock()
	if changed {
		t.logTransition(name, tr)
	}
	t.reports.WithLabelValues(h.Status).Inc()
	t.changed()
	return state, nil
}

// dhcpStage reports whether s is a state of the DHCP handshake, before any boot file.
func dhcpStage(s State) bool { return s == Discover || s == Offered || s == Bound }

// applyLocked applies event ev to node n: its state moves as Next says, with the attempt, times,
// error and history that go with the move. It returns the transition and whether the state
// changed.
func (t *Tracker) applyLocked(n *NodeStatus, ev Event, detail string, from Client) (Transition, bool) {
	now := t.now().UTC()
	if ev == EvDiscover && (n.RebootRequested || t.opts.ResetOnDiscover) {
		ev = EvRebootDiscover
	}
	if len(detail) > MaxDetailLen {
		detail = detail[:MaxDetailLen] + "..."
	}
	noteEvent(n, ev, now)
	to, changed := nextFor(n, ev, from)
	if changed && n.State == Pending && t.opts.DHCPStartsBoots && !dhcpEvent(ev) {
		to, changed = Pending, false
	}
	t.markLocked(n.Name, changed && !dhcpStage(to), now)
	tr := Transition{From: n.State, To: to, Event: ev, At: now, Detail: detail}
	t.countLocked(n, ev, n.State, to, changed)
	if !changed {
		return tr, false
	}
	if to == Discover {
		startAttempt(n)
	}
	if to == Failed {
		n.Error = detail
	} else if to == Healthy {
		n.Error = ""
	}
	t.stateGauge[n.State].Dec()
	t.stateGauge[to].Inc()
	t.transitionCounter[to].Inc()
	n.State, n.Since = to, now
	if _, seen := n.Times[to]; !seen {
		n.Times[to] = now
	}
	t.appendHistory(n, tr)
	return tr, true
}

// noteEvent records ev as n's latest event, at now, transition or not.
func noteEvent(n *NodeStatus, ev Event, now time.Time) {
	n.LastEvent, n.LastSeen = ev, now
	if ev == EvAck {
		// A DHCP exchange of the node's: its firmware or iPXE starting over may fetch the files
		// that carry the token once more.
		n.Served = nil
	}
}

// nextFor is Next for node n, with what the tracker knows of a DISCOVER (NextOnDiscover).
func nextFor(n *NodeStatus, ev Event, from Client) (State, bool) {
	if ev == EvDiscover || ev == EvRebootDiscover {
		return NextOnDiscover(n.State, ev, Discovery{From: from, Armed: n.RebootRequested})
	}
	return Next(n.State, ev)
}

// dhcpEvent says whether ev comes from the DHCP exchange (or the health report, which a pending
// node cannot make: AttemptOpen refuses it first).
func dhcpEvent(ev Event) bool {
	switch ev {
	case EvDiscover, EvRebootDiscover, EvOffer, EvAck, EvHealthOK, EvHealthFailed:
		return true
	}
	return false
}

// startAttempt begins a new boot attempt of n, about to enter Discover from its current state.
func startAttempt(n *NodeStatus) {
	if dhcpStage(n.State) {
		// A DHCP retry before any boot file: the failed handshake's entries give way to this
		// one (Attempt counts the retries), so that a node looping in DHCP keeps the history of
		// its last real boot, and the entry that began the loop, instead of 32 copies of it.
		k := len(n.History)
		for k > 0 && dhcpStage(n.History[k-1].From) && dhcpStage(n.History[k-1].To) {
			k--
		}
		n.History = n.History[:k]
	}
	// The previous attempt's timestamps no longer describe this boot.
	n.Attempt++
	if n.Times == nil {
		n.Times = map[State]time.Time{}
	}
	clear(n.Times) // snapshots hold copies, never this map
	n.Error = ""
	n.RebootRequested = false
	n.PoweredOff = false
	n.Reported = false
	n.Served = nil
}

// appendHistory appends tr to n's history, dropping the oldest entries beyond the configured
// length.
func (t *Tracker) appendHistory(n *NodeStatus, tr Transition) {
	keep := t.opts.History
	if keep <= 0 {
		keep = historyLen
	}
	if len(n.History) >= keep {
		// Drop the oldest in place (snapshots hold copies, never this slice), counting them.
		k := len(n.History) - keep + 1
		n.HistoryDropped += k
		n.History = n.History[:copy(n.History, n.History[k:])]
	}
	n.History = append(n.History, tr)
}

// OpenAttempt starts a new boot attempt of the named node unless one is open (AttemptOpen),
// without a state change: with DHCP off, a script fetch is the first sign of a boot.
func (t *Tracker) OpenAttempt(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.nodes[name]
	if !ok || n.AttemptOpen() {
		return
	}
	n.Attempt++
	n.Reported = false
	t.markLocked(name, true, time.Time{})
}

// ClaimServed records that file goes to the named node in its boot attempt attempt, once: it
// reports false when that attempt is no longer the node's, or file went out in it already.
func (t *Tracker) ClaimServed(name string, attempt int, file TokenFile) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.nodes[name]
	if !ok || n.Attempt != attempt || slices.Contains(n.Served, file) {
		return false
	}
	n.Served = append(n.Served, file)
	t.markLocked(name, false, t.now())
	return true
}

// RequestReboot records that the operator asked for the node's reboot: its next DISCOVER starts a
// new attempt whatever its state. It returns the node's status.
func (t *Tracker) RequestReboot(name string) (NodeStatus, error) {
	t.mu.Lock()
	n, ok := t.nodes[name]
	if !ok {
		t.mu.Unlock()
		return NodeStatus{}, fmt.Errorf("%w %q", ErrUnknownNode, name)
	}
	n.RebootRequested = true
	t.markLocked(name, true, time.Time{})
	c := copyStatus(n)
	t.mu.Unlock()
	t.changed()
	return c, nil
}

// PowerOff records that the operator powered the node off: it moves to pending (its attempt is
// over: a health report for it is refused, and its next DISCOVER starts a new one) and is marked
// powered off until then. It returns the node's status.
func (t *Tracker) PowerOff(name string) (NodeStatus, error) {
	t.mu.Lock()
	n, ok := t.nodes[name]
	if !ok {
		t.mu.Unlock()
		return NodeStatus{}, fmt.Errorf("%w %q", ErrUnknownNode, name)
	}
	n.PoweredOff = true
	t.markLocked(name, true, time.Time{})
	tr, changed := t.applyLocked(n, EvPowerOff, "powered off by the operator", ClientUnknown)
	c := copyStatus(n)
	t.mu.Unlock()
	if changed {
		t.logTransition(name, tr)
	}
	t.changed()
	return c, nil
}

func (t *Tracker) snapshotLocked() []NodeStatus {
	out := make([]NodeStatus, 0, len(t.order))
	for _, name := range t.order {
		out = append(out, copyStatus(t.nodes[name]))
	}
	return out
}

func copyStatus(n *NodeStatus) NodeStatus {
	c := *n
	c.Times = make(map[State]time.Time, len(n.Times))
	for k, v := range n.Times {
		c.Times[k] = v
	}
	c.History = slices.Clone(n.History)
	if n.Health != nil {
		h := *n.Health
		h.Details = slices.Clone(h.Details)
		c.Health = &h
	}
	return c
}

// Nodes returns a copy of every node's status in inventory order.
func (t *Tracker) Nodes() []NodeStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snapshotLocked()
}

// Node returns a copy of one node's status.
func (t *Tracker) Node(name string) (NodeStatus, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.nodes[name]
	if !ok {
		return NodeStatus{}, false
	}
	return copyStatus(n), true
}
