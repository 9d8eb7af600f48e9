package fleet

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/bootfabric/bootfabric/internal/testfix"
)

func names(ms []Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestJoinLeave(t *testing.T) {
	e := startEtcd(t, 1)
	a, b := open(t, e.Endpoints), open(t, e.Endpoints)
	ctx := ctxFor(t, 20*time.Second)

	for _, tc := range []struct {
		name    string
		ttl     time.Duration
		wantTTL time.Duration
		wantErr bool
	}{
		{"bs0", 0, DefaultTTL, false},
		{"bs1", 1500 * time.Millisecond, 2 * time.Second, false},
		{"bs2", 500 * time.Millisecond, 0, true},
		{"bad/name", 0, 0, true},
		{"", 0, 0, true},
	} {
		m, err := a.Join(ctx, tc.name, []byte("info-"+tc.name), tc.ttl)
		if (err != nil) != tc.wantErr {
			t.Fatalf("Join(%q, %v): %v, want error %v", tc.name, tc.ttl, err, tc.wantErr)
		}
		if err == nil && (m.TTL() != tc.wantTTL || !m.Valid()) {
			t.Errorf("Join(%q): TTL %v valid %v, want %v and valid", tc.name, m.TTL(), m.Valid(), tc.wantTTL)
		}
	}
	// The name is held: refused from another client, and from the same one.
	for _, c := range []*Client{a, b} {
		if _, err := c.Join(ctx, "bs0", nil, 0); !errors.Is(err, ErrNameTaken) {
			t.Fatalf("duplicate Join: %v, want ErrNameTaken", err)
		}
	}
	ms, rev, err := b.Members(ctx)
	if err != nil || rev == 0 || !slices.Equal(names(ms), []string{"bs0", "bs1"}) || string(ms[0].Info) != "info-bs0" || ms[0].LeaseID == 0 {
		t.Fatalf("Members = %+v rev %d, %v", ms, rev, err)
	}

	// Leave revokes at once: the name is free for the other client.
	m, err := a.Join(ctx, "bs3", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	lost := m.Lost()
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	default:
		t.Error("Lost not closed by Leave")
	}
	if m.Valid() {
		t.Error("Valid after Leave")
	}
	if err := m.Leave(ctx); err != nil {
		t.Errorf("second Leave: %v", err)
	}
	if _, err := b.Join(ctx, "bs3", nil, 0); err != nil {
		t.Errorf("Join after Leave: %v", err)
	}
	// Leave returns once the renewal loop has ended: nothing can renew the membership after it.
	select {
	case <-m.done:
	default:
		t.Error("the renewal loop runs on after Leave")
	}
	if st := m.Stats(); st.Renewals != 0 {
		t.Errorf("left membership renewed: %+v", st)
	}
}

// TestLeaseExpiry: a server that dies without leaving (its client closed) drops out of Members
// and WatchMembers within TTL + 1 s, and its name can be taken then.
func TestLeaseExpiry(t *testing.T) {
	e := startEtcd(t, 1)
	obs := open(t, e.Endpoints)
	ctx := ctxFor(t, 30*time.Second)
	watch := obs.WatchMembers(ctx)
	latest := func() []string {
		select {
		case ms := <-watch:
			return names(ms)
		case <-time.After(10 * time.Second):
			t.Fatal("no member set within 10 s")
		}
		return nil
	}
	if got := latest(); len(got) != 0 {
		t.Fatalf("first set %v, want empty", got)
	}

	dying := open(t, e.Endpoints)
	const ttl = 2 * time.Second
	m, err := dying.Join(ctx, "bs0", nil, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if got := latest(); !slices.Equal(got, []string{"bs0"}) {
		t.Fatalf("after join %v", got)
	}
	testfix.WaitFor(t, "two renewals", 10*time.Second, func() bool { return m.Stats().Renewals >= 2 })
	if st := m.Stats(); st.RenewalFailures != 0 {
		t.Errorf("stats after two renewals: %+v", st)
	}
	dying.Close() // a crash: no revoke
	start := time.Now()
	if got := latest(); len(got) != 0 {
		t.Fatalf("after expiry %v", got)
	}
	gone := time.Since(start)
	t.Logf("member gone %v after its client closed (ttl %v)", gone.Round(time.Millisecond), ttl)
	if gone > ttl+time.Second {
		t.Errorf("member gone after %v, want at most ttl + 1 s = %v", gone, ttl+time.Second)
	}
	if ms, _, err := obs.Members(ctx); err != nil || len(ms) != 0 {
		t.Errorf("Members = %v, %v", ms, err)
	}
	if _, err := obs.Join(ctx, "bs0", nil, ttl); err != nil {
		t.Errorf("Join of the dead member's name: %v", err)
	}
}

// TestFencing: with etcd stopped, Valid turns false before the TTL has passed since the last
// renewal was sent, and true again by itself once etcd is back.
func TestFencing(t *testing.T) {
	e := startEtcd(t, 1)
	reg := prometheus.NewRegistry()
	c := open(t, e.Endpoints, func(o *Options) { o.Registerer = reg })
	ctx := ctxFor(t, 40*time.Second)
	const ttl = 3 * time.Second
	m, err := c.Join(ctx, "bs0", []byte("x"), ttl)
	if err != nil {
		t.Fatal(err)
	}
	testfix.WaitFor(t, "a renewal", 10*time.Second, func() bool { return m.Stats().Renewals >= 1 })
	term := m.Term()
	if term != 1 {
		t.Errorf("term %d after the join and renewals on time, want 1", term)
	}

	stopped := time.Now()
	e.Member(0).Stop()
	invalid := testfix.WaitFor(t, "Valid false with etcd stopped", ttl, func() bool { return !m.Valid() })
	st := m.Stats()
	sinceRenewal := time.Since(st.LastRenewal)
	t.Logf("Valid false %v after etcd stopped, %v after the last renewal was sent (ttl %v, margin %v)",
		invalid.Round(time.Millisecond), sinceRenewal.Round(time.Millisecond), ttl, Margin(ttl))
	// The rule itself, exactly; the observed time only loosely (the test may be descheduled).
	if w := m.ValidUntil().Sub(st.LastRenewal); w != ttl-Margin(ttl) {
		t.Errorf("valid until %v after the last renewal was sent, want ttl - margin = %v", w, ttl-Margin(ttl))
	}
	if sinceRenewal >= ttl {
		t.Errorf("Valid went false %v after the last renewal, after the lease could have expired (ttl %v)", sinceRenewal, ttl)
	}
	if m.Valid() {
		t.Error("Valid again with etcd down")
	}
	time.Sleep(500 * time.Millisecond) // etcd stays down a while longer
	t.Logf("etcd down for %v", time.Since(stopped).Round(time.Millisecond))
	e.Member(0).Restart()
	back := testfix.WaitFor(t, "Valid again after etcd restart", 15*time.Second, m.Valid)
	t.Logf("Valid again %v after etcd was healthy; stats %+v", back.Round(time.Millisecond), m.Stats())
	if m.Term() != term+1 {
		t.Errorf("term %d after validity lapsed and came back, want %d", m.Term(), term+1)
	}
	if m.Stats().RenewalFailures == 0 {
		t.Error("no renewal failure counted")
	}
	ms, _, err := c.Members(ctx)
	if err != nil || !slices.Equal(names(ms), []string{"bs0"}) || ms[0].LeaseID != m.LeaseID() {
		t.Errorf("Members after restart = %+v, %v (lease %x)", ms, err, m.LeaseID())
	}
	for _, tc := range []struct {
		metric  prometheus.Collector
		atLeast float64
	}{
		{c.metrics.renewals.WithLabelValues("failed"), 1},
		{c.metrics.renewals.WithLabelValues("ok"), 2},
		{c.metrics.errors.WithLabelValues("lease_keepalive"), 1},
	} {
		if got := testutil.ToFloat64(tc.metric); got < tc.atLeast {
			t.Errorf("metric %v = %v, want at least %v", tc.metric, got, tc.atLeast)
		}
	}
	if n := testutil.CollectAndCount(reg); n == 0 {
		t.Error("nothing registered")
	}
}

// TestRejoin: a membership whose lease etcd expired (here: revoked behind its back) reports Lost
// and re-joins with a new lease under the same name.
func TestRejoin(t *testing.T) {
	e := startEtcd(t, 1)
	c := open(t, e.Endpoints)
	ctx := ctxFor(t, 20*time.Second)
	m, err := c.Join(ctx, "bs0", []byte("x"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	old, lost, term := m.LeaseID(), m.Lost(), m.Term()
	if _, err := c.cli.Revoke(ctx, clientv3.LeaseID(old)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("Lost not closed within 5 s of the revoke")
	}
	testfix.WaitFor(t, "re-joined", 5*time.Second, func() bool { return m.Valid() && m.LeaseID() != old })
	ms, _, err := c.Members(ctx)
	if err != nil || len(ms) != 1 || ms[0].LeaseID != m.LeaseID() {
		t.Fatalf("Members after re-join = %+v, %v", ms, err)
	}
	if m.Term() != term+1 {
		t.Errorf("term %d under the new lease, want %d", m.Term(), term+1)
	}
	if st := m.Stats(); st.Rejoins != 1 {
		t.Errorf("stats %+v, want 1 re-join", st)
	}
	select {
	case <-m.Lost():
		t.Error("new lease's Lost closed")
	default:
	}
}
