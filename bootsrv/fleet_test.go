package bootsrv

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
	"go.uber.org/zap/zaptest"
)

// fleetTestTTL is the lease TTL of the fleet members of the tests (startFleetMember's): short, so
// that a crashed member's nodes are taken over, and a cut-off member fenced, within seconds.
const fleetTestTTL = 2 * time.Second

// fleetMember is one in-process fleet server of a test: its own etcd client, so that closing the
// client without leaving stands for a crash (its lease then expires after the TTL).
type fleetMember struct {
	name       string
	srv        *Server
	client     *fleet.Client
	membership *fleet.Membership
	cancel     context.CancelFunc
	done       chan error
	stopOnce   sync.Once
}

// startFleetMember starts server id of the fixture's four-server configuration as a fleet member.
func startFleetMember(t *testing.T, f *fixture, endpoints []string, id int) *fleetMember {
	t.Helper()
	return startFleetMemberEdit(t, f, endpoints, id, nil)
}

// startFleetMemberEdit is startFleetMember with edit applied to the configuration.
func startFleetMemberEdit(t *testing.T, f *fixture, endpoints []string, id int, edit func(*bootconfig.Config)) *fleetMember {
	t.Helper()
	m, ctx := newFleetMember(t, f, endpoints, id, edit)
	go func() { m.done <- m.srv.Serve(ctx) }()
	return m
}

// newFleetMember is startFleetMemberEdit up to Serve, which the caller runs with ctx, sending its
// result to m.done.
func newFleetMember(t *testing.T, f *fixture, endpoints []string, id int, edit func(*bootconfig.Config)) (*fleetMember, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := fleet.Open(ctx, fleet.Options{Endpoints: endpoints, Fleet: "test", Log: zaptest.NewLogger(t).Named("etcd")})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cfg := f.config(t, func(c *bootconfig.Config) {
		c.ServerID = id
		c.Servers = fleetServers()
		c.StateDir = t.TempDir()
		if edit != nil {
			edit(c)
		}
	})
	// The test holds the membership (as serve --etcd does), so that a crash can leave it
	// unrevoked: the server never leaves on its own.
	// A fixed HTTP port is the member's URL, so that its peers can ask it as a witness.
	url := ""
	if _, port, _ := net.SplitHostPort(cfg.HTTP.Listen); port != "" && port != "0" {
		url = "http://" + cfg.HTTP.Listen
	}
	ms, err := JoinFleet(ctx, c, cfg.Servers[id].Name, MemberInfo{URL: url, Address: cfg.Servers[id].Address}, fleetTestTTL)
	if err != nil {
		cancel()
		c.Close()
		t.Fatal(err)
	}
	s, err := New(cfg, Options{Logger: zaptest.NewLogger(t).Named(cfg.Servers[id].Name), Fleet: &FleetOptions{Client: c, TTL: fleetTestTTL, Reconcile: 100 * time.Millisecond, Membership: ms, FleetSecret: testFleetSecret, MaxKeep: fleetTestMaxKeep}})
	if err != nil {
		cancel()
		c.Close()
		t.Fatal(err)
	}
	m := &fleetMember{name: cfg.Servers[id].Name, srv: s, client: c, membership: ms, cancel: cancel, done: make(chan error, 1)}
	t.Cleanup(m.stop)
	return m, ctx
}

// stop ends the server gracefully and leaves the fleet, once: a crashed member's cleanup calls it
// again (a second wait for its result would last the whole timeout).
func (m *fleetMember) stop() { m.stopOnce.Do(m.stopNow) }

func (m *fleetMember) stopNow() {
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
	}
	lctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	m.membership.Leave(lctx) // fails after a crash (client closed): the lease then expires
	m.client.Close()
}

// crash ends the server without leaving: its client closes first, so the lease is not revoked
// and expires after the TTL. The server itself stops in the background (as a killed process's
// sockets close), so that the time to a takeover counts from the crash alone.
func (m *fleetMember) crash(t *testing.T) {
	m.client.Close()
	stopped := make(chan struct{})
	go func() { m.stop(); close(stopped) }()
	t.Cleanup(func() { <-stopped })
}

func fleetServers() []bootconfig.ServerEntry {
	return []bootconfig.ServerEntry{{Name: "bs0", Address: "127.0.0.1"}, {Name: "bs1", Address: "127.0.0.2"}, {Name: "bs2", Address: "127.0.0.3"}, {Name: "bs3", Address: "127.0.0.4"}}
}

// tracked returns the names a server answers now, sorted.
func (m *fleetMember) tracked() []string {
	var out []string
	for _, n := range m.srv.Tracker().Nodes() {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

// ruleOwned is what the ownership rule gives server id with the given dead servers.
func ruleOwned(t *testing.T, s *Server, id int, dead []int) []string {
	t.Helper()
	a, err := bootconfig.AssignServers(s.hier, s.cfg.Mapping, len(s.cfg.Servers), s.cfg.FailedServers, dead)
	if err != nil {
		t.Fatal(err)
	}
	au, err := bootconfig.NewAuthority(s.auth.Inventory(), a, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range au.Owned() {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

// TestFleetTakeover runs four fleet servers on a real etcd: each answers exactly the rule's nodes;
// a crashed server's nodes move to the survivors within the TTL plus 2 s, each resuming from the
// dead server's record; the dead server's return reclaims its nodes except one mid-boot elsewhere,
// which follows once healthy; with etcd stopped, servers keep answering their home nodes.
func TestFleetTakeover(t *testing.T) {
	ft := startTakeoverFleet(t)
	ft.crashBs1MidBoot(t)
	ft.checkResumed(t)
	ft.checkTakeoverEvents(t)
	ft.bs1Returns(t)
	ft.etcdStops(t)
}

// takeoverFleet is TestFleetTakeover's fleet: etcd and the four members; once bs1 crashed, its
// nodes (mid was mid-boot, done healthy) and the survivor that took mid (midHolder); once bs1 is
// back, its new member (back).
type takeoverFleet struct {
	ec        *etcdtest.Cluster
	f         *fixture
	ms        []*fleetMember
	own1      []string
	mid, done string
	midHolder *fleetMember
	back      *fleetMember
}

// startTakeoverFleet starts etcd and four fleet members and waits until each owns the rule's
// nodes.
func startTakeoverFleet(t *testing.T) *takeoverFleet {
	ft := &takeoverFleet{ec: etcdtest.Start(t, etcdtest.Options{Members: 1}), f: newFixture(t)}
	for id := range 4 {
		ft.ms = append(ft.ms, startFleetMember(t, ft.f, ft.ec.Endpoints, id))
	}
	for id, m := range ft.ms {
		want := ruleOwned(t, m.srv, id, nil)
		testfix.WaitFor(t, m.name+" owns its blocks", 10*time.Second, func() bool { return slices.Equal(m.tracked(), want) })
	}
	return ft
}

// survivors are the members other than bs1.
func (ft *takeoverFleet) survivors() []*fleetMember {
	return []*fleetMember{ft.ms[0], ft.ms[2], ft.ms[3]}
}

// holder returns the survivor that answers node name, or nil.
func (ft *takeoverFleet) holder(name string) *fleetMember {
	for _, m := range ft.survivors() {
		if slices.Contains(m.tracked(), name) {
			return m
		}
	}
	return nil
}

// crashBs1MidBoot crashes bs1 with its first node mid-boot (bound) and its second healthy, and
// waits until the survivors answer what the rule gives them with bs1 dead: within the TTL plus 2 s.
func (ft *takeoverFleet) crashBs1MidBoot(t *testing.T) {
	bs1 := ft.ms[1]
	ft.own1 = bs1.tracked()
	ft.mid, ft.done = ft.own1[0], ft.own1[1]
	for _, ev := range []nodestate.Event{nodestate.EvDiscover, nodestate.EvOffer, nodestate.EvAck} {
		bs1.srv.Tracker().Observe(ft.mid, ev, "test")
	}
	bs1.srv.Tracker().Observe(ft.done, nodestate.EvDiscover, "test")
	bs1.srv.Tracker().Report(ft.done, nodestate.Health{Status: "ok"})
	bs1.srv.Tracker().Observe(ft.done, nodestate.EvHealthOK, "test")
	if err := bs1.srv.Tracker().Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := time.Now()
	bs1.crash(t)

	testfix.WaitFor(t, "takeover of bs1's nodes", fleetTestTTL+2*time.Second, func() bool {
		for _, m := range ft.survivors() {
			id := slices.IndexFunc(fleetServers(), func(e bootconfig.ServerEntry) bool { return e.Name == m.name })
			if !slices.Equal(m.tracked(), ruleOwned(t, m.srv, id, []int{1})) {
				return false
			}
		}
		return true
	})
	took := time.Since(crashed)
	if took > fleetTestTTL+2*time.Second {
		t.Errorf("takeover %.2f s after the crash, more than TTL + 2 s", took.Seconds())
	}
	t.Logf("bs1's %d nodes taken over %.2f s after the crash (TTL 2 s)", len(ft.own1), took.Seconds())
}

// checkResumed: the survivors resumed bs1's nodes from its records, the mid-boot one bound and
// the other healthy.
func (ft *takeoverFleet) checkResumed(t *testing.T) {
	ft.midHolder = ft.holder(ft.mid)
	if ft.midHolder == nil {
		t.Fatalf("nobody holds %s after the takeover", ft.mid)
	}
	if st, _ := ft.midHolder.srv.Tracker().State(ft.mid); st != nodestate.Bound {
		t.Errorf("%s on %s resumed in %v, want bound (its record at bs1)", ft.mid, ft.midHolder.name, st)
	}
	if st, _ := ft.holder(ft.done).srv.Tracker().State(ft.done); st != nodestate.Healthy {
		t.Errorf("%s resumed in %v, want healthy", ft.done, st)
	}
	// bs1 may have served the mid-boot node's script after its last record: the holder gives it
	// out (and with it the attempt's token) only after a DHCP exchange of its own with the node
	// (issue 36 item 3: after a partition's takeover the holder served it again mid-attempt).
	tr := ft.midHolder.srv.Tracker()
	st, _ := tr.Node(ft.mid)
	if tr.ClaimServed(ft.mid, st.Attempt, nodestate.ScriptFile) {
		t.Errorf("%s's script would go out again on %s in the attempt bs1 held", ft.mid, ft.midHolder.name)
	}
	tr.Observe(ft.mid, nodestate.EvAck, "test")
	if st, _ = tr.Node(ft.mid); !tr.ClaimServed(ft.mid, st.Attempt, nodestate.ScriptFile) {
		t.Errorf("%s's script refused on %s after its DHCP exchange there", ft.mid, ft.midHolder.name)
	}
}

// checkTakeoverEvents: each new owner records its takeover right after it starts answering; once
// all have, the events, all from bs1, count bs1's nodes.
func (ft *takeoverFleet) checkTakeoverEvents(t *testing.T) {
	total := 0
	testfix.WaitFor(t, "takeover events", 5*time.Second, func() bool {
		evs, err := ft.ms[0].client.Events(context.Background(), "takeover")
		if err != nil {
			t.Fatal(err)
		}
		total = 0
		for _, e := range evs {
			var te TakeoverEvent
			if err := json.Unmarshal(e.Rec, &te); err != nil {
				t.Fatal(err)
			}
			if te.From != "bs1" {
				t.Errorf("takeover event %+v: want from bs1", te)
			}
			total += te.Nodes
		}
		return total >= len(ft.own1)
	})
	if total != len(ft.own1) {
		t.Errorf("takeover events count %d nodes, want %d", total, len(ft.own1))
	}
}

// bs1Returns restarts bs1: it reclaims its nodes but the one still mid-boot on its holder; once
// that boot ends there, bs1 takes the node back too.
func (ft *takeoverFleet) bs1Returns(t *testing.T) {
	ft.back = startFleetMember(t, ft.f, ft.ec.Endpoints, 1)
	h, mid := ft.midHolder, ft.mid
	want := slices.DeleteFunc(slices.Clone(ft.own1), func(n string) bool { return n == mid })
	testfix.WaitFor(t, "bs1 reclaims its idle nodes", 10*time.Second, func() bool { return slices.Equal(ft.back.tracked(), want) })
	if !slices.Contains(h.tracked(), mid) {
		t.Fatalf("%s left %s mid-boot", h.name, mid)
	}
	h.srv.Tracker().Report(mid, nodestate.Health{Status: "ok"})
	if err := h.srv.Tracker().Flush(); err != nil {
		t.Fatal(err)
	}
	testfix.WaitFor(t, "bs1 reclaims "+mid+" once healthy", 10*time.Second, func() bool { return slices.Equal(ft.back.tracked(), ft.own1) })
	if slices.Contains(h.tracked(), mid) {
		t.Errorf("%s still holds %s", h.name, mid)
	}
}

// etcdStops stops etcd: every server is fenced within the TTL plus 2 s and answers only its home
// nodes; once etcd is back, so is the membership.
func (ft *takeoverFleet) etcdStops(t *testing.T) {
	checked := []*fleetMember{ft.ms[0], ft.back}
	ft.ec.Member(0).Stop()
	fenced := testfix.WaitFor(t, "fencing", fleetTestTTL+2*time.Second, func() bool {
		for _, m := range checked {
			if m.srv.fleet.m.Valid() {
				return false
			}
		}
		return true
	})
	t.Logf("fenced %.2f s after etcd stopped", fenced.Seconds())
	for _, m := range checked {
		for _, n := range m.srv.auth.Owned() {
			if _, ok := (fleetReservations{m.srv.fleet}).Lookup(n.MAC); !ok {
				t.Errorf("%s fenced does not answer its home node %s", m.name, n.Name)
			}
		}
	}
	ft.ec.Member(0).Restart()
	testfix.WaitFor(t, "membership valid again", 15*time.Second, func() bool {
		return ft.back.srv.fleet.m.Valid()
	})
}

// TestFleetChaos kills (without leaving) and restarts a random server of four, five times, while
// nodes boot: after each round settles, every node is answered by exactly one live server, the one
// the rule names, and no node's boot went backwards (a takeover resumes from the record).
func TestFleetChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: five kill/restart rounds take about 30 s")
	}
	ec := etcdtest.Start(t, etcdtest.Options{Members: 1})
	f := newFixture(t)
	ms := make([]*fleetMember, 4)
	for id := range ms {
		ms[id] = startFleetMember(t, f, ec.Endpoints, id)
	}
	// unsettled says, on a failure, how the last check found the fleet (or the last save failed): a timeout alone does not
	// tell a slow takeover from a wrong one.
	var unsettled string
	defer func() {
		if t.Failed() && unsettled != "" {
			t.Logf("the last check: %s", unsettled)
		}
	}()
	settled := func(dead int) bool {
		seen := map[string]string{}
		for id, m := range ms {
			if id == dead {
				continue
			}
			var deadSet []int
			if dead >= 0 {
				deadSet = []int{dead}
			}
			got, want := m.tracked(), ruleOwned(t, m.srv, id, deadSet)
			if !slices.Equal(got, want) {
				unsettled = fmt.Sprintf("%s (valid member %v, dead %v) answers %v, the rule with %v dead says %v; holders in etcd %v",
					m.name, m.srv.fleet.m.Valid(), m.srv.fleet.deadNow(), got, deadSet, want, m.srv.fleet.holders(want))
				return false
			}
			for _, n := range got {
				if other, dup := seen[n]; dup {
					t.Fatalf("%s answered by %s and %s", n, other, m.name)
				}
				seen[n] = m.name
			}
		}
		return len(seen) == len(ms[0].srv.auth.Inventory().Nodes)
	}
	t.Logf("start: settled in %v", testfix.WaitFor(t, "start", 20*time.Second, func() bool { return settled(-1) }))
	rng := rand.New(rand.NewPCG(7, 11))
	progress := map[string]nodestate.State{}
	for round := range 5 {
		// Every live server moves each of its nodes one step along the boot.
		for _, m := range ms {
			for _, name := range m.tracked() {
				st, _ := m.srv.Tracker().State(name)
				switch st {
				case nodestate.Pending:
					m.srv.Tracker().Observe(name, nodestate.EvDiscover, "chaos")
				case nodestate.Discover:
					m.srv.Tracker().Observe(name, nodestate.EvOffer, "chaos")
				case nodestate.Offered:
					m.srv.Tracker().Observe(name, nodestate.EvAck, "chaos")
				case nodestate.Bound:
					m.srv.Tracker().Report(name, nodestate.Health{Status: "ok"})
				}
				st, _ = m.srv.Tracker().State(name)
				progress[name] = st
			}
			// A save refused or timed out on a busy host is tried again, as the tracker's own
			// loop does; the test needs the steps saved before the crash.
			testfix.WaitFor(t, fmt.Sprintf("round %d: %s saves its steps", round, m.name), 15*time.Second, func() bool {
				err := m.srv.Tracker().Flush()
				if err != nil {
					unsettled = fmt.Sprintf("%s's save: %v", m.name, err)
				}
				return err == nil
			})
		}
		victim := rng.IntN(len(ms))
		ms[victim].crash(t)
		took := testfix.WaitFor(t, fmt.Sprintf("round %d: takeover of bs%d", round, victim), 8*time.Second, func() bool { return settled(victim) })
		for _, m := range ms {
			if m == ms[victim] {
				continue
			}
			for _, name := range m.tracked() {
				if st, _ := m.srv.Tracker().State(name); st < progress[name] {
					t.Errorf("round %d: %s went back from %v to %v on %s", round, name, progress[name], st, m.name)
				}
			}
		}
		ms[victim] = startFleetMember(t, f, ec.Endpoints, victim)
		// Nodes mid-boot elsewhere stay there until healthy: finish them so the round settles.
		back := testfix.WaitFor(t, fmt.Sprintf("round %d: bs%d back", round, victim), 15*time.Second, func() bool {
			for _, m := range ms {
				for _, name := range m.tracked() {
					if st, _ := m.srv.Tracker().State(name); midBoot(st) {
						m.srv.Tracker().Report(name, nodestate.Health{Status: "ok"})
					}
				}
				m.srv.Tracker().Flush()
			}
			return settled(-1)
		})
		t.Logf("round %d: bs%d's nodes taken over in %v, home again in %v", round, victim, took, back)
	}
}

// testFleetSecret is the fleet secret of the tests' fleets.
var testFleetSecret = []byte("0123456789abcdef0123456789abcdef")

// TestFleetWitness: a server cut off from etcd alone (its client gone, the others fine) is fenced;
// an answer in a peer's name that does not prove itself with the fleet secret (a host on the boot
// network) does not silence it; the real peer, still a valid member, does: it stops answering even
// its home nodes. With etcd down for all, no peer is valid and home nodes are answered.
func TestFleetWitness(t *testing.T) {
	ec := etcdtest.Start(t, etcdtest.Options{Members: 1})
	f := newFixture(t)
	bs0 := startFleetMember(t, f, ec.Endpoints, 0)
	bs1 := startFleetMember(t, f, ec.Endpoints, 1)
	testfix.WaitFor(t, "bs1 owns its blocks", 10*time.Second, func() bool {
		return len(bs1.tracked()) > 0 && bs0.srv.HTTPAddr() != nil
	})
	home := bs1.srv.auth.Owned()[0]
	// The spoofer answers as bs0 would, with a MAC under another key, or none, or an old nonce.
	var spoofed atomic.Int64
	spoofer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := bootapi.MembershipView{Server: "bs0", Valid: true, Nonce: r.URL.Query().Get("nonce")}
		switch spoofed.Add(1) % 3 {
		case 0:
			v.MAC = witnessMAC([]byte("not the fleet's fleet secret, 32b"), "test", v)
		case 1:
			v.Nonce, v.MAC = "00", witnessMAC(testFleetSecret, "test", bootapi.MembershipView{Server: "bs0", Valid: true, Nonce: "00"})
		}
		json.NewEncoder(w).Encode(v)
	}))
	defer spoofer.Close()
	bs1.srv.fleet.peers.Store(&[]witnessPeer{{"bs0", spoofer.URL}})
	bs1.client.Close() // bs1 alone loses etcd; bs0 stays a valid member
	testfix.WaitFor(t, "bs1 fenced and asking the spoofer", 5*time.Second, func() bool {
		return !bs1.srv.fleet.m.Valid() && spoofed.Load() >= 6
	})
	if _, ok := (fleetReservations{bs1.srv.fleet}).Lookup(home.MAC); !ok || bs1.srv.fleet.peerValid.Load() {
		t.Errorf("a spoofed witness answer silenced bs1 (answers its home node %s: %v)", home.Name, ok)
	}
	bs1.srv.fleet.peers.Store(&[]witnessPeer{{"bs0", "http://" + bs0.srv.HTTPAddr().String()}})
	testfix.WaitFor(t, "bs1 told by bs0", 5*time.Second, func() bool { return bs1.srv.fleet.peerValid.Load() })
	if _, ok := (fleetReservations{bs1.srv.fleet}).Lookup(home.MAC); ok {
		t.Errorf("bs1, cut off alone, still answers its home node %s", home.Name)
	}
	// etcd down for everyone: bs0 is fenced too, so bs1 hears no valid peer and answers again.
	ec.Member(0).Stop()
	testfix.WaitFor(t, "no valid peer", 6*time.Second, func() bool { return !bs1.srv.fleet.peerValid.Load() })
	if _, ok := (fleetReservations{bs1.srv.fleet}).Lookup(home.MAC); !ok {
		t.Errorf("with etcd down for all, bs1 does not answer its home node %s", home.Name)
	}
	ec.Member(0).Restart()
}

// deadNow is the dead servers as the last reconcile applied them.
func (f *fleetRuntime) deadNow() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.dead)
}

// holders is the holder each named node's record in etcd names, for a failure's message.
func (f *fleetRuntime) holders(names []string) map[string]string {
	recs, err := f.loadRecords()
	if err != nil {
		return map[string]string{"error": err.Error()}
	}
	out := map[string]string{}
	for _, n := range names {
		out[n] = recs[n].Server
	}
	return out
}
