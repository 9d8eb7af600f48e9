package fleet

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
)

// TestPoolCache: two servers' caches pick the same free address for two MACs (offers are local);
// only one Take binds it, the other gets ErrAddressTaken even though its cache had not seen the
// first take yet; the cache then follows the pool through its watch; a MAC keeps its address.
func TestPoolCache(t *testing.T) {
	ec := startEtcd(t, 1)
	a, b := open(t, ec.Endpoints), open(t, ec.Endpoints)
	ctx := ctxFor(t, 30*time.Second)
	ca, cb := a.WatchPool(ctx, time.Minute), b.WatchPool(ctx, time.Minute)
	for _, c := range []*PoolCache{ca, cb} {
		if err := c.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pool := PoolRange{First: netip.MustParseAddr("10.0.0.1"), Last: netip.MustParseAddr("10.0.0.2")}
	none := netip.Addr{}
	m1, m2, m3 := "02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"
	ip1, err := ca.Pick(m1, pool, none)
	if err != nil {
		t.Fatal(err)
	}
	ip2, err := cb.Pick(m2, pool, none)
	if err != nil || ip2 != ip1 {
		t.Fatalf("b picked %v (%v), want the same free address %v", ip2, err, ip1)
	}
	// A second MAC on the same server gets the other address: a local offer holds the first.
	if ip, err := ca.Pick(m3, pool, none); err != nil || ip == ip1 {
		t.Errorf("a picked %v (%v) for a second MAC; want the other address", ip, err)
	}
	exp := time.Now().Add(time.Hour)
	if err := ca.Take(ctx, m1, ip1, exp); err != nil {
		t.Fatal(err)
	}
	if err := cb.Take(ctx, m2, ip2, exp); !errors.Is(err, ErrAddressTaken) {
		t.Fatalf("b took %v for %s after a took it for %s: %v, want ErrAddressTaken", ip2, m2, m1, err)
	}
	// b's cache learns through the watch: it no longer offers ip1 to anyone but m1.
	testfix.WaitFor(t, "b's cache sees a's lease", 5*time.Second, func() bool {
		ip, err := cb.Pick(m2, pool, none)
		return err == nil && ip != ip1
	})
	if ip, err := cb.Pick(m1, pool, none); err != nil || ip != ip1 {
		t.Errorf("m1 asks b: %v (%v), want its address %v", ip, err, ip1)
	}
	// Renewing on the other server, and the pool full for a third MAC.
	if err := cb.Take(ctx, m1, ip1, exp.Add(time.Hour)); err != nil {
		t.Errorf("m1 renews through b: %v", err)
	}
	other, _ := cb.Pick(m2, pool, none)
	if err := cb.Take(ctx, m2, other, exp); err != nil {
		t.Fatal(err)
	}
	testfix.WaitFor(t, "a sees both leases", 5*time.Second, func() bool {
		_, err := ca.Pick(m3, pool, none)
		return errors.Is(err, ErrPoolExhausted)
	})
	if ls := leases(t, ctx, a); len(ls) != 2 || strings.SplitN(ls[0], "=", 2)[1] == strings.SplitN(ls[1], "=", 2)[1] {
		t.Errorf("leases %v, want two of two MACs", ls)
	}
	// Lease: the address a MAC holds as the cache knows it; an offer is not one.
	if ip, ok := ca.Lease(m1); !ok || ip != ip1 {
		t.Errorf("Lease(m1) = %v, %v; want %v", ip, ok, ip1)
	}
	if ip, ok := ca.Lease(m3); ok {
		t.Errorf("Lease(m3) = %v for a MAC that was only offered one", ip)
	}
}
