package dhcpd

import (
	"context"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

// TestHandleRelayPlausible: a relayed request is answered (to giaddr, port 67) only when giaddr
// can be a relay agent's: one host's unicast address, not the server's own, outside every subnet
// the server is attached to, and neither the network nor the broadcast address of a network it
// serves. Anything else is refused with its reason, whoever the client is (issue 25).
func TestHandleRelayPlausible(t *testing.T) {
	res := StaticReservations{macKey(testMAC): testRes} // 10.0.0.17/24
	served := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/16")}
	everything := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")} // a server that would answer any relay
	attached := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24"), netip.MustParsePrefix("192.168.5.0/24")}
	pxe := []dhcpv4.Modifier{vendor("PXEClient:Arch:00000"), arch(iana.INTEL_X86PC)}
	offered := summary{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "10.0.0.17", IP: "10.0.0.17"}
	refused := func(reason, ip string) summary { return summary{Outcome: OutcomeRefused, Reason: reason, IP: ip} }
	tests := []struct {
		name     string
		networks []netip.Prefix
		mode     Mode
		giaddr   string
		attached []netip.Prefix
		want     summary
	}{
		{"a relay on a served network", served, "", "10.0.3.1", attached, offered},
		{"a relay on the node's own subnet, the server elsewhere", nil, "", "10.0.0.254", nil, offered},
		{"the server's own address", served, "", "10.0.0.1", nil, refused(ReasonGiaddrSelf, "10.0.0.1")},
		{"inside a subnet the server is attached to", served, "", "10.0.0.254", attached, refused(ReasonGiaddrAttached, "10.0.0.254")},
		{"inside another attached subnet", everything, "", "192.168.5.9", attached, refused(ReasonGiaddrAttached, "192.168.5.9")},
		{"broadcast address of a served network", served, "", "10.0.255.255", nil, refused("giaddr_broadcast", "10.0.255.255")},
		{"network address of a served network", served, "", "10.0.0.0", nil, refused("giaddr_network_address", "10.0.0.0")},
		{"broadcast address of the node's subnet", served, "", "10.0.0.255", nil, refused("giaddr_broadcast", "10.0.0.255")},
		{"limited broadcast", everything, "", "255.255.255.255", nil, refused("giaddr_broadcast", "255.255.255.255")},
		{"multicast", everything, "", "224.0.0.1", nil, refused("giaddr_multicast", "224.0.0.1")},
		{"loopback", everything, "", "127.0.0.1", nil, refused("giaddr_loopback", "127.0.0.1")},
		{"link-local", everything, "", "169.254.7.7", nil, refused("giaddr_link_local", "169.254.7.7")},
		{"this network", everything, "", "0.1.2.3", nil, refused("giaddr_this_network", "0.1.2.3")},
		{"reserved", everything, "", "240.0.0.9", nil, refused("giaddr_reserved", "240.0.0.9")},
		{"proxy mode: the server's own address", nil, ModeProxy, "10.0.0.1", nil, refused(ReasonGiaddrSelf, "10.0.0.1")},
		{"proxy mode: a plausible relay", nil, ModeProxy, "10.0.3.1", attached,
			summary{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "0.0.0.0", File: "undionly.kpxe"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHandler(Config{Mode: tc.mode, Reservations: res, Networks: tc.networks})
			req := request(t, testMAC, dhcpv4.MessageTypeDiscover, append([]dhcpv4.Modifier{giaddr(net.ParseIP(tc.giaddr))}, pxe...)...)
			got := summarize(h.Handle(context.Background(), req, Ingress{ServerIP: testServer, Attached: tc.attached}))
			if tc.want.Type == "OFFER" && tc.mode == "" {
				tc.want.File = "undionly.kpxe"
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestHandleInform: an INFORM is acknowledged (to ciaddr) only when ciaddr is a host address of a
// served network and the client's own: its reserved address, or an address it holds a bound pool
// lease on (issue 25: any ciaddr of the network was acknowledged, its broadcast address included).
func TestHandleInform(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	pool := openTestPool(t, filepath.Join(t.TempDir(), "l.db"), "10.0.1.10", "10.0.1.20", clk)
	t.Cleanup(func() { pool.Close() })
	noIP := net.HardwareAddr{0x52, 0x54, 0, 0, 0, 0x77} // reserved without an address: pool
	unknown := net.HardwareAddr{2, 0, 0, 0, 0, 1}       // no reservation: pool
	offeredOnly := net.HardwareAddr{2, 0, 0, 0, 0, 2}   // offered, not bound
	res := StaticReservations{macKey(testMAC): testRes, macKey(noIP): {Name: "node-p"}}
	ctx := context.Background()
	for m, ip := range map[string]string{noIP.String(): "10.0.1.12", unknown.String(): "10.0.1.10"} {
		hw, _ := net.ParseMAC(m)
		if err := pool.Commit(ctx, hw, net.ParseIP(ip)); err != nil {
			t.Fatal(err)
		}
	}
	if ip, err := pool.Offer(ctx, offeredOnly, net.ParseIP("10.0.1.15")); err != nil || ip.String() != "10.0.1.15" {
		t.Fatalf("offer: %v %v", ip, err)
	}
	withPool := Config{Reservations: res, Pool: pool, Networks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/16")}}
	acked := summary{Outcome: OutcomeAcked, Type: "ACK", YIAddr: "0.0.0.0"}
	refused := func(reason, ip string) summary { return summary{Outcome: OutcomeRefused, Reason: reason, IP: ip} }
	tests := []struct {
		name   string
		cfg    Config
		mac    net.HardwareAddr
		ciaddr string
		want   summary
	}{
		{"reserved: its address", withPool, testMAC, "10.0.0.17", acked},
		{"reserved: another host of its subnet", withPool, testMAC, "10.0.0.99", refused(ReasonCiaddrNotLeased, "10.0.0.99")},
		{"reserved: the broadcast address of its subnet", withPool, testMAC, "10.0.0.255", refused("ciaddr_broadcast", "10.0.0.255")},
		{"reserved: the broadcast address of a served network", withPool, testMAC, "10.0.255.255", refused("ciaddr_broadcast", "10.0.255.255")},
		{"reserved: the network address", withPool, testMAC, "10.0.0.0", refused("ciaddr_network_address", "10.0.0.0")},
		{"reserved, no networks: the broadcast address of its subnet", Config{Reservations: res}, testMAC, "10.0.0.255", refused("ciaddr_broadcast", "10.0.0.255")},
		{"reserved: limited broadcast is on no network", withPool, testMAC, "255.255.255.255", summary{Outcome: OutcomeOffNetwork, IP: "255.255.255.255"}},
		{"pool: the address it holds", withPool, unknown, "10.0.1.10", acked},
		{"pool: another client's address", withPool, unknown, "10.0.1.12", refused(ReasonCiaddrNotLeased, "10.0.1.12")},
		{"pool: an address it was only offered", withPool, offeredOnly, "10.0.1.15", refused(ReasonCiaddrNotLeased, "10.0.1.15")},
		{"known node on the pool: the address it holds", withPool, noIP, "10.0.1.12", acked},
		{"known node on the pool: a reserved node's address", withPool, noIP, "10.0.0.17", refused(ReasonCiaddrNotLeased, "10.0.0.17")},
		{"reserved without an address and no pool", Config{Reservations: res, Networks: withPool.Networks}, noIP, "10.0.0.50", refused(ReasonCiaddrNotLeased, "10.0.0.50")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, tc.mac, dhcpv4.MessageTypeInform, dhcpv4.WithClientIP(net.ParseIP(tc.ciaddr)))
			got := summarize(NewHandler(tc.cfg).Handle(ctx, req, Ingress{ServerIP: testServer}))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestHandlePoolShare: a client the pool refuses for its share gets silence to a DISCOVER and a
// NAK to a REQUEST, both with the reason; the pool's other clients are answered.
func TestHandlePoolShare(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	pool, err := OpenPool(filepath.Join(t.TempDir(), "l.db"), net.ParseIP("10.0.1.10"), net.ParseIP("10.0.1.11"),
		PoolOptions{Now: clk.now, Limited: limitedMAC, LimitedMax: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	h := NewHandler(Config{Pool: pool})
	in := Ingress{ServerIP: testServer}
	ctx := context.Background()
	reqIP := func(ip string) dhcpv4.Modifier {
		return dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.ParseIP(ip)))
	}
	got := []summary{
		summarize(h.Handle(ctx, request(t, mac(100), dhcpv4.MessageTypeDiscover), in)),
		summarize(h.Handle(ctx, request(t, mac(101), dhcpv4.MessageTypeDiscover), in)),
		summarize(h.Handle(ctx, request(t, mac(101), dhcpv4.MessageTypeRequest, reqIP("10.0.1.11")), in)),
		summarize(h.Handle(ctx, request(t, mac(1), dhcpv4.MessageTypeDiscover), in)),
	}
	want := []summary{
		{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "10.0.1.10", IP: "10.0.1.10"},
		{Outcome: OutcomeRefused, Reason: ReasonPoolShare},
		{Outcome: OutcomeNaked, Reason: ReasonPoolShare, Type: "NAK", YIAddr: "0.0.0.0", IP: "10.0.1.11"},
		{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "10.0.1.11", IP: "10.0.1.11"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
