package bootsrv

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/insomniacslk/dhcp/dhcpv4"
)

// TestFleetPool: two fleet servers hand out pool addresses to MACs outside the inventory through
// their DHCP handlers at once; every MAC that got an address got its own (etcd transactions), each
// unknown MAC is answered by exactly one server, a REQUEST commits the offered address, and a
// fenced server (etcd stopped) allocates nothing.
func TestFleetPool(t *testing.T) {
	ec := etcdtest.Start(t, etcdtest.Options{Members: 1})
	f := newFixture(t)
	inv := filepath.Join(f.dir, "inventory.csv")
	b0, err := os.ReadFile(inv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inv, []byte(strings.Replace(string(b0), "127.0.0.1,", "10.0.0.250,", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	pool := func(c *Config) {
		c.DHCP.Mode = DHCPReservation
		c.DHCP.Subnet = "10.0.0.0/8"
		c.DHCP.Listen = "127.0.0.1:0"
		c.DHCP.Pool = &PoolConfig{Range: "10.9.0.1-10.9.0.40", Unknown: true, Lease: Duration(10 * time.Minute)}
	}
	a := startFleetMemberEdit(t, f, ec.Endpoints, 0, pool)
	b := startFleetMemberEdit(t, f, ec.Endpoints, 1, pool)
	_ = startFleetMemberEdit(t, f, ec.Endpoints, 2, pool)
	_ = startFleetMemberEdit(t, f, ec.Endpoints, 3, pool)
	waitFor(t, "four live members", 10*time.Second, func() bool {
		l := a.srv.liveServers()
		return len(l) == 4
	})
	handlers := []*dhcpd.Handler{dhcpd.NewHandler(a.srv.dhcpConfig("")), dhcpd.NewHandler(b.srv.dhcpConfig(""))}
	ctx := context.Background()
	const macs = 60 // more than the 40 addresses: some must be refused as exhausted
	var mu sync.Mutex
	owner := map[string]string{} // address -> MAC
	answered := map[string]int{}
	exhausted := 0
	var wg sync.WaitGroup
	for i := range macs {
		mac := net.HardwareAddr{0x02, 0xbf, 0x77, 0, byte(i >> 8), byte(i)}
		for k, h := range handlers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				disc, _ := dhcpv4.NewDiscovery(mac)
				d := h.Handle(ctx, disc, dhcpd.Ingress{ServerIP: net.IPv4(127, 0, 0, byte(k+1))})
				mu.Lock()
				defer mu.Unlock()
				switch d.Outcome {
				case dhcpd.OutcomeOffered:
					answered[mac.String()]++
					if prev, dup := owner[d.IP.String()]; dup && prev != mac.String() {
						t.Errorf("%s offered to %s and %s", d.IP, prev, mac)
					}
					owner[d.IP.String()] = mac.String()
				case dhcpd.OutcomeExhausted:
					exhausted++
				case dhcpd.OutcomeNotOurs:
				default:
					t.Errorf("%s on server %d: %s %v", mac, k, d.Outcome, d.Err)
				}
			}()
		}
	}
	wg.Wait()
	for m, n := range answered {
		if n != 1 {
			t.Errorf("%s answered by %d servers", m, n)
		}
	}
	// Only a's and b's share of the unknown MACs (by hash over four live servers) was asked here.
	if len(owner)+exhausted == 0 || len(owner) > 40 {
		t.Fatalf("%d addresses offered, %d exhausted", len(owner), exhausted)
	}
	t.Logf("%d addresses offered to distinct MACs, %d refused (pool exhausted)", len(owner), exhausted)

	// A REQUEST for the offered address commits it; another MAC asking for it is refused.
	var ip, mac string
	for ip, mac = range owner {
		break
	}
	hw, _ := net.ParseMAC(mac)
	var h *dhcpd.Handler
	for k, s := range []*fleetMember{a, b} {
		if UnknownOwner(hw, s.srv.liveServers()) == s.srv.cfg.ServerID {
			h = handlers[k]
		}
	}
	req, _ := dhcpv4.New(dhcpv4.WithHwAddr(hw), dhcpv4.WithMessageType(dhcpv4.MessageTypeRequest), dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.ParseIP(ip))))
	if d := h.Handle(ctx, req, dhcpd.Ingress{ServerIP: net.IPv4(127, 0, 0, 1)}); d.Outcome != dhcpd.OutcomeAcked || d.IP.String() != ip {
		t.Errorf("REQUEST %s for %s: %s %v %v", ip, mac, d.Outcome, d.IP, d.Err)
	}
	if _, err := a.srv.addrPool.CommitLease(ctx, net.HardwareAddr{2, 0, 0, 0, 0, 9}, net.ParseIP(ip)); err == nil {
		t.Errorf("a second MAC committed %s", ip)
	}

	// etcd stops: once fenced, the pool allocates nothing.
	ec.Member(0).Stop()
	waitFor(t, "fenced", 5*time.Second, func() bool { return !a.srv.fleet.m.Load().Valid() })
	if _, err := a.srv.addrPool.Offer(ctx, net.HardwareAddr{2, 0, 0, 0, 0, 10}, nil); err == nil {
		t.Error("a fenced server offered a pool address")
	} else {
		t.Logf("fenced offer: %v", err)
	}
	ec.Member(0).Restart()
}

