package dhcpd

import (
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

func TestRouteReply(t *testing.T) {
	yi := net.IPv4(10, 0, 0, 17).To4()
	offer := func(mods ...dhcpv4.Modifier) *dhcpv4.DHCPv4 {
		r, err := dhcpv4.New(append([]dhcpv4.Modifier{dhcpv4.WithMessageType(dhcpv4.MessageTypeOffer), dhcpv4.WithYourIP(yi)}, mods...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	nak, err := dhcpv4.New(dhcpv4.WithMessageType(dhcpv4.MessageTypeNak))
	if err != nil {
		t.Fatal(err)
	}
	noBcast := dhcpv4.WithBroadcast(false)
	clientPeer := &net.UDPAddr{IP: net.IPv4zero, Port: 68}
	const ifidx = 3

	tests := []struct {
		name       string
		req, reply *dhcpv4.DHCPv4
		in         Arrival
		want       Route
	}{
		{
			name: "no address, no broadcast bit: unicast to yiaddr at chaddr",
			req:  discover(t, noBcast), reply: offer(), in: Arrival{Peer: clientPeer, IfIndex: ifidx},
			want: Route{Delivery: DeliverUnicast, Addr: &net.UDPAddr{IP: yi, Port: 68}, IfIndex: ifidx, HWAddr: testMAC},
		},
		{
			name: "broadcast bit set: broadcast",
			req:  discover(t, dhcpv4.WithBroadcast(true)), reply: offer(), in: Arrival{Peer: clientPeer, IfIndex: ifidx},
			want: Route{Delivery: DeliverBroadcast, Addr: &net.UDPAddr{IP: net.IPv4bcast, Port: 68}, IfIndex: ifidx},
		},
		{
			name: "relay: giaddr, server port, even with the broadcast bit",
			req:  discover(t, dhcpv4.WithBroadcast(true), dhcpv4.WithGatewayIP(net.IPv4(10, 1, 0, 1))), reply: offer(),
			in:   Arrival{Peer: &net.UDPAddr{IP: net.IPv4(10, 1, 0, 1), Port: 67}, IfIndex: ifidx},
			want: Route{Delivery: DeliverRelay, Addr: &net.UDPAddr{IP: net.IPv4(10, 1, 0, 1).To4(), Port: 67}},
		},
		{
			name: "client with an address: ciaddr",
			req:  discover(t, noBcast, dhcpv4.WithClientIP(net.IPv4(10, 0, 0, 9))), reply: offer(), in: Arrival{Peer: &net.UDPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 68}, IfIndex: ifidx},
			want: Route{Delivery: DeliverClientIP, Addr: &net.UDPAddr{IP: net.IPv4(10, 0, 0, 9).To4(), Port: 68}},
		},
		{
			name: "NAK to a client with an address: broadcast (RFC 2131 4.1)",
			req:  discover(t, noBcast, dhcpv4.WithClientIP(net.IPv4(10, 0, 0, 9))), reply: nak, in: Arrival{Peer: clientPeer, IfIndex: ifidx},
			want: Route{Delivery: DeliverBroadcast, Addr: &net.UDPAddr{IP: net.IPv4bcast, Port: 68}, IfIndex: ifidx},
		},
		{
			name: "no yiaddr (proxyDHCP offer): broadcast",
			req:  discover(t, noBcast), reply: offer(dhcpv4.WithYourIP(net.IPv4zero)), in: Arrival{Peer: clientPeer, IfIndex: ifidx},
			want: Route{Delivery: DeliverBroadcast, Addr: &net.UDPAddr{IP: net.IPv4bcast, Port: 68}, IfIndex: ifidx},
		},
		{
			name:  "not Ethernet: broadcast",
			req:   discover(t, noBcast, dhcpv4.WithHwAddr(net.HardwareAddr{1, 2, 3, 4, 5, 6, 7, 8}), func(d *dhcpv4.DHCPv4) { d.HWType = iana.HWTypeInfiniband }),
			reply: offer(), in: Arrival{Peer: clientPeer, IfIndex: ifidx},
			want: Route{Delivery: DeliverBroadcast, Addr: &net.UDPAddr{IP: net.IPv4bcast, Port: 68}, IfIndex: ifidx},
		},
		{
			name: "arriving interface unknown: broadcast, routing picks the interface",
			req:  discover(t, noBcast), reply: offer(), in: Arrival{Peer: clientPeer},
			want: Route{Delivery: DeliverBroadcast, Addr: &net.UDPAddr{IP: net.IPv4bcast, Port: 68}},
		},
		{
			name: "proxyDHCP boot-server port: back to the sender",
			req:  discover(t, noBcast), reply: offer(), in: Arrival{Peer: &net.UDPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 4011}, IfIndex: ifidx, BootServer: true},
			want: Route{Delivery: DeliverPeer, Addr: &net.UDPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 4011}},
		},
		{
			name: "client on a non-standard port: back to the sender",
			req:  discover(t, noBcast), reply: offer(), in: Arrival{Peer: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, IfIndex: 1},
			want: Route{Delivery: DeliverPeer, Addr: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := RouteReply(tc.req, tc.reply, tc.in, 68, 67)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RouteReply (-want +got):\n%s", diff)
			}
		})
	}
}
