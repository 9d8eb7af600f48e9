package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
)

func macN(i int) string { return fmt.Sprintf("52:54:00:00:%02x:%02x", i>>8, i&0xff) }

// leases lists the pool's address leases as ADDR=MAC, sorted by address, read from etcd.
func leases(t *testing.T, ctx context.Context, c *Client) []string {
	t.Helper()
	kvs, _, err := c.getPrefix(ctx, "addr_list", c.keys.addrPrefix())
	if err != nil {
		t.Fatal(err)
	}
	type lease struct {
		addr netip.Addr
		mac  string
	}
	var ls []lease
	for _, kv := range kvs {
		ip, err := netip.ParseAddr(strings.TrimPrefix(string(kv.Key), c.keys.addrPrefix()))
		if err != nil {
			t.Fatalf("address key %s", kv.Key)
		}
		ls = append(ls, lease{ip, decodeAddr(kv).MAC})
	}
	slices.SortFunc(ls, func(a, b lease) int { return a.addr.Compare(b.addr) })
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.addr.String()+"="+l.mac)
	}
	return out
}

// TestTakeRelease: a MAC takes, renews and moves its address through the pool cache, another MAC
// cannot take it until it expires or is released, and MACs are compared in canonical form.
func TestTakeRelease(t *testing.T) {
	e := startEtcd(t, 1)
	now := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	c := open(t, e.Endpoints, func(o *Options) { o.Now = func() time.Time { return now } })
	ctx := ctxFor(t, 20*time.Second)
	p := c.WatchPool(ctx, 0)
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	a0, a1, a2 := netip.MustParseAddr("192.0.2.0"), netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	mac1, mac2, mac3 := "52:54:00:00:00:01", "52-54-00-00-00-02", "52:54:00:00:00:03"
	take := func(mac string, ip netip.Addr, d time.Duration) func() error {
		return func() error { return p.Take(ctx, mac, ip, now.Add(d)) }
	}
	for _, s := range []struct {
		name string
		do   func() error
		err  error
	}{
		{"first", take(mac1, a0, time.Minute), nil},
		{"same MAC renews", take("52:54:00:00:00:01", a0, time.Hour), nil},
		{"upper-case MAC", take("52:54:00:00:00:0A", a1, time.Minute), nil},
		{"held by another", take(mac2, a1, time.Minute), ErrAddressTaken},
		{"release", func() error { return c.Release(ctx, "52:54:00:00:00:0a") }, nil},
		{"freed, once the cache has seen it", func() error {
			testfix.WaitFor(t, "the release in the cache", 5*time.Second, func() bool {
				_, held := p.Holds("52:54:00:00:00:0a", a1)
				return !held
			})
			return p.Take(ctx, mac2, a1, now.Add(time.Minute))
		}, nil},
		{"expired taken", func() error {
			now = now.Add(90 * time.Minute) // mac1's hour and mac2's minute are over
			return p.Take(ctx, mac3, a0, now.Add(time.Minute))
		}, nil},
		{"old holder", take(mac1, a0, time.Minute), ErrAddressTaken},
		{"moves, giving up its old address", take(mac3, a2, time.Minute), nil},
		{"release a MAC holding nothing", func() error { return c.Release(ctx, "52:54:00:00:00:09") }, nil},
	} {
		if err := s.do(); !errors.Is(err, s.err) || (err == nil) != (s.err == nil) {
			t.Fatalf("%s: %v, want %v", s.name, err, s.err)
		}
	}
	if err := p.Take(ctx, "nope", a0, now); err == nil {
		t.Error("bad MAC: no error")
	}
	if got, want := leases(t, ctx, c), []string{"192.0.2.1=52:54:00:00:00:02", "192.0.2.2=52:54:00:00:00:03"}; !slices.Equal(got, want) {
		t.Errorf("leases = %v, want %v", got, want)
	}
}
