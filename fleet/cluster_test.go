package fleet

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
)

// retry runs f until it succeeds or timeout passes (then it fails the test), and returns how many
// attempts failed.
func retry(t *testing.T, timeout time.Duration, what string, f func() error) int {
	t.Helper()
	start := time.Now()
	for failed := 0; ; failed++ {
		err := f()
		if err == nil {
			return failed
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: still failing after %v: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond) // the pause between attempts
	}
}

// TestThreeMembers: with the endpoints of all three members, the client keeps reading, writing,
// watching and renewing its membership when the etcd leader is killed.
func TestThreeMembers(t *testing.T) {
	e := startEtcd(t, 3)
	c, obs := open(t, e.Endpoints), open(t, e.Endpoints)
	ctx := ctxFor(t, 60*time.Second)
	m, err := c.Join(ctx, "bs0", []byte("x"), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lease := m.LeaseID()
	if _, err := c.ApplyConfig(ctx, []byte("v1"), testKey); err != nil {
		t.Fatal(err)
	}
	cfgs := obs.WatchConfig(ctx)
	if cr := <-cfgs; string(cr.Doc) != "v1" {
		t.Fatalf("first configuration %q", cr.Doc)
	}

	leader := -1
	for i, ep := range e.Endpoints {
		st, err := c.cli.Status(ctx, ep)
		if err != nil {
			t.Fatal(err)
		}
		if st.Header.MemberId == st.Leader {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no leader")
	}
	// Sample Valid from just before the kill until the client has shown it works.
	invalid := make(chan time.Duration, 1)
	stop := make(chan struct{})
	go func() {
		var sum time.Duration
		for tick := time.NewTicker(20 * time.Millisecond); ; {
			select {
			case <-tick.C:
				if !m.Valid() {
					sum += 20 * time.Millisecond
				}
			case <-stop:
				tick.Stop()
				invalid <- sum
				return
			}
		}
	}()
	before := m.Stats().Renewals
	killed := time.Now()
	e.Member(leader).Kill()
	t.Logf("killed the leader, member %s", e.Member(leader).Name)

	recs := map[string][]byte{}
	for i := 0; i < 100; i++ {
		recs[fmt.Sprintf("node%d", i)] = []byte("up")
	}
	// A client opened now, with one endpoint dead, works too.
	late := open(t, e.Endpoints)
	failed := retry(t, 10*time.Second, "write", func() error { return c.PutRecordsIfMember(ctx, m, "state", recs) })
	t.Logf("write done %v after the kill (%d failed attempts)", time.Since(killed).Round(time.Millisecond), failed)
	retry(t, 5*time.Second, "read", func() error {
		got, err := late.Records(ctx, "state")
		if err == nil && len(got) != len(recs) {
			err = fmt.Errorf("%d records", len(got))
		}
		return err
	})
	retry(t, 5*time.Second, "apply", func() error { _, err := c.ApplyConfig(ctx, []byte("v2"), testKey); return err })
	select {
	case cr := <-cfgs:
		if string(cr.Doc) != "v2" {
			t.Errorf("watch delivered %q, want v2", cr.Doc)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch: v2 not delivered within 10 s")
	}
	testfix.WaitFor(t, "lease renewed after the kill", 10*time.Second, func() bool { return m.Stats().Renewals > before+2 && m.Valid() })
	close(stop)
	t.Logf("membership not Valid for %v in total around the kill; renewals %+v", <-invalid, m.Stats())
	ms, _, err := obs.Members(ctx)
	if err != nil || !slices.Equal(names(ms), []string{"bs0"}) || ms[0].LeaseID != lease || m.LeaseID() != lease {
		t.Errorf("Members = %+v, %v; want bs0 on its first lease %x", ms, err, lease)
	}

	e.Member(leader).Restart()
	e.WaitHealthy()
}

// TestWatchCompacted: a watch that was away while the revisions it would resume from were
// compacted delivers the current configuration when it comes back.
func TestWatchCompacted(t *testing.T) {
	e := startEtcd(t, 3)
	away := open(t, e.Endpoints[:1]) // knows only member 0
	w := open(t, e.Endpoints[1:])
	ctx := ctxFor(t, 60*time.Second)
	if _, err := w.ApplyConfig(ctx, []byte("v1"), testKey); err != nil {
		t.Fatal(err)
	}
	cfgs := away.WatchConfig(ctx)
	if cr := <-cfgs; string(cr.Doc) != "v1" {
		t.Fatalf("first configuration %q", cr.Doc)
	}
	e.Member(0).Stop()
	var last int64
	for _, doc := range []string{"v2", "v3"} {
		rev, err := w.ApplyConfig(ctx, []byte(doc), testKey)
		if err != nil {
			t.Fatal(err)
		}
		last = rev
	}
	if err := w.PutRecords(ctx, "x", map[string][]byte{"a": nil}); err != nil { // past v3
		t.Fatal(err)
	}
	if _, err := w.cli.Compact(ctx, last+1); err != nil {
		t.Fatal(err)
	}
	e.Member(0).Restart()
	select {
	case cr := <-cfgs:
		if string(cr.Doc) != "v3" || cr.Revision != last {
			t.Errorf("after compaction: %q rev %d, want v3 rev %d", cr.Doc, cr.Revision, last)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("nothing delivered within 15 s of member 0's return")
	}
}

// TestPartition: a server cut off from etcd (its only endpoint stopped) while the rest of the
// cluster runs stops being Valid before the others see its member key expire, learns that its
// lease was lost when it reaches etcd again, and re-joins under its name by itself.
func TestPartition(t *testing.T) {
	e := startEtcd(t, 3)
	cut := open(t, e.Endpoints[:1])
	obs := open(t, e.Endpoints[1:])
	ctx := ctxFor(t, 60*time.Second)
	const ttl = 2 * time.Second
	m, err := cut.Join(ctx, "bs0", nil, ttl)
	if err != nil {
		t.Fatal(err)
	}
	lease, lost := m.LeaseID(), m.Lost()
	sets := obs.WatchMembers(ctx)
	waitMembers := func(want []string) time.Time {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case ms := <-sets:
				if slices.Equal(names(ms), want) {
					return time.Now()
				}
			case <-deadline:
				t.Fatalf("members never %v", want)
			}
		}
	}
	waitMembers([]string{"bs0"})

	cutAt := time.Now()
	invalidAt := make(chan time.Time, 1)
	go func() {
		// Polls, to time when Valid turns false; bounded by the test's wait for it below.
		for m.Valid() && time.Since(cutAt) < time.Minute {
			time.Sleep(5 * time.Millisecond)
		}
		invalidAt <- time.Now()
	}()
	e.Member(0).Stop()
	goneAt := waitMembers(nil)
	var inv time.Time
	select {
	case inv = <-invalidAt:
	case <-time.After(time.Second):
		t.Fatal("still Valid a second after the others saw the member expire")
	}
	t.Logf("cut off: not Valid after %v, expired for the others after %v (ttl %v)",
		inv.Sub(cutAt).Round(time.Millisecond), goneAt.Sub(cutAt).Round(time.Millisecond), ttl)
	if !inv.Before(goneAt) {
		t.Errorf("Valid until %v after the cut, but the others saw the member gone at %v", inv.Sub(cutAt), goneAt.Sub(cutAt))
	}

	e.Member(0).Restart()
	select {
	case <-lost:
	case <-time.After(15 * time.Second):
		t.Fatal("Lost not closed within 15 s of the endpoint's return")
	}
	testfix.WaitFor(t, "re-joined", 10*time.Second, func() bool { return m.Valid() && m.LeaseID() != lease })
	waitMembers([]string{"bs0"})
	if st := m.Stats(); st.Rejoins != 1 {
		t.Errorf("stats %+v, want one re-join", st)
	}
}
