package dhcpd

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/prometheus/client_golang/prometheus"
)

// refusedCount is bootfabric_dhcp_refused_total{reason} as reg exposes it (0 when absent).
func refusedCount(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "bootfabric_dhcp_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// replies reads what reaches conn within wait, as "TYPE yiaddr" lines.
func replies(t *testing.T, conn *net.UDPConn, wait time.Duration) []string {
	t.Helper()
	var got []string
	buf := make([]byte, 1500)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			return got
		}
		if r, err := dhcpv4.FromBytes(buf[:n]); err == nil {
			got = append(got, r.MessageType().String()+" "+r.YourIPAddr.String())
		}
	}
}

// TestServerRefusesImplausibleRelay: a DISCOVER whose giaddr is the server's own (loopback)
// address, on a network the server serves, was answered to that address's port 67 as if a relay
// had sent it (issue 25). It is refused, nothing is sent, and the refusal is counted by reason.
func TestServerRefusesImplausibleRelay(t *testing.T) {
	relay, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	reg := prometheus.NewRegistry()
	_, addr := startServer(t, Config{
		Reservations: StaticReservations{macKey(testMAC): testRes},
		Networks:     []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		RelayPort:    relay.LocalAddr().(*net.UDPAddr).Port, Registerer: reg,
	})
	conn, err := net.DialUDP("udp4", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(discover(t, giaddr(net.IPv4(127, 0, 0, 1))).ToBytes()); err != nil {
		t.Fatal(err)
	}
	if got := replies(t, relay, 500*time.Millisecond); len(got) != 0 {
		t.Errorf("the server sent %v to the giaddr of a spoofed relay", got)
	}
	if n := refusedCount(t, reg, "giaddr_loopback"); n != 1 {
		t.Errorf("refused{giaddr_loopback} = %v, want 1", n)
	}
}

// TestServerInformOnlyItsOwnAddress: an INFORM is acknowledged only for the client's own
// address; one naming another host or the broadcast address of the client's subnet was
// acknowledged (issue 25). It is refused and counted.
func TestServerInformOnlyItsOwnAddress(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, addr := startServer(t, Config{Reservations: StaticReservations{macKey(testMAC): testRes}, Registerer: reg})
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tests := []struct {
		ciaddr string
		want   []string // replies (they come back to the sender: it is not on the client port)
		reason string
	}{
		{"10.0.0.255", nil, "ciaddr_broadcast"},
		{"10.0.0.99", nil, "ciaddr_not_leased"},
		{"10.0.0.17", []string{"ACK 0.0.0.0"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.ciaddr, func(t *testing.T) {
			inform := request(t, testMAC, dhcpv4.MessageTypeInform, dhcpv4.WithClientIP(net.ParseIP(tc.ciaddr)))
			if _, err := conn.WriteTo(inform.ToBytes(), addr); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, replies(t, conn, 500*time.Millisecond)); diff != "" {
				t.Errorf("replies (-want +got):\n%s", diff)
			}
			if tc.reason != "" {
				if n := refusedCount(t, reg, tc.reason); n != 1 {
					t.Errorf("refused{%s} = %v, want 1", tc.reason, n)
				}
			}
		})
	}
}
