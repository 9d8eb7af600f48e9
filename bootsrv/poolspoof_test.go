package bootsrv

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/insomniacslk/dhcp/dhcpv4"
)

// TestFleetPoolSpoofedRequest (issue 36 item 7): a host on the boot network sent REQUESTs with a
// node's MAC for a free address, without a DISCOVER, and bs0 acknowledged them: the transaction
// that took the new address gave up the node's own, so the node's lease moved in etcd and the
// address the node still used went free for the next client. A REQUEST now binds only the MAC's
// own lease or an address this server offered it; anything else is NAKed and etcd is unchanged.
// The node's own exchanges (DORA, INIT-REBOOT for its lease) still work.
func TestFleetPoolSpoofedRequest(t *testing.T) {
	h, macs, _, m := startShareFleet(t)
	ctx := context.Background()
	node := macs[0]
	got := handlerDORA(ctx, h, node)
	nodeIP, _, _ := strings.Cut(got, " ")
	if _, err := netip.ParseAddr(nodeIP); err != nil {
		t.Fatalf("the node's DORA: %s", got)
	}
	// Another client's DISCOVER: its offer is held for it, not for the node's MAC.
	other := net.HardwareAddr{0x02, 0xbf, 0x36, 0, 0, 1}
	disc, _ := dhcpv4.NewDiscovery(other)
	offer := h.Handle(ctx, disc, dhcpd.Ingress{ServerIP: net.IPv4(127, 0, 0, 1)})
	if offer.Outcome != dhcpd.OutcomeOffered {
		t.Fatalf("the other client's DISCOVER: %s %v", offer.Outcome, offer.Err)
	}
	stranger := net.HardwareAddr{0x02, 0xbf, 0x36, 0, 0, 2}
	free := "10.9.0.19" // past the unknown MACs' part; bs0 offered it to nobody
	if free == nodeIP {
		free = "10.9.0.20"
	}

	for _, tc := range []struct {
		name string
		mac  net.HardwareAddr
		ip   string
		want dhcpd.Outcome
	}{
		{"node's MAC, a free address never offered", node, free, dhcpd.OutcomeNaked},
		{"node's MAC, the address offered to another client", node, offer.IP.String(), dhcpd.OutcomeNaked},
		{"a MAC nobody offered anything, a free address", stranger, "10.9.0.2", dhcpd.OutcomeNaked},
		{"node's MAC, its own lease (INIT-REBOOT)", node, nodeIP, dhcpd.OutcomeAcked},
	} {
		if out := handlerRequest(ctx, h, tc.mac, tc.ip); out != tc.want {
			t.Errorf("%s: REQUEST %s for %s: %s, want %s", tc.name, tc.mac, tc.ip, out, tc.want)
		}
	}
	// A RELEASE naming an address the MAC does not hold frees nothing either.
	rel, _ := dhcpv4.New(dhcpv4.WithHwAddr(node), dhcpv4.WithMessageType(dhcpv4.MessageTypeRelease),
		dhcpv4.WithClientIP(net.ParseIP(free)))
	h.Handle(ctx, rel, dhcpd.Ingress{ServerIP: net.IPv4(127, 0, 0, 1)})

	// etcd, read afresh: the node still holds its address, nobody holds the spoofed ones.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cache := m.client.WatchPool(cctx, 0)
	if err := cache.Wait(cctx); err != nil {
		t.Fatal(err)
	}
	if a, ok := cache.Lease(node.String()); !ok || a.String() != nodeIP {
		t.Errorf("the node's lease in etcd: %v %v, want %s", a, ok, nodeIP)
	}
	if a, ok := cache.Lease(stranger.String()); ok {
		t.Errorf("a spoofed REQUEST bound %s to %s", a, stranger)
	}
	for _, ip := range []string{free, "10.9.0.2", offer.IP.String()} {
		for _, mac := range []net.HardwareAddr{node, stranger, other} {
			if _, ok := cache.Holds(mac.String(), netip.MustParseAddr(ip)); ok {
				t.Errorf("%s holds %s in etcd", mac, ip)
			}
		}
	}

	// The other client completes its exchange: the rule costs real clients nothing.
	req, _ := dhcpv4.NewRequestFromOffer(offer.Reply)
	if d := h.Handle(ctx, req, dhcpd.Ingress{ServerIP: net.IPv4(127, 0, 0, 1)}); d.Outcome != dhcpd.OutcomeAcked {
		t.Errorf("the other client's REQUEST for its offer: %s %v", d.Outcome, d.Err)
	}
}
