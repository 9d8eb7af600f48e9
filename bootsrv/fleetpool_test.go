package bootsrv

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/insomniacslk/dhcp/dhcpv4"
)

// TestFleetPool: two fleet servers hand out pool addresses to MACs outside the inventory through
// their DHCP handlers at once; every MAC that got an address got its own (etcd transactions), each
// unknown MAC is answered by exactly one server, a REQUEST commits the offered address, and a
// fenced server (etcd stopped) allocates nothing.
func TestFleetPool(t *testing.T) {
	ec := etcdtest.Start(t, etcdtest.Options{Members: 1})
	a, b := startPoolFleet(t, ec)
	ctx := context.Background()
	run := &poolRun{bound: map[string]string{}, handlers: []*dhcpd.Handler{dhcpd.NewHandler(a.srv.dhcpConfig("")), dhcpd.NewHandler(b.srv.dhcpConfig(""))}}
	run.leaseAll(t, ctx, 60) // a's and b's share of them is about 30 of the 40 addresses
	if len(run.bound) == 0 || len(run.bound) > 40 {
		t.Fatalf("%d addresses bound", len(run.bound))
	}
	t.Logf("%d addresses bound to distinct MACs; %d NAKs (an address offered by both servers), %d exhausted", len(run.bound), run.naks, run.exhausted)
	checkPoolLeases(t, ctx, a, run.bound)

	// etcd stops: once fenced, the pool allocates nothing.
	ec.Member(0).Stop()
	testfix.WaitFor(t, "fenced", 5*time.Second, func() bool { return !a.srv.fleet.m.Valid() })
	if _, err := a.srv.addrPool.Offer(ctx, net.HardwareAddr{2, 0, 0, 0, 0, 10}, nil); err == nil {
		t.Error("a fenced server offered a pool address")
	} else {
		t.Logf("fenced offer: %v", err)
	}
	ec.Member(0).Restart()
}

// startPoolFleet starts four fleet members with a DHCP pool (10.9.0.1-40) for unknown MACs, node00
// moved off loopback, and waits until the first two, which it returns, see all four live.
func startPoolFleet(t *testing.T, ec *etcdtest.Cluster) (a, b *fleetMember) {
	f := newFixture(t)
	inv := filepath.Join(f.dir, "inventory.csv")
	b0, err := os.ReadFile(inv)
	if err != nil {
		t.Fatal(err)
	}
	testfix.WriteFile(t, inv, []byte(strings.Replace(string(b0), "127.0.0.1,", "10.0.0.250,", 1)))
	pool := func(c *bootconfig.Config) {
		c.DHCP.Mode = dhcpd.ModeReservation
		c.DHCP.Subnet = "10.0.0.0/8"
		c.DHCP.Listen = "127.0.0.1:0"
		c.DHCP.Pool = &bootconfig.PoolConfig{Range: "10.9.0.1-10.9.0.40", Unknown: true, Lease: bootconfig.Duration(10 * time.Minute)}
	}
	a = startFleetMemberEdit(t, f, ec.Endpoints, 0, pool)
	b = startFleetMemberEdit(t, f, ec.Endpoints, 1, pool)
	_ = startFleetMemberEdit(t, f, ec.Endpoints, 2, pool)
	_ = startFleetMemberEdit(t, f, ec.Endpoints, 3, pool)
	// Unknown MACs are hashed over the live members each server sees: both must see all four
	// (while their views differ, a MAC may get an offer from each; only one REQUEST can bind).
	testfix.WaitFor(t, "four live members seen by a and b", 10*time.Second, func() bool {
		for _, m := range []*fleetMember{a, b} {
			if l := m.srv.fleet.liveIDs.Load(); l == nil || len(*l) != 4 {
				return false
			}
		}
		return true
	})
	return a, b
}

// poolRun is TestFleetPool's clients against two servers' DHCP handlers: what was bound, to whom,
// and how many REQUESTs were refused and DISCOVERs found the pool exhausted.
type poolRun struct {
	handlers []*dhcpd.Handler

	mu              sync.Mutex
	bound           map[string]string // address -> MAC
	naks, exhausted int
}

// leaseAll runs DORA for macs MACs outside the inventory, all at once.
func (r *poolRun) leaseAll(t *testing.T, ctx context.Context, macs int) {
	var wg sync.WaitGroup
	for i := range macs {
		mac := net.HardwareAddr{0x02, 0xbf, 0x77, 0, byte(i >> 8), byte(i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.lease(t, ctx, mac)
		}()
	}
	wg.Wait()
}

// lease runs DORA for mac against both servers at once (only its owner answers), again after a
// NAK, 5 times at most: two servers may offer one address to two MACs (offers are local), but
// only one REQUEST can bind it.
func (r *poolRun) lease(t *testing.T, ctx context.Context, mac net.HardwareAddr) {
	for attempt := 0; attempt < 5; attempt++ {
		offer, h, ended := r.discover(t, ctx, mac)
		if ended {
			return
		}
		if r.request(t, ctx, mac, offer.IP, h) {
			return
		}
	}
	t.Errorf("%s: no lease after 5 attempts", mac)
}

// discover sends mac's DISCOVER to both servers: one at most may offer. It returns the offer and
// the handler that made it, or ended when mac's DORA is over (the pool is exhausted, an error, or
// neither of the two servers owns mac: bs2 or bs3 does).
func (r *poolRun) discover(t *testing.T, ctx context.Context, mac net.HardwareAddr) (offer dhcpd.Decision, h *dhcpd.Handler, ended bool) {
	answers := 0
	for k, hk := range r.handlers {
		disc, _ := dhcpv4.NewDiscovery(mac)
		d := hk.Handle(ctx, disc, dhcpd.Ingress{ServerIP: net.IPv4(127, 0, 0, byte(k+1))})
		switch d.Outcome {
		case dhcpd.OutcomeOffered:
			answers++
			offer, h = d, hk
		case dhcpd.OutcomeExhausted:
			r.mu.Lock()
			r.exhausted++
			r.mu.Unlock()
			return offer, nil, true
		case dhcpd.OutcomeNotOurs:
		default:
			t.Errorf("%s: DISCOVER %s %v", mac, d.Outcome, d.Err)
			return offer, nil, true
		}
	}
	if answers > 1 {
		t.Errorf("%s answered by %d servers", mac, answers)
	}
	return offer, h, h == nil
}

// request sends mac's REQUEST for ip to the handler that offered it and records the answer; it
// says whether mac's DORA is over (acknowledged, or an error), not when it was refused.
func (r *poolRun) request(t *testing.T, ctx context.Context, mac net.HardwareAddr, ip net.IP, h *dhcpd.Handler) bool {
	req, _ := dhcpv4.New(dhcpv4.WithHwAddr(mac), dhcpv4.WithMessageType(dhcpv4.MessageTypeRequest), dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(ip)))
	d := h.Handle(ctx, req, dhcpd.Ingress{ServerIP: net.IPv4(127, 0, 0, 1)})
	r.mu.Lock()
	defer r.mu.Unlock()
	switch d.Outcome {
	case dhcpd.OutcomeAcked:
		if prev, dup := r.bound[d.IP.String()]; dup && prev != mac.String() {
			t.Errorf("%s bound to %s and %s", d.IP, prev, mac)
		}
		r.bound[d.IP.String()] = mac.String()
		return true
	case dhcpd.OutcomeNaked:
		r.naks++
		return false
	default:
		t.Errorf("%s: REQUEST %s %v", mac, d.Outcome, d.Err)
		return true
	}
}

// checkPoolLeases: the etcd leases agree with what was acknowledged, and an address bound to one
// MAC cannot be committed to another.
func checkPoolLeases(t *testing.T, ctx context.Context, a *fleetMember, bound map[string]string) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cache := a.client.WatchPool(cctx, 0)
	if err := cache.Wait(cctx); err != nil {
		t.Fatal(err)
	}
	for ip, mac := range bound {
		if _, ok := cache.Holds(mac, netip.MustParseAddr(ip)); !ok {
			t.Errorf("DHCP acknowledged %s to %s, etcd does not say so", ip, mac)
		}
	}
	var ip string
	for ip = range bound {
		break
	}
	if _, err := a.srv.addrPool.CommitLease(ctx, net.HardwareAddr{2, 0, 0, 0, 0, 9}, net.ParseIP(ip)); err == nil {
		t.Errorf("a second MAC committed %s", ip)
	}
}
