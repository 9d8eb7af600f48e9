package dhcpd

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

// wire is the part of a reply the tests compare, read back from its bytes.
type wire struct {
	Type                   string
	YIAddr, SIAddr, GIAddr string
	File                   string
	Broadcast              bool
	Options                map[uint8][]byte
}

func toWire(t testing.TB, d *dhcpv4.DHCPv4) wire {
	t.Helper()
	p, err := dhcpv4.FromBytes(d.ToBytes())
	if err != nil {
		t.Fatalf("reply does not parse: %v", err)
	}
	w := wire{Type: p.MessageType().String(), YIAddr: p.YourIPAddr.String(), SIAddr: p.ServerIPAddr.String(),
		GIAddr: p.GatewayIPAddr.String(), File: p.BootFileName, Broadcast: p.IsBroadcast(), Options: map[uint8][]byte{}}
	for code, v := range p.Options {
		if code == 53 {
			continue
		}
		w.Options[code] = v
	}
	return w
}

var testRes = Reservation{
	Name: "node-7", IP: net.IPv4(10, 0, 0, 17), Mask: net.CIDRMask(24, 32),
	Router: net.IPv4(10, 0, 0, 254), DNS: []net.IP{net.IPv4(10, 0, 0, 53)}, Domain: "cluster.test",
}

func TestBuildReply(t *testing.T) {
	guid := []byte{0, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}
	pxeReq := discover(t, vendor("PXEClient:Arch:00000:UNDI:002001"), arch(iana.INTEL_X86PC), generic(97, guid))
	ipxeReq := discover(t, vendor("PXEClient:Arch:00007"), arch(iana.EFI_X86_64), generic(77, []byte("iPXE")))
	relayed := discover(t, dhcpv4.WithGatewayIP(net.IPv4(10, 1, 0, 1)),
		dhcpv4.WithOption(dhcpv4.OptRelayAgentInfo(dhcpv4.OptGeneric(dhcpv4.GenericOptionCode(1), []byte("port7")))),
		dhcpv4.WithOption(dhcpv4.OptClientIdentifier([]byte{1, 2, 3})))
	id := Identity{ServerIP: testServer}
	net10 := []byte{10, 0, 0}

	tests := []struct {
		name string
		req  *dhcpv4.DHCPv4
		p    ReplyParams
		want wire
	}{
		{"pxe offer", pxeReq, ReplyParams{Type: dhcpv4.MessageTypeOffer, Reservation: testRes, Server: id,
			Boot: Classify(pxeReq, BootConfig{}, testServer, "node-7"), LeaseTime: time.Hour},
			wire{Type: "OFFER", YIAddr: "10.0.0.17", SIAddr: "10.0.0.1", GIAddr: "0.0.0.0", File: "undionly.kpxe",
				Options: map[uint8][]byte{
					1: {255, 255, 255, 0}, 3: {10, 0, 0, 254}, 6: {10, 0, 0, 53}, 12: []byte("node-7"), 15: []byte("cluster.test"),
					43: {6, 1, 8, 255}, 51: {0, 0, 0x0e, 0x10}, 54: append(net10, 1), 60: []byte("PXEClient"),
					66: []byte("10.0.0.1"), 67: []byte("undionly.kpxe"), 97: guid,
				}}},
		{"ipxe ack", ipxeReq, ReplyParams{Type: dhcpv4.MessageTypeAck, Reservation: Reservation{IP: testRes.IP}, Server: id,
			Boot: Classify(ipxeReq, BootConfig{HTTPPort: 8080}, testServer, ""), LeaseTime: time.Minute},
			wire{Type: "ACK", YIAddr: "10.0.0.17", SIAddr: "10.0.0.1", GIAddr: "0.0.0.0", File: "http://10.0.0.1:8080/ipxe/52:54:00:12:34:56",
				Options: map[uint8][]byte{
					51: {0, 0, 0, 60}, 54: append(net10, 1), 60: []byte("PXEClient"),
					67: []byte("http://10.0.0.1:8080/ipxe/52:54:00:12:34:56"), 175: {176, 1, 1},
				}}},
		{"proxy offer has no address and no lease", pxeReq, ReplyParams{Type: dhcpv4.MessageTypeOffer, Server: id,
			Boot: Classify(pxeReq, BootConfig{}, testServer, "")},
			wire{Type: "OFFER", YIAddr: "0.0.0.0", SIAddr: "10.0.0.1", GIAddr: "0.0.0.0", File: "undionly.kpxe",
				Options: map[uint8][]byte{43: {6, 1, 8, 255}, 54: append(net10, 1), 60: []byte("PXEClient"),
					66: []byte("10.0.0.1"), 67: []byte("undionly.kpxe"), 97: guid}}},
		{"nak", pxeReq, ReplyParams{Type: dhcpv4.MessageTypeNak, Reservation: testRes, Server: id},
			wire{Type: "NAK", YIAddr: "0.0.0.0", SIAddr: "0.0.0.0", GIAddr: "0.0.0.0", Options: map[uint8][]byte{54: append(net10, 1)}}},
		{"nak through relay sets broadcast", relayed, ReplyParams{Type: dhcpv4.MessageTypeNak, Server: id},
			wire{Type: "NAK", YIAddr: "0.0.0.0", SIAddr: "0.0.0.0", GIAddr: "10.1.0.1", Broadcast: true,
				Options: map[uint8][]byte{54: append(net10, 1), 61: {1, 2, 3}, 82: append([]byte{1, 5}, "port7"...)}}},
		{"relayed offer keeps giaddr, echoes options 61 and 82", relayed, ReplyParams{Type: dhcpv4.MessageTypeOffer, Reservation: Reservation{IP: testRes.IP}, Server: id, LeaseTime: 2 * time.Second},
			wire{Type: "OFFER", YIAddr: "10.0.0.17", SIAddr: "10.0.0.1", GIAddr: "10.1.0.1",
				Options: map[uint8][]byte{51: {0, 0, 0, 2}, 54: append(net10, 1), 61: {1, 2, 3}, 82: append([]byte{1, 5}, "port7"...)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BuildReply(tc.req, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if got.TransactionID != tc.req.TransactionID || got.ClientHWAddr.String() != tc.req.ClientHWAddr.String() {
				t.Errorf("xid/chaddr not copied: %v %v", got.TransactionID, got.ClientHWAddr)
			}
			if diff := cmp.Diff(tc.want, toWire(t, got)); diff != "" {
				t.Errorf("reply mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildReplyLongURL(t *testing.T) {
	req := discover(t, generic(77, []byte("iPXE")))
	long := "http://10.0.0.1/ipxe/" + strings.Repeat("x", 200)
	got, err := BuildReply(req, ReplyParams{Type: dhcpv4.MessageTypeOffer, Server: Identity{ServerIP: testServer},
		Boot: BootChoice{Kind: KindIPXE, BootFile: long}})
	if err != nil {
		t.Fatal(err)
	}
	w := toWire(t, got)
	if w.File != "" || string(w.Options[67]) != long {
		t.Errorf("long URL: file field %q, option 67 %q; want empty file field and the URL in option 67", w.File, w.Options[67])
	}
}

func TestBuildReplyErrors(t *testing.T) {
	req := discover(t)
	for name, p := range map[string]ReplyParams{
		"no server ip": {Type: dhcpv4.MessageTypeOffer},
		"ipv6 server":  {Type: dhcpv4.MessageTypeOffer, Server: Identity{ServerIP: net.ParseIP("2001:db8::1")}},
		"bad type":     {Type: dhcpv4.MessageTypeRelease, Server: Identity{ServerIP: testServer}},
	} {
		if _, err := BuildReply(req, p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := BuildReply(nil, ReplyParams{Type: dhcpv4.MessageTypeOffer, Server: Identity{ServerIP: testServer}}); err == nil {
		t.Error("nil request: no error")
	}
}
