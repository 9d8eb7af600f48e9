package bootsrv

import (
	"testing"

	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/insomniacslk/dhcp/dhcpv4"
)

// TestDHCPEventsRefused: a refused request (a spoofed relay, an unknown MAC past its share of the
// pool) is no sign that a node boots: it makes no boot event, so it cannot move a node's state.
func TestDHCPEventsRefused(t *testing.T) {
	for _, mt := range []dhcpv4.MessageType{dhcpv4.MessageTypeDiscover, dhcpv4.MessageTypeRequest, dhcpv4.MessageTypeInform} {
		if evs := DHCPEvents(mt, dhcpd.OutcomeRefused); len(evs) != 0 {
			t.Errorf("%v refused: events %v, want none", mt, evs)
		}
	}
}
