package dhcpd

import (
	"context"
	"testing"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

// BenchmarkHandleDORA measures the socket-free work per DORA: parsing both
// requests, deciding and encoding both replies.
func BenchmarkHandleDORA(b *testing.B) {
	h := NewHandler(Config{Reservations: StaticReservations{macKey(testMAC): testRes}})
	in := Ingress{ServerIP: testServer}
	disc := discover(b, vendor("PXEClient:Arch:00007:UNDI:003016"), arch(iana.EFI_X86_64)).ToBytes()
	req := request(b, testMAC, dhcpv4.MessageTypeRequest, dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(testRes.IP)),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(testServer))).ToBytes()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for _, raw := range [][]byte{disc, req} {
			p, err := parse(raw)
			if err != nil {
				b.Fatal(err)
			}
			d := h.Handle(ctx, p, in)
			if d.Reply == nil {
				b.Fatalf("no reply: %v", d.Outcome)
			}
			_ = d.Reply.ToBytes()
		}
	}
}
