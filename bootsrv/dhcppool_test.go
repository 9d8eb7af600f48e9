package bootsrv

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"
)

// poolInventory is the mini machine with only node00 reserved (127.0.0.10); the others have no ip.
func poolInventory(t testing.TB) string {
	h := testfix.MiniHierarchy(t)
	var sb strings.Builder
	sb.WriteString("name,mac,ip,node\n")
	for i := 0; i < h.NumNodes(); i++ {
		ip := ""
		if i == 0 {
			ip = "127.0.0.10"
		}
		fmt.Fprintf(&sb, "node%02d,52:54:00:00:00:%02x,%s,%s\n", i, i, ip, h.NodeName(i))
	}
	return sb.String()
}

// poolServer starts a boot server with DHCP on loopback and a pool on the fixture's state
// directory; it stops when the test ends or when the returned function is called.
func poolServer(t *testing.T, f *fixture, unknown bool) (*Server, *net.UDPAddr, func()) {
	t.Helper()
	c := f.config(t, func(c *bootconfig.Config) {
		c.DHCP = bootconfig.DHCPConfig{Mode: dhcpd.ModeReservation, Listen: "127.0.0.1:0", Subnet: "127.0.0.0/8",
			// 41 addresses: 31 kept for the inventory's nodes without an ip, 10 for unknown MACs.
			Pool: &bootconfig.PoolConfig{Range: "127.0.1.10-127.0.1.50", Lease: bootconfig.Duration(10 * time.Minute), Unknown: unknown}}
	})
	s, err := New(c, Options{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	stop := testfix.Serve(t, s)
	return s, s.DHCPAddrs()[0], stop
}

// dora runs one DHCP exchange for mac and returns "address hostname lease", or the error. The
// lease is rounded to the minute: a lease already on disk is answered with what is left of it
// (dhcpd.Pool.CommitLease), a second or two short of the whole when the host is loaded.
func dora(t *testing.T, srv *net.UDPAddr, mac string) string {
	t.Helper()
	hw, _ := net.ParseMAC(mac)
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	// 1 s a try, 4 tries, as a firmware's patience: 300 ms and one retry missed the first answer of
	// a server just started, in a race run beside the storms on a fresh machine (ci28).
	c, err := nclient4.NewWithConn(conn, hw, nclient4.WithServerAddr(srv), nclient4.WithTimeout(time.Second), nclient4.WithRetry(4))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := c.Request(ctx)
	if err != nil {
		return "no answer"
	}
	return fmt.Sprintf("%v %s %v", l.ACK.YourIPAddr, l.ACK.HostName(), l.ACK.IPAddressLeaseTime(0).Round(time.Minute))
}

// TestServePool: through bootctl serve's server, a reserved node keeps its address, an inventory
// node without one binds from the pool under its name, an unknown MAC binds from the pool only with
// pool.unknown, and after a restart every client gets the same address again.
func TestServePool(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.dir, "inventory.csv"), []byte(poolInventory(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	const unknown = "02:00:00:00:00:01"
	s, addr, stop := poolServer(t, f, true)
	got := []string{dora(t, addr, "52:54:00:00:00:00"), dora(t, addr, "52:54:00:00:00:01"), dora(t, addr, unknown), dora(t, addr, "52:54:00:00:00:05")}
	want := []string{"127.0.0.10 node00 1h0m0s", "127.0.1.10 node01 10m0s", "127.0.1.11  10m0s", "127.0.1.12 node05 10m0s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first boot (-want +got):\n%s", diff)
	}
	// The tracker learnt node01's pool address (TFTP events are found by it).
	if name, ok := s.Tracker().NameByIP(netip.MustParseAddr("127.0.1.10")); !ok || name != "node01" {
		t.Errorf("NameByIP(127.0.1.10) = %q, %v; want node01", name, ok)
	}
	if n := testutil.CollectAndCount(s.Registry(), "bootfabric_dhcp_pool_leases"); n != 5 {
		t.Errorf("bootfabric_dhcp_pool_leases has %d series, want 5", n)
	}
	stop()

	// Restart on the same state directory: same addresses, in another order.
	_, addr, stop = poolServer(t, f, true)
	got = []string{dora(t, addr, "52:54:00:00:00:05"), dora(t, addr, unknown), dora(t, addr, "52:54:00:00:00:01")}
	want = []string{"127.0.1.12 node05 10m0s", "127.0.1.11  10m0s", "127.0.1.10 node01 10m0s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after restart (-want +got):\n%s", diff)
	}
	stop()

	// Without pool.unknown, a MAC outside the inventory gets no answer.
	_, addr, _ = poolServer(t, f, false)
	if got := dora(t, addr, "02:00:00:00:00:02"); got != "no answer" {
		t.Errorf("unknown MAC without pool.unknown: %s", got)
	}
}

// TestPoolInventoryErrors: an inventory ip inside the pool's range is refused with its file:line,
// and a node without an ip needs a pool.
func TestPoolInventoryErrors(t *testing.T) {
	f := newFixture(t)
	inv := strings.Replace(poolInventory(t), "node03,52:54:00:00:00:03,,", "node03,52:54:00:00:00:03,127.0.1.15,", 1)
	if err := os.WriteFile(filepath.Join(f.dir, "inventory.csv"), []byte(inv), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pool *bootconfig.PoolConfig
		want string
	}{
		{"address in the range", &bootconfig.PoolConfig{Range: "127.0.1.10-127.0.1.20"},
			filepath.Join(f.dir, "inventory.csv") + ":5: ip: 127.0.1.15 of node node03 is inside dhcp.pool.range 127.0.1.10-127.0.1.20"},
		{"no pool, no address", nil,
			filepath.Join(f.dir, "inventory.csv") + ":3: ip: node node01 has no address: give it one, or add dhcp.pool to hand it a pool address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := f.config(t, func(c *bootconfig.Config) {
				c.DHCP = bootconfig.DHCPConfig{Mode: dhcpd.ModeReservation, Listen: "127.0.0.1:0", Subnet: "127.0.0.0/8", Pool: tc.pool}
			})
			s, err := New(c, Options{})
			if err == nil {
				s.Close()
			}
			if err == nil || err.Error() != tc.want {
				t.Errorf("New = %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestUnknownOwner: every MAC outside the inventory has exactly one live owner, the live servers
// share them, and a failed server owns none.
func TestUnknownOwner(t *testing.T) {
	tests := []struct {
		name string
		live []int
	}{
		{"one server", []int{0}},
		{"four servers", []int{0, 1, 2, 3}},
		{"server 2 failed", []int{0, 1, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			count := map[int]int{}
			for i := 0; i < 3000; i++ {
				mac := net.HardwareAddr{0, 0x0c, 1, byte(i >> 16), byte(i >> 8), byte(i)}
				o := UnknownOwner(mac, tc.live)
				if o2 := UnknownOwner(mac, tc.live); o2 != o {
					t.Fatalf("%v: owner %d then %d", mac, o, o2)
				}
				count[o]++
			}
			for _, s := range tc.live {
				if share := float64(count[s]) / 3000; share < 0.8/float64(len(tc.live)) {
					t.Errorf("server %d answers %.1f%% of unknown MACs", s, 100*share)
				}
				delete(count, s)
			}
			if len(count) > 0 {
				t.Errorf("owners outside the live set: %v", count)
			}
		})
	}
	if o := UnknownOwner(net.HardwareAddr{1, 2, 3, 4, 5, 6}, nil); o != -1 {
		t.Errorf("no live server: owner %d, want -1", o)
	}
}

// BenchmarkServeDORA is one DORA exchange through the whole bootsrv DHCP path on loopback
// (dhcpd, the authority, the boot-state tracker, and the pool with its fsync'd lease file in pool
// mode), for 20,000 sunway nodes with addresses (reservation) or without (pool), 64 clients at
// once. `go test ./bootsrv -run '^$' -bench ServeDORA -cpuprofile cpu.out` shows where a DORA's
// CPU goes.
func BenchmarkServeDORA(b *testing.B) {
	for _, mode := range []string{"reservation", "pool"} {
		b.Run(mode, func(b *testing.B) {
			f := newFixture(b)
			const nodes = 20000
			var sb strings.Builder
			sb.WriteString("name,mac,ip,node\n")
			h := sunwayHierarchy(b)
			for i := 0; i < nodes; i++ {
				ip := ""
				if mode == "reservation" {
					ip = fmt.Sprintf("10.88.%d.%d", 100+i/256, i%256)
				}
				fmt.Fprintf(&sb, "n%d,00:0c:01:%02x:%02x:%02x,%s,%s\n", i, byte(i>>16), byte(i>>8), byte(i), ip, h.NodeName(i))
			}
			if err := os.WriteFile(filepath.Join(f.dir, "inventory.csv"), []byte(sb.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			c := f.config(b, func(c *bootconfig.Config) {
				c.Topology = "sunway"
				c.DHCP = bootconfig.DHCPConfig{Mode: dhcpd.ModeReservation, Listen: "127.0.0.1:0", Subnet: "10.88.0.0/16"}
				if mode == "pool" {
					c.DHCP.Pool = &bootconfig.PoolConfig{Range: "10.88.1.0-10.88.250.255"}
				}
			})
			c.StateFlush = nil
			if err := c.Validate(); err != nil {
				b.Fatal(err)
			}
			s, err := New(c, Options{})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if err := s.Listen(ctx); err != nil {
				b.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- s.Serve(ctx) }()
			defer func() { cancel(); <-done }()
			srv := s.DHCPAddrs()[0]
			var next atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			cpu0 := processCPU()
			defer func() {
				// Client and server share the process: the figure is both sides' CPU.
				b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-us/DORA")
			}()
			b.RunParallel(func(pb *testing.PB) {
				conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
				if err != nil {
					b.Error(err)
					return
				}
				defer conn.Close()
				buf := make([]byte, 1500)
				exchange := func(req *dhcpv4.DHCPv4) (*dhcpv4.DHCPv4, error) {
					if _, err := conn.WriteToUDP(req.ToBytes(), srv); err != nil {
						return nil, err
					}
					conn.SetReadDeadline(time.Now().Add(2 * time.Second))
					for {
						n, _, err := conn.ReadFromUDP(buf)
						if err != nil {
							return nil, err
						}
						if r, err := dhcpv4.FromBytes(buf[:n]); err == nil && r.TransactionID == req.TransactionID {
							return r, nil
						}
					}
				}
				for pb.Next() {
					i := int(next.Add(1)) % nodes
					mac := net.HardwareAddr{0, 0x0c, 1, byte(i >> 16), byte(i >> 8), byte(i)}
					d, _ := dhcpv4.NewDiscovery(mac)
					o, err := exchange(d)
					if err != nil {
						b.Error("OFFER:", err)
						return
					}
					r, _ := dhcpv4.NewRequestFromOffer(o)
					a, err := exchange(r)
					if err != nil || a.MessageType() != dhcpv4.MessageTypeAck {
						b.Error("ACK:", err, a)
						return
					}
				}
			})
		})
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sunwayHierarchy(b *testing.B) *topology.Hierarchy {
	m, _ := topology.Preset("sunway")
	g, err := m.Build()
	if err != nil {
		b.Fatal(err)
	}
	return g.Hierarchy()
}
