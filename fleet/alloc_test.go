package fleet

import (
	"errors"
	"fmt"
	"iter"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// pool returns n addresses from 192.0.2.0 (TEST-NET-1: addresses only, never contacted).
func pool(n int) iter.Seq[netip.Addr] { return poolFrom("192.0.2.0", n) }

func poolFrom(first string, n int) iter.Seq[netip.Addr] {
	return func(yield func(netip.Addr) bool) {
		a := netip.MustParseAddr(first)
		for i := 0; i < n; i++ {
			if !yield(a) {
				return
			}
			a = a.Next()
		}
	}
}

func macN(i int) string { return fmt.Sprintf("52:54:00:00:%02x:%02x", i>>8, i&0xff) }

// TestAllocateConcurrent: 3 clients x 8 goroutines allocate for 300 MACs (each MAC asked for twice,
// by two goroutines) from 256 addresses. Every address goes to one MAC, every MAC gets at most
// one address, and the 44 MACs left over get ErrPoolExhausted.
func TestAllocateConcurrent(t *testing.T) {
	e := startEtcd(t, 1)
	reg := prometheus.NewRegistry()
	withReg := func(o *Options) { o.Registerer = reg }
	clients := []*Client{open(t, e.Endpoints, withReg), open(t, e.Endpoints, withReg), open(t, e.Endpoints, withReg)}
	ctx := ctxFor(t, 60*time.Second)
	const macs, addrs, workers = 300, 256, 24
	expires := time.Now().Add(time.Hour)

	type result struct {
		mac  string
		addr netip.Addr
		err  error
	}
	results := make(chan result, 2*macs)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)]
			for i := 0; i < macs; i++ {
				if i%workers != w && (i+7)%workers != w {
					continue
				}
				a, err := c.Allocate(ctx, macN(i), pool(addrs), expires)
				results <- result{macN(i), a, err}
			}
		}()
	}
	wg.Wait()
	close(results)
	elapsed := time.Since(start)

	byMAC := map[string]netip.Addr{}
	byAddr := map[netip.Addr]string{}
	exhausted := map[string]bool{}
	n := 0
	for r := range results {
		n++
		switch {
		case errors.Is(r.err, ErrPoolExhausted):
			exhausted[r.mac] = true
		case r.err != nil:
			t.Errorf("Allocate(%s): %v", r.mac, r.err)
		default:
			if prev, ok := byMAC[r.mac]; ok && prev != r.addr {
				t.Errorf("%s got %s and %s", r.mac, prev, r.addr)
			}
			if prev, ok := byAddr[r.addr]; ok && prev != r.mac {
				t.Errorf("%s given to %s and %s", r.addr, prev, r.mac)
			}
			byMAC[r.mac], byAddr[r.addr] = r.addr, r.mac
		}
	}
	t.Logf("%d allocations (%d MACs allocated, %d refusals) in %v", n, len(byMAC), len(exhausted), elapsed.Round(time.Millisecond))
	if n != 2*macs || len(byMAC) != addrs {
		t.Errorf("%d results, %d MACs allocated; want %d and %d", n, len(byMAC), 2*macs, addrs)
	}
	refused := 0
	for mac := range exhausted {
		if _, ok := byMAC[mac]; !ok {
			refused++
		}
	}
	if refused != macs-addrs {
		t.Errorf("%d MACs refused every time, want %d", refused, macs-addrs)
	}
	// The clients share the registry's collectors: the transactions of all three are counted.
	txns := histogramCount(t, reg, "bootfabric_fleet_etcd_request_seconds", "addr_take")
	t.Logf("%d address transactions for %d addresses (the rest lost races)", txns, addrs)
	if txns < addrs {
		t.Errorf("%d address transactions counted, want at least %d", txns, addrs)
	}
	leases, err := clients[0].Leases(ctx)
	if err != nil || len(leases) != addrs {
		t.Fatalf("Leases: %d, %v", len(leases), err)
	}
	for _, l := range leases {
		if byAddr[l.Addr] != l.MAC || !l.Expires.Equal(expires.UTC().Round(0)) {
			t.Errorf("lease %s: %s until %v; allocations gave it to %q", l.Addr, l.MAC, l.Expires, byAddr[l.Addr])
		}
	}
}

func TestAllocateRenewRelease(t *testing.T) {
	e := startEtcd(t, 1)
	now := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	c := open(t, e.Endpoints, func(o *Options) { o.Now = func() time.Time { return now } })
	ctx := ctxFor(t, 20*time.Second)
	p := pool(2)
	a0, a1 := netip.MustParseAddr("192.0.2.0"), netip.MustParseAddr("192.0.2.1")
	mac1, mac2, mac3 := "52:54:00:00:00:01", "52-54-00-00-00-02", "52:54:00:00:00:03"

	steps := []struct {
		name string
		do   func() (netip.Addr, error)
		want netip.Addr
		err  error
	}{
		{"first", func() (netip.Addr, error) { return c.Allocate(ctx, mac1, p, now.Add(time.Minute)) }, a0, nil},
		{"same MAC again", func() (netip.Addr, error) { return c.Allocate(ctx, "52:54:00:00:00:01", p, now.Add(time.Hour)) }, a0, nil},
		{"upper-case MAC", func() (netip.Addr, error) { return c.Allocate(ctx, "52:54:00:00:00:0A", p, now.Add(time.Minute)) }, a1, nil},
		{"full", func() (netip.Addr, error) { return c.Allocate(ctx, mac2, p, now.Add(time.Minute)) }, netip.Addr{}, ErrPoolExhausted},
		{"release", func() (netip.Addr, error) { return netip.Addr{}, c.Release(ctx, "52:54:00:00:00:0a") }, netip.Addr{}, nil},
		{"freed", func() (netip.Addr, error) { return c.Allocate(ctx, mac2, p, now.Add(time.Minute)) }, a1, nil},
		{"renew held", func() (netip.Addr, error) { return a1, c.Renew(ctx, mac2, a1, now.Add(2*time.Minute)) }, a1, nil},
		{"renew other's", func() (netip.Addr, error) { return a0, c.Renew(ctx, mac2, a0, now.Add(time.Minute)) }, a0, ErrAddressTaken},
		{"expired taken", func() (netip.Addr, error) {
			now = now.Add(90 * time.Minute) // mac1's hour and mac2's two minutes are over
			return c.Allocate(ctx, mac3, p, now.Add(time.Minute))
		}, a0, nil},
		{"old holder renews", func() (netip.Addr, error) { return a0, c.Renew(ctx, mac1, a0, now.Add(time.Minute)) }, a0, ErrAddressTaken},
		{"old holder allocates", func() (netip.Addr, error) { return c.Allocate(ctx, mac1, p, now.Add(time.Minute)) }, a1, nil},
		{"pool moved", func() (netip.Addr, error) {
			return c.Allocate(ctx, mac3, poolFrom("192.0.2.2", 2), now.Add(time.Minute))
		}, netip.MustParseAddr("192.0.2.2"), nil},
		{"bad MAC", func() (netip.Addr, error) { return c.Allocate(ctx, "nope", p, now) }, netip.Addr{}, nil},
	}
	for _, s := range steps {
		got, err := s.do()
		if s.name == "bad MAC" {
			if err == nil {
				t.Errorf("%s: no error", s.name)
			}
			continue
		}
		if !errors.Is(err, s.err) || got != s.want {
			t.Fatalf("%s: %v, %v; want %v, %v", s.name, got, err, s.want, s.err)
		}
	}
	leases, err := c.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range leases {
		got = append(got, l.Addr.String()+"="+l.MAC)
	}
	if want := []string{"192.0.2.1=52:54:00:00:00:01", "192.0.2.2=52:54:00:00:00:03"}; !slices.Equal(got, want) {
		t.Errorf("Leases = %v, want %v", got, want)
	}
}

// histogramCount returns the sample count of histogram name's series with op="op".
func histogramCount(t *testing.T, reg *prometheus.Registry, name, op string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "op" && l.GetValue() == op {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}
