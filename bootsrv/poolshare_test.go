package bootsrv

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
)

// shareInventory is the mini machine's inventory with node i reserved at net.(10+i) (net: the
// first three bytes, "127.0.0") except the nodes noIP lists, which take pool addresses.
func shareInventory(t *testing.T, net string, noIP ...int) string {
	h := testfix.MiniHierarchy(t)
	var sb strings.Builder
	sb.WriteString("name,mac,ip,node\n")
	for i := 0; i < h.NumNodes(); i++ {
		ip := fmt.Sprintf("%s.%d", net, 10+i)
		for _, k := range noIP {
			if i == k {
				ip = ""
			}
		}
		fmt.Fprintf(&sb, "node%02d,52:54:00:00:00:%02x,%s,%s\n", i, i, ip, h.NodeName(i))
	}
	return sb.String()
}

// handlerDORA runs DISCOVER and REQUEST for mac through h and returns "address hostname", or the
// outcome that ended the exchange.
func handlerDORA(ctx context.Context, h *dhcpd.Handler, mac net.HardwareAddr) string {
	in := dhcpd.Ingress{ServerIP: net.IPv4(127, 0, 0, 1)}
	disc, _ := dhcpv4.NewDiscovery(mac)
	d := h.Handle(ctx, disc, in)
	if d.Outcome != dhcpd.OutcomeOffered {
		return string(d.Outcome)
	}
	req, _ := dhcpv4.NewRequestFromOffer(d.Reply)
	a := h.Handle(ctx, req, in)
	if a.Outcome != dhcpd.OutcomeAcked {
		return string(a.Outcome)
	}
	return strings.TrimSpace(a.IP.String() + " " + a.Reply.HostName())
}

// handlerRequest sends mac's REQUEST for ip without a DISCOVER (INIT-REBOOT) and returns the
// outcome.
func handlerRequest(ctx context.Context, h *dhcpd.Handler, mac net.HardwareAddr, ip string) dhcpd.Outcome {
	req, _ := dhcpv4.New(dhcpv4.WithHwAddr(mac), dhcpv4.WithMessageType(dhcpv4.MessageTypeRequest),
		dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.ParseIP(ip))))
	return h.Handle(ctx, req, dhcpd.Ingress{ServerIP: net.IPv4(127, 0, 0, 1)}).Outcome
}

// unknownFlood runs DORA for the MACs outside the inventory from..from+n-1 and returns how many
// were bound.
func unknownFlood(ctx context.Context, h *dhcpd.Handler, from, n int) int {
	bound := 0
	for i := from; i < from+n; i++ {
		if got := handlerDORA(ctx, h, net.HardwareAddr{0x02, 0xbf, 0x25, 0, 0, byte(i)}); strings.HasPrefix(got, "127.") || strings.HasPrefix(got, "10.") {
			bound++
		}
	}
	return bound
}

// TestPoolKeepsRoomForInventory: with dhcp.pool.unknown, 20 MACs outside the inventory emptied a
// 20-address pool and the inventory's nodes without an ip then found it exhausted (issue 25). MACs
// outside the inventory now hold at most the pool's size less those nodes (17 of 20), by DISCOVER
// or by a bare REQUEST, and every inventory node still gets an address.
func TestPoolKeepsRoomForInventory(t *testing.T) {
	f := newFixture(t)
	testfix.WriteFile(t, filepath.Join(f.dir, "inventory.csv"), []byte(shareInventory(t, "127.0.0", 29, 30, 31)))
	s := f.server(t, func(c *bootconfig.Config) {
		c.DHCP = bootconfig.DHCPConfig{Mode: dhcpd.ModeReservation, Listen: "127.0.0.1:0", Subnet: "127.0.0.0/8",
			Pool: &bootconfig.PoolConfig{Range: "127.0.1.1-127.0.1.20", Lease: bootconfig.Duration(10 * time.Minute), Unknown: true}}
	})
	h := dhcpd.NewHandler(s.dhcpConfig(""))
	ctx := context.Background()
	if n := unknownFlood(ctx, h, 0, 17); n != 17 {
		t.Errorf("%d of the first 17 MACs outside the inventory bound", n)
	}
	if out := handlerRequest(ctx, h, net.HardwareAddr{0x02, 0xbf, 0x25, 0, 1, 0}, "127.0.1.20"); out != dhcpd.OutcomeNaked {
		t.Errorf("a REQUEST without DISCOVER for a free address past the share: %s, want naked", out)
	}
	if n := unknownFlood(ctx, h, 17, 3); n != 0 {
		t.Errorf("%d more MACs outside the inventory bound past the share (20 addresses less 3 inventory nodes)", n)
	}
	var got []string
	for _, i := range []int{29, 30, 31} {
		got = append(got, handlerDORA(ctx, h, net.HardwareAddr{0x52, 0x54, 0, 0, 0, byte(i)}))
	}
	want := []string{"127.0.1.18 node29", "127.0.1.19 node30", "127.0.1.20 node31"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inventory nodes without an ip (-want +got):\n%s", diff)
	}
}

// startShareFleet starts bs0 alone in a fleet whose pool is 10.9.0.1-10.9.0.20 with unknown MACs
// on, and three of bs0's home nodes without an ip; it returns bs0's DHCP handler and the MACs and
// indexes of those nodes once bs0 answers them and every unknown MAC, and bs0 itself.
func startShareFleet(t *testing.T) (*dhcpd.Handler, []net.HardwareAddr, []int, *fleetMember) {
	ec := etcdtest.Start(t, etcdtest.Options{Members: 1})
	f := newFixture(t)
	// Three nodes of bs0's own (its home nodes: it answers them whoever else is up).
	a, err := bootconfig.AssignServers(testfix.MiniHierarchy(t), "bcda", len(fleetServers()), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var home []int
	for i, srv := range a.Server {
		if srv == 0 && len(home) < 3 {
			home = append(home, i)
		}
	}
	testfix.WriteFile(t, filepath.Join(f.dir, "inventory.csv"), []byte(shareInventory(t, "10.0.0", home...)))
	m := startFleetMemberEdit(t, f, ec.Endpoints, 0, func(c *bootconfig.Config) {
		c.DHCP.Mode = dhcpd.ModeReservation
		c.DHCP.Subnet = "10.0.0.0/8"
		c.DHCP.Listen = "127.0.0.1:0"
		c.DHCP.Pool = &bootconfig.PoolConfig{Range: "10.9.0.1-10.9.0.20", Unknown: true, Lease: bootconfig.Duration(10 * time.Minute)}
	})
	// Alone in the fleet, bs0 answers every MAC outside the inventory once it sees itself so.
	testfix.WaitFor(t, "bs0 alone live", 10*time.Second, func() bool {
		l := m.srv.fleet.liveIDs.Load()
		return l != nil && len(*l) == 1
	})
	var macs []net.HardwareAddr
	for _, i := range home {
		macs = append(macs, net.HardwareAddr{0x52, 0x54, 0, 0, 0, byte(i)})
	}
	testfix.WaitFor(t, "bs0 owns its nodes", 10*time.Second, func() bool {
		for _, mac := range macs {
			if _, ok := m.srv.res.Lookup(mac); !ok {
				return false
			}
		}
		return true
	})
	return dhcpd.NewHandler(m.srv.dhcpConfig("")), macs, home, m
}

// TestFleetPoolKeepsRoomForInventory is TestPoolKeepsRoomForInventory for a fleet's pool in etcd:
// the unknown MACs are kept to the range's first 17 addresses, the inventory nodes take the rest.
func TestFleetPoolKeepsRoomForInventory(t *testing.T) {
	h, macs, home, _ := startShareFleet(t)
	ctx := context.Background()
	if n := unknownFlood(ctx, h, 0, 17); n != 17 {
		t.Errorf("%d of the first 17 MACs outside the inventory bound", n)
	}
	if out := handlerRequest(ctx, h, net.HardwareAddr{0x02, 0xbf, 0x25, 0, 1, 0}, "10.9.0.19"); out != dhcpd.OutcomeNaked {
		t.Errorf("a REQUEST without DISCOVER for a free address past the share: %s, want naked", out)
	}
	if n := unknownFlood(ctx, h, 17, 3); n != 0 {
		t.Errorf("%d more MACs outside the inventory bound past the share (20 addresses less 3 inventory nodes)", n)
	}
	var got, want []string
	for k, mac := range macs {
		got = append(got, handlerDORA(ctx, h, mac))
		want = append(want, fmt.Sprintf("10.9.0.%d node%02d", 18+k, home[k]))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inventory nodes without an ip (-want +got):\n%s", diff)
	}
}

// TestFleetPoolKnownNodeKeepsItsAddress: an inventory node takes a free address past the unknown
// MACs' part first, but one holding an address inside it (written to etcd before, as when the
// parts were different) keeps it.
func TestFleetPoolKnownNodeKeepsItsAddress(t *testing.T) {
	h, macs, home, m := startShareFleet(t)
	ctx := context.Background()
	if err := m.srv.addrPool.(*fleetPool).cache.Take(ctx, macs[0].String(), netip.MustParseAddr("10.9.0.5"), time.Now().Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	got := []string{handlerDORA(ctx, h, macs[0]), handlerDORA(ctx, h, macs[1])}
	want := []string{fmt.Sprintf("10.9.0.5 node%02d", home[0]), fmt.Sprintf("10.9.0.18 node%02d", home[1])}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
