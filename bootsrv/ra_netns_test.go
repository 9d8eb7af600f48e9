package bootsrv

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"
)

// TestNetnsNoRouterAdvertisement checks dhcp.ipv6_ra: no-router in a network namespace: a
// router solicitation from the boot network is answered at once with a router advertisement of
// lifetime 0 and no prefix (what ends iPXE's 13-16 s IPv6 wait), on the interface found by the
// server's address; a flood of solicitations gets one answer per 100 ms, not one each.
func TestNetnsNoRouterAdvertisement(t *testing.T) {
	srvNS, cliNS := testfix.Netns(t, "bfrS"), testfix.Netns(t, "bfrC")
	for _, ns := range []string{srvNS, cliNS} {
		// No duplicate address detection: the link-local addresses are usable at once.
		testfix.Sh(t, "ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0")
	}
	testfix.IP(t, cliNS, "link", "add", "cl0", "type", "veth", "peer", "name", "eth0", "netns", srvNS)
	testfix.IP(t, srvNS, "addr", "add", "10.79.0.1/24", "dev", "eth0")
	for _, c := range [][]string{{srvNS, "eth0"}, {srvNS, "lo"}, {cliNS, "cl0"}, {cliNS, "lo"}} {
		testfix.IP(t, c[0], "link", "set", c[1], "up")
	}
	// Both ends need their link-local address (the advertisement's source, the solicitation's).
	for _, c := range [][]string{{srvNS, "eth0"}, {cliNS, "cl0"}} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			out := testfix.IP(t, c[0], "-6", "addr", "show", "dev", c[1])
			if strings.Contains(out, "fe80") && !strings.Contains(out, "tentative") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s %s has no usable link-local address:\n%s", c[0], c[1], out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	f := newFixture(t)
	c := f.config(t, func(c *bootconfig.Config) {
		c.Servers = []bootconfig.ServerEntry{{Name: "bs0", Address: "10.79.0.1"}}
		// Proxy mode sends none unless asked; no dhcp.interfaces: found by the address.
		c.DHCP = bootconfig.DHCPConfig{Mode: dhcpd.ModeProxy, Listen: ":67", IPv6RA: bootconfig.IPv6RANoRouter}
	})
	var s *Server
	err := testfix.InNetns(srvNS, func() (err error) {
		if s, err = New(c, Options{Logger: zaptest.NewLogger(t)}); err != nil {
			return err
		}
		return s.Listen(context.Background())
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if len(s.ras) != 1 || s.ras[0].ifname != "eth0" {
		t.Fatalf("advertisers on %v, want one on eth0", s.ras)
	}
	testfix.Run(t, "Serve", s.Serve)

	// The node: a raw ICMPv6 socket on cl0 that sees router advertisements only.
	var fd int
	err = testfix.InNetns(cliNS, func() (err error) {
		if fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMPV6); err != nil {
			return err
		}
		var filter unix.ICMPv6Filter
		for i := range filter.Data {
			filter.Data[i] = 0xffffffff
		}
		filter.Data[134>>5] &^= 1 << (134 & 31)
		if err := unix.SetsockoptICMPv6Filter(fd, unix.SOL_ICMPV6, unix.ICMPV6_FILTER, &filter); err != nil {
			return err
		}
		if err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, "cl0"); err != nil {
			return err
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_HOPS, 255)
	})
	if err != nil {
		t.Fatal(err)
	}
	sock := os.NewFile(uintptr(fd), "rs")
	defer sock.Close()
	var ifi *net.Interface
	if err := testfix.InNetns(cliNS, func() (err error) { ifi, err = net.InterfaceByName("cl0"); return err }); err != nil {
		t.Fatal(err)
	}
	solicit := func() error {
		rs := []byte{133, 0, 0, 0, 0, 0, 0, 0}
		dst := &unix.SockaddrInet6{Addr: netip.MustParseAddr("ff02::2").As16(), ZoneId: uint32(ifi.Index)}
		return unix.Sendto(fd, rs, 0, dst)
	}
	// count reads advertisements until d has passed; the first one must be "no router".
	count := func(d time.Duration) (n int, first time.Duration) {
		start := time.Now()
		buf := make([]byte, 1500)
		for {
			left := d - time.Since(start)
			if left <= 0 {
				return n, first
			}
			tv := unix.NsecToTimeval(left.Nanoseconds())
			unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
			m, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				continue // timeout
			}
			if m < 16 || buf[0] != 134 || buf[6] != 0 || buf[7] != 0 || buf[5] != 0 {
				t.Fatalf("advertisement % x: want router lifetime 0 and no flags", buf[:m])
			}
			if n == 0 {
				first = time.Since(start)
			}
			n++
		}
	}
	// Past the first unsolicited one, then a solicitation: answered well before the next period.
	count(200 * time.Millisecond)
	// The client's first send may be refused while its link settles (EINVAL once, in a race run on
	// a fresh machine); the test is of the server's answer, so the send is tried again for 2 s.
	var sendErr error
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if sendErr = solicit(); sendErr == nil || time.Now().After(deadline) {
			break
		}
	}
	if sendErr != nil {
		t.Fatalf("router solicitation: %v", sendErr)
	}
	if n, first := count(time.Second); n == 0 || first > 500*time.Millisecond {
		t.Fatalf("solicitation: %d advertisements in 1 s, first after %v; want one at once", n, first)
	}
	// A flood: 2,000 solicitations in about a second get at most one answer per 100 ms.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 2000; i++ {
			if err := solicit(); err != nil {
				t.Errorf("solicitation %d: %v", i, err)
				return
			}
			if i%20 == 19 {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
	n, _ := count(1500 * time.Millisecond)
	<-done
	if n < 3 || n > 1500/100+2 {
		t.Errorf("flood: %d advertisements in 1.5 s, want between 3 and %d (one per 100 ms, and the periodic one)", n, 1500/100+2)
	}
	t.Logf("flood of 2,000 solicitations: %d advertisements in 1.5 s; %d sent in all", n, s.ras[0].Sent())
}
