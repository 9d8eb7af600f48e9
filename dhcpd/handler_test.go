package dhcpd

import (
	"context"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

var otherMAC = net.HardwareAddr{0x52, 0x54, 0x00, 0xff, 0xff, 0xff}

func request(t testing.TB, mac net.HardwareAddr, mt dhcpv4.MessageType, mods ...dhcpv4.Modifier) *dhcpv4.DHCPv4 {
	t.Helper()
	d, err := dhcpv4.New(append([]dhcpv4.Modifier{dhcpv4.WithHwAddr(mac), dhcpv4.WithMessageType(mt)}, mods...)...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// summary is what the handler tests compare.
type summary struct {
	Outcome Outcome
	Reason  string
	Type    string // reply type, "" for silence
	YIAddr  string
	File    string
	IP      string
}

func summarize(d Decision) summary {
	s := summary{Outcome: d.Outcome, Reason: d.Reason}
	if d.IP != nil {
		s.IP = d.IP.String()
	}
	if d.Reply != nil {
		s.Type = d.Reply.MessageType().String()
		s.YIAddr = d.Reply.YourIPAddr.String()
		s.File = d.Reply.BootFileNameOption()
	}
	return s
}

func giaddr(ip net.IP) dhcpv4.Modifier { return func(d *dhcpv4.DHCPv4) { d.GatewayIPAddr = ip } }

func TestHandleReservation(t *testing.T) {
	res := StaticReservations{macKey(testMAC): testRes}
	reqIP := func(ip net.IP) dhcpv4.Modifier { return dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(ip)) }
	sid := func(ip net.IP) dhcpv4.Modifier { return dhcpv4.WithOption(dhcpv4.OptServerIdentifier(ip)) }
	pxe := []dhcpv4.Modifier{vendor("PXEClient:Arch:00007"), arch(iana.EFI_X86_64)}
	in := Ingress{ServerIP: testServer}

	tests := []struct {
		name string
		cfg  Config
		req  *dhcpv4.DHCPv4
		want summary
	}{
		{"discover reserved", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeDiscover, pxe...),
			summary{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "10.0.0.17", File: "ipxe.efi", IP: "10.0.0.17"}},
		{"discover unknown mac is silent", Config{Reservations: res}, request(t, otherMAC, dhcpv4.MessageTypeDiscover, pxe...),
			summary{Outcome: OutcomeNotOurs}},
		{"no reservations at all is silent", Config{}, request(t, testMAC, dhcpv4.MessageTypeDiscover),
			summary{Outcome: OutcomeNotOurs}},
		{"request reserved ip", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeRequest, reqIP(testRes.IP), sid(testServer)),
			summary{Outcome: OutcomeAcked, Type: "ACK", YIAddr: "10.0.0.17", IP: "10.0.0.17"}},
		{"renew by ciaddr", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeRequest, dhcpv4.WithClientIP(testRes.IP)),
			summary{Outcome: OutcomeAcked, Type: "ACK", YIAddr: "10.0.0.17", IP: "10.0.0.17"}},
		{"request wrong ip is naked", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeRequest, reqIP(net.IPv4(10, 9, 9, 9))),
			summary{Outcome: OutcomeNaked, Type: "NAK", YIAddr: "0.0.0.0", IP: "10.9.9.9"}},
		{"request with no ip is naked", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeRequest),
			summary{Outcome: OutcomeNaked, Type: "NAK", YIAddr: "0.0.0.0"}},
		{"request for another server", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeRequest, reqIP(testRes.IP), sid(net.IPv4(10, 0, 0, 2))),
			summary{Outcome: OutcomeOtherServer}},
		{"request unknown mac is silent", Config{Reservations: res}, request(t, otherMAC, dhcpv4.MessageTypeRequest, reqIP(testRes.IP)),
			summary{Outcome: OutcomeNotOurs}},
		{"inform", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeInform, dhcpv4.WithClientIP(testRes.IP)),
			summary{Outcome: OutcomeAcked, Type: "ACK", YIAddr: "0.0.0.0"}},
		{"release reserved", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeRelease, dhcpv4.WithClientIP(testRes.IP)),
			summary{Outcome: OutcomeReleased, IP: "10.0.0.17"}},
		{"off mode", Config{Mode: ModeOff, Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeDiscover),
			summary{Outcome: OutcomeIgnored}},
		{"reply opcode ignored", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeOffer, func(d *dhcpv4.DHCPv4) { d.OpCode = dhcpv4.OpcodeBootReply }),
			summary{Outcome: OutcomeIgnored}},
		{"plain client gets address and no file", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeDiscover),
			summary{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "10.0.0.17", IP: "10.0.0.17"}},
		// Issue 13: a relay packet whose giaddr is on none of the server's networks was
		// answered (to that giaddr), and an INFORM was answered to any ciaddr.
		{"relay on the node's network", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeDiscover, giaddr(net.IPv4(10, 0, 0, 254))),
			summary{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "10.0.0.17", IP: "10.0.0.17"}},
		{"relay on a configured network", Config{Reservations: res, Networks: []netip.Prefix{netip.MustParsePrefix("192.168.7.0/24")}},
			request(t, testMAC, dhcpv4.MessageTypeDiscover, giaddr(net.IPv4(192, 168, 7, 1))),
			summary{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "10.0.0.17", IP: "10.0.0.17"}},
		{"relay off every network is silent", Config{Reservations: res, Networks: []netip.Prefix{netip.MustParsePrefix("192.168.7.0/24")}},
			request(t, testMAC, dhcpv4.MessageTypeDiscover, giaddr(net.IPv4(203, 0, 113, 9))),
			summary{Outcome: OutcomeOffNetwork, IP: "203.0.113.9"}},
		{"relayed request off every network is silent", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeRequest, reqIP(testRes.IP), giaddr(net.IPv4(10, 0, 1, 1))),
			summary{Outcome: OutcomeOffNetwork, IP: "10.0.1.1"}},
		{"pool relay needs a configured network", Config{Pool: openTestPool(t, filepath.Join(t.TempDir(), "l.db"), "10.0.0.10", "10.0.0.12", &fakeClock{})}, request(t, otherMAC, dhcpv4.MessageTypeDiscover, giaddr(net.IPv4(10, 0, 0, 254))),
			summary{Outcome: OutcomeOffNetwork, IP: "10.0.0.254"}},
		{"inform from another address is silent", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeInform, dhcpv4.WithClientIP(net.IPv4(198, 51, 100, 7))),
			summary{Outcome: OutcomeOffNetwork, IP: "198.51.100.7"}},
		{"inform without ciaddr is silent", Config{Reservations: res}, request(t, testMAC, dhcpv4.MessageTypeInform),
			summary{Outcome: OutcomeOffNetwork, IP: "0.0.0.0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(NewHandler(tc.cfg).Handle(context.Background(), tc.req, in))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandleProxy(t *testing.T) {
	res := StaticReservations{macKey(testMAC): testRes}
	pxe := []dhcpv4.Modifier{vendor("PXEClient:Arch:00000"), arch(iana.INTEL_X86PC)}
	dhcpPort := Ingress{ServerIP: testServer}
	bootPort := Ingress{ServerIP: testServer, BootServer: true}
	tests := []struct {
		name string
		res  Reservations
		req  *dhcpv4.DHCPv4
		in   Ingress
		want summary
	}{
		{"discover on 67", res, request(t, testMAC, dhcpv4.MessageTypeDiscover, pxe...), dhcpPort,
			summary{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "0.0.0.0", File: "undionly.kpxe"}},
		{"nil reservations answers every pxe client", nil, request(t, otherMAC, dhcpv4.MessageTypeDiscover, pxe...), dhcpPort,
			summary{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "0.0.0.0", File: "undionly.kpxe"}},
		{"unknown mac", res, request(t, otherMAC, dhcpv4.MessageTypeDiscover, pxe...), dhcpPort, summary{Outcome: OutcomeNotOurs}},
		{"not a pxe client", res, request(t, testMAC, dhcpv4.MessageTypeDiscover), dhcpPort, summary{Outcome: OutcomeNotPXE}},
		{"request on 67 belongs to the dhcp server", res, request(t, testMAC, dhcpv4.MessageTypeRequest, pxe...), dhcpPort, summary{Outcome: OutcomeIgnored}},
		{"request on 4011", res, request(t, testMAC, dhcpv4.MessageTypeRequest, pxe...), bootPort,
			summary{Outcome: OutcomeAcked, Type: "ACK", YIAddr: "0.0.0.0", File: "undionly.kpxe"}},
		{"discover on 4011 ignored", res, request(t, testMAC, dhcpv4.MessageTypeDiscover, pxe...), bootPort, summary{Outcome: OutcomeIgnored}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHandler(Config{Mode: ModeProxy, Reservations: tc.res})
			got := summarize(h.Handle(context.Background(), tc.req, tc.in))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandlePool(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pool, err := OpenPool(filepath.Join(t.TempDir(), "leases.db"), net.IPv4(10, 0, 1, 10), net.IPv4(10, 0, 1, 11),
		PoolOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	foreign := net.HardwareAddr{2, 0, 0, 0, 0, 0xff} // reserved on another boot server
	h := NewHandler(Config{Reservations: StaticReservations{macKey(testMAC): testRes}, Pool: pool,
		PoolAllowed: func(m net.HardwareAddr) bool { return m.String() != foreign.String() },
		PoolNetwork: Reservation{Name: "ignored", Mask: net.CIDRMask(24, 32)}})
	in := Ingress{ServerIP: testServer}
	ctx := context.Background()
	macs := []net.HardwareAddr{{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}, {2, 0, 0, 0, 0, 3}}

	got := []summary{summarize(h.Handle(ctx, request(t, foreign, dhcpv4.MessageTypeDiscover), in))}
	for _, m := range macs {
		got = append(got, summarize(h.Handle(ctx, request(t, m, dhcpv4.MessageTypeDiscover), in)))
	}
	// mac 2 asks for mac 1's offered address: NAK. mac 1 takes it.
	got = append(got, summarize(h.Handle(ctx, request(t, macs[1], dhcpv4.MessageTypeRequest,
		dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.IPv4(10, 0, 1, 10)))), in)))
	got = append(got, summarize(h.Handle(ctx, request(t, macs[0], dhcpv4.MessageTypeRequest,
		dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.IPv4(10, 0, 1, 10)))), in)))
	// The reserved MAC still gets its reservation, not a pool address.
	got = append(got, summarize(h.Handle(ctx, request(t, testMAC, dhcpv4.MessageTypeDiscover), in)))
	// Outside the pool: NAK.
	got = append(got, summarize(h.Handle(ctx, request(t, macs[2], dhcpv4.MessageTypeRequest,
		dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.IPv4(192, 168, 0, 1)))), in)))

	want := []summary{
		{Outcome: OutcomeNotOurs},
		{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "10.0.1.10", IP: "10.0.1.10"},
		{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "10.0.1.11", IP: "10.0.1.11"},
		{Outcome: OutcomeExhausted},
		{Outcome: OutcomeNaked, Type: "NAK", YIAddr: "0.0.0.0", IP: "10.0.1.10"},
		{Outcome: OutcomeAcked, Type: "ACK", YIAddr: "10.0.1.10", IP: "10.0.1.10"},
		{Outcome: OutcomeOffered, Type: "OFFER", YIAddr: "10.0.0.17", IP: "10.0.0.17"},
		{Outcome: OutcomeNaked, Type: "NAK", YIAddr: "0.0.0.0", IP: "192.168.0.1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestNewStaticReservations(t *testing.T) {
	s, err := NewStaticReservations(map[string]Reservation{"52-54-00-12-34-56": testRes})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := s.Lookup(testMAC); !ok || !r.IP.Equal(testRes.IP) {
		t.Errorf("Lookup(%v) = %v, %v", testMAC, r, ok)
	}
	if _, ok := s.Lookup(otherMAC); ok {
		t.Error("unknown MAC found")
	}
	_, err = NewStaticReservations(map[string]Reservation{"nonsense": {Name: "node-9"}})
	if err == nil || !strings.Contains(err.Error(), `"nonsense"`) || !strings.Contains(err.Error(), "node-9") {
		t.Errorf("bad MAC error %v does not name the entry", err)
	}
}
