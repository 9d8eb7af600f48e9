package dhcpd

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

// FuzzHandle feeds arbitrary datagrams through the server's parser and the
// handler in every mode: nothing may panic, and every reply must encode to a
// packet that parses again.
func FuzzHandle(f *testing.F) {
	for _, d := range fuzzSeeds(f) {
		f.Add(d.ToBytes())
	}
	f.Add([]byte{})
	f.Add(make([]byte, 240))

	pool, err := OpenPool(filepath.Join(f.TempDir(), "fuzz.db"), net.IPv4(10, 2, 0, 1), net.IPv4(10, 2, 0, 8),
		PoolOptions{OfferTime: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { pool.Close() })
	res := StaticReservations{macKey(testMAC): testRes}
	handlers := []*Handler{
		NewHandler(Config{Reservations: res, Pool: pool}),
		NewHandler(Config{Mode: ModeProxy, Reservations: res}),
		NewHandler(Config{Mode: ModeProxy}),
	}
	ins := []Ingress{{ServerIP: testServer}, {ServerIP: testServer, BootServer: true}}

	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := parse(b)
		if err != nil {
			return
		}
		for _, h := range handlers {
			for _, in := range ins {
				d := h.Handle(context.Background(), req, in)
				if d.Outcome == "" {
					t.Fatalf("empty outcome for %s", req.Summary())
				}
				if d.Reply == nil {
					continue
				}
				if _, err := dhcpv4.FromBytes(d.Reply.ToBytes()); err != nil {
					t.Fatalf("reply does not parse: %v\nrequest: %s", err, req.Summary())
				}
			}
		}
	})
}

func fuzzSeeds(tb testing.TB) []*dhcpv4.DHCPv4 {
	return []*dhcpv4.DHCPv4{
		discover(tb, vendor("PXEClient:Arch:00000:UNDI:002001"), arch(iana.INTEL_X86PC)),
		discover(tb, vendor("PXEClient:Arch:00007:UNDI:003016"), arch(iana.EFI_X86_64), generic(97, make([]byte, 17))),
		discover(tb, vendor("HTTPClient:Arch:00016:UNDI:003001"), arch(iana.EFI_X86_64_HTTP)),
		discover(tb, vendor("PXEClient:Arch:00007"), arch(iana.EFI_X86_64), generic(77, []byte("iPXE")), generic(175, []byte{177, 1, 1})),
		request(tb, testMAC, dhcpv4.MessageTypeRequest, dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(testRes.IP))),
		request(tb, net.HardwareAddr{2, 0, 0, 0, 0, 9}, dhcpv4.MessageTypeDiscover, dhcpv4.WithGatewayIP(net.IPv4(10, 1, 0, 1))),
		request(tb, net.HardwareAddr{2, 0, 0, 0, 0, 9}, dhcpv4.MessageTypeRequest, dhcpv4.WithClientIP(net.IPv4(10, 2, 0, 1))),
		request(tb, testMAC, dhcpv4.MessageTypeRelease, dhcpv4.WithClientIP(testRes.IP)),
		request(tb, testMAC, dhcpv4.MessageTypeInform, dhcpv4.WithClientIP(testRes.IP)),
		request(tb, net.HardwareAddr{2, 0, 0, 0, 0, 9}, dhcpv4.MessageTypeDecline, dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.IPv4(10, 2, 0, 1)))),
	}
}
