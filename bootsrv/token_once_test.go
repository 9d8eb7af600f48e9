package bootsrv

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/insomniacslk/dhcp/dhcpv4"
)

// TestAttackScriptOnce: a booting node's token could be reused: its iPXE script (and the token in
// it) was served again during the open attempt, so a host that took the node's address after its
// iPXE stage reported the boot (issue 36 item 3). The script now goes out once per DHCP exchange of
// the node's: the machine starting over gets it again, a host that only took the address does not.
func TestAttackScriptOnce(t *testing.T) {
	s := reservationServer(t)
	const nodeAddr = "10.0.0.250:40000"
	h := s.Handler()
	mac, _ := net.ParseMAC("52:54:00:00:00:00")
	obs := newDHCPObserver(s)
	dora := func(kind dhcpd.ClientKind) {
		obs.OnDHCP(mac, dhcpv4.MessageTypeDiscover, dhcpd.OutcomeOffered, nil, kind)
		obs.OnDHCP(mac, dhcpv4.MessageTypeRequest, dhcpd.OutcomeAcked, net.IPv4(10, 0, 0, 250), kind)
	}
	fetch := func(want int) string {
		t.Helper()
		w := do(t, h, "GET", "/ipxe/52:54:00:00:00:00", "", nodeAddr)
		if w.Code != want {
			t.Fatalf("script: %d %s, want %d", w.Code, w.Body, want)
		}
		return w.Body.String()
	}
	dora(dhcpd.KindIPXE)
	tok := nodeToken(s, "node00")
	if first := fetch(http.StatusOK); !strings.Contains(first, tok) {
		t.Fatalf("the script lacks the attempt's token:\n%s", first)
	}
	// The attacker, holding node00's address now, asks again in the same attempt.
	if again := fetch(http.StatusConflict); strings.Contains(again, tok) || !strings.Contains(again, "went out already") {
		t.Errorf("second fetch in the attempt: %s", again)
	}
	// The machine starts over: its DHCP exchange lets it fetch the script once more, in the same
	// attempt (a spoofed DISCOVER must not void the token the real node boots with).
	dora(dhcpd.KindIPXE)
	if n := nodeAt(t, s, "node00"); n.Attempt != 1 || n.State != nodestate.NBP {
		t.Fatalf("after iPXE's DHCP past its script: attempt %d, %v; want attempt 1, nbp", n.Attempt, n.State)
	}
	if again := fetch(http.StatusOK); !strings.Contains(again, tok) {
		t.Errorf("the script after a new DHCP exchange lacks the attempt's token:\n%s", again)
	}
	fetch(http.StatusConflict)
	// The kernel delivered, then PXE firmware asks again: not booted (it moved the node to booted
	// before), the attempt goes on.
	s.observe(s.log, "node00", nodestate.EvKernel, "test")
	dora(dhcpd.KindPXE)
	if n := nodeAt(t, s, "node00"); n.Attempt != 1 || n.State != nodestate.Kernel {
		t.Errorf("after firmware DHCP past the kernel: attempt %d, %v; want attempt 1, kernel", n.Attempt, n.State)
	}
	fetch(http.StatusOK)
	// The booted system's own DHCP after the kernel and initrd: booted, same attempt.
	s.observe(s.log, "node00", nodestate.EvKernel, "test")
	s.observe(s.log, "node00", nodestate.EvInitrd, "test")
	dora(dhcpd.KindPlain)
	if n := nodeAt(t, s, "node00"); n.Attempt != 1 || n.State != nodestate.Booted {
		t.Errorf("after the booted system's DHCP: attempt %d, %v; want attempt 1, booted", n.Attempt, n.State)
	}
}

// reservationServer is the fixture's server in reservation mode, as a real network's: node00 at
// 10.0.0.250, the nodes' subnet 10.0.0.0/8 (the DHCP server is built, not started).
func reservationServer(t *testing.T) *Server {
	t.Helper()
	f := newFixture(t)
	inv := filepath.Join(f.dir, "inventory.csv")
	b, err := os.ReadFile(inv)
	if err != nil {
		t.Fatal(err)
	}
	testfix.WriteFile(t, inv, []byte(strings.Replace(string(b), "127.0.0.1,", "10.0.0.250,", 1)))
	return f.server(t, func(c *bootconfig.Config) {
		c.DHCP.Mode, c.DHCP.Subnet, c.DHCP.Listen = dhcpd.ModeReservation, "10.0.0.0/8", "127.0.0.1:0"
		c.HTTP.URL = "http://10.9.9.9:8080"
	})
}
