package bootsrv

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/nodestate"
)

// TestTFTPUnknownCeilingProxyOff (issue 36 item 4): in proxy mode and with dhcp.mode off the
// server kept no TFTP slots apart, so hosts with enough addresses of their own could take every
// slot. There too, addresses that are no node's (and in proxy mode, a node's that is not booting)
// now share a quarter of tftp.max_transfers: with 8 slots, two transfers held from two unknown
// addresses refuse a third unknown address, while a node's address is still served.
func TestTFTPUnknownCeilingProxyOff(t *testing.T) {
	for _, mode := range []dhcpd.Mode{dhcpd.ModeProxy, dhcpd.ModeOff} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFixture(t)
			s := f.server(t, func(c *bootconfig.Config) {
				c.DHCP.Mode = mode
				c.TFTP.MaxTransfers, c.TFTP.MaxTransfersPerClient = 8, 4
			})
			ctx, cancel := context.WithCancel(context.Background())
			if err := s.Listen(ctx); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- s.Serve(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			server := s.TFTPAddr().(*net.UDPAddr)
			if mode == dhcpd.ModeProxy {
				// node00 (127.0.0.1) is booting: this server answered its proxy DHCP.
				s.observe(s.log, "node00", nodestate.EvDiscover, "test")
			}

			// Two unknown addresses each start a transfer and never acknowledge: the server
			// keeps their slots for its retries (5 s x 5 at the timeout they ask for).
			for _, from := range []string{"127.0.0.2", "127.0.0.3"} {
				if op := rrqFirstReply(t, from, server); op != 3 && op != 6 {
					t.Fatalf("%s: first answer opcode %d, want DATA or OACK", from, op)
				}
			}
			if op := rrqFirstReply(t, "127.0.0.4", server); op != 5 {
				t.Errorf("a third unknown address: first answer opcode %d, want ERROR (the unknown addresses' quarter is full)", op)
			}
			got, err := tftpGet(server.String(), "undionly.kpxe")
			if err != nil || string(got) != string(f.nbp) {
				t.Errorf("node00's download while the unknown addresses' quarter is full: %d bytes, %v", len(got), err)
			}
		})
	}
}

// rrqFirstReply sends a read request for undionly.kpxe (timeout option 5 s) from the address from
// and returns the opcode of the server's first answer, never acknowledging it.
func rrqFirstReply(t *testing.T, from string, server *net.UDPAddr) uint16 {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(from)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rrq := append([]byte{0, 1}, "undionly.kpxe\x00octet\x00timeout\x005\x00"...)
	if _, err := c.WriteToUDP(rrq, server); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 2048)
	n, _, err := c.ReadFromUDP(buf)
	if err != nil || n < 2 {
		t.Fatalf("%s: no answer to a read request: %v", from, err)
	}
	return binary.BigEndian.Uint16(buf)
}
