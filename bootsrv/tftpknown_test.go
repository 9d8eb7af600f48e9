package bootsrv

import (
	"net/netip"
	"testing"

	"github.com/bootfabric/bootfabric/nodestate"
)

// TestTFTPSlotsOfDownNodes: every address of a node counted as known and got a node's TFTP slots,
// so a host that took the addresses of about 24 powered-off nodes filled all 512 (issue 36 item 4).
// Only a node that is booting gets them; a pending, healthy or failed node's address shares the
// slots of unknown addresses.
func TestTFTPSlotsOfDownNodes(t *testing.T) {
	s := reservationServer(t)
	known := s.tftpKnown()
	addr := netip.MustParseAddr("10.0.0.250")
	step := func(what string, ev nodestate.Event, want bool) {
		t.Helper()
		if ev != 0 {
			s.observe(s.log, "node00", ev, "test")
		}
		if got := known(addr); got != want {
			t.Errorf("%s: known %v, want %v", what, got, want)
		}
	}
	step("pending (powered off)", 0, false)
	step("discover", nodestate.EvDiscover, true)
	step("nbp", nodestate.EvNBP, true)
	step("healthy", nodestate.EvHealthOK, false)
	if known(netip.MustParseAddr("10.0.0.251")) {
		t.Error("an address of no node counts as known")
	}
}
