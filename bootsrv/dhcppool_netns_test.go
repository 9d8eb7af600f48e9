package bootsrv

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"
)

// TestNetnsPoolUdhcpc boots busybox udhcpc, a client nobody here wrote, against a boot server with a
// pool in a network namespace: an inventory node without an ip and a MAC outside the inventory bind
// from the pool, the reserved node keeps its address, and after a restart of the server on the same
// state directory both pool clients get their addresses back.
func TestNetnsPoolUdhcpc(t *testing.T) {
	testenv.NeedTool(t, "udhcpc", "udhcpc")
	srvNS, cliNS := testfix.Netns(t, "bfpS"), testfix.Netns(t, "bfpC")
	testfix.IP(t, cliNS, "link", "add", "cl0", "type", "veth", "peer", "name", "eth0", "netns", srvNS)
	testfix.IP(t, srvNS, "addr", "add", "10.78.0.1/24", "dev", "eth0")
	for _, c := range [][]string{{srvNS, "eth0"}, {srvNS, "lo"}, {cliNS, "cl0"}, {cliNS, "lo"}} {
		testfix.IP(t, c[0], "link", "set", c[1], "up")
	}

	f := newFixture(t)
	inv := strings.Replace(poolInventory(t), "127.0.0.10", "10.78.0.10", 1)
	if err := os.WriteFile(filepath.Join(f.dir, "inventory.csv"), []byte(inv), 0o644); err != nil {
		t.Fatal(err)
	}
	serve := func() (stop func()) {
		c := f.config(t, func(c *bootconfig.Config) {
			c.Servers = []bootconfig.ServerEntry{{Name: "bs0", Address: "10.78.0.1"}}
			c.DHCP = bootconfig.DHCPConfig{Mode: dhcpd.ModeReservation, Interfaces: []string{"eth0"}, Listen: ":67", Subnet: "10.78.0.0/24",
				// 41 addresses: 31 kept for the inventory's nodes without an ip, 10 for unknown MACs.
				Pool: &bootconfig.PoolConfig{Range: "10.78.0.100-10.78.0.140", Lease: bootconfig.Duration(10 * time.Minute), Unknown: true}}
		})
		// New checks dhcp.interfaces against the interfaces it sees: those of the server's namespace.
		var s *Server
		err := testfix.InNetns(srvNS, func() (err error) {
			s, err = New(c, Options{Logger: zaptest.NewLogger(t)})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := testfix.InNetns(srvNS, func() error { return s.Listen(context.Background()) }); err != nil {
			s.Close()
			t.Fatal(err)
		}
		return testfix.Run(t, "Serve", s.Serve)
	}
	dir := t.TempDir()
	udhcpc := func(mac string) string {
		hw, err := net.ParseMAC(mac)
		if err != nil {
			t.Fatal(err)
		}
		env := testfix.Udhcpc(t, cliNS, "cl0", hw, dir)
		// A lease already on disk and less than half used is answered with what is left of it,
		// rounded to the second: a second may have passed since it was written.
		lease := env["lease"]
		if n, err := strconv.Atoi(lease); err == nil && n >= 595 && n < 600 {
			lease = "600"
		}
		return fmt.Sprintf("%s %s lease %s serverid %s", env["ip"], env["hostname"], lease, env["serverid"])
	}

	stop := serve()
	got := []string{udhcpc("52:54:00:00:00:01"), udhcpc("02:00:00:00:00:09"), udhcpc("52:54:00:00:00:00")}
	want := []string{
		"10.78.0.100 node01 lease 600 serverid 10.78.0.1",
		"10.78.0.101  lease 600 serverid 10.78.0.1",
		"10.78.0.10 node00 lease 3600 serverid 10.78.0.1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first boot (-want +got):\n%s", diff)
	}
	stop()

	stop = serve()
	defer stop()
	got = []string{udhcpc("02:00:00:00:00:09"), udhcpc("52:54:00:00:00:01")}
	want = []string{"10.78.0.101  lease 600 serverid 10.78.0.1", "10.78.0.100 node01 lease 600 serverid 10.78.0.1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after restart (-want +got):\n%s", diff)
	}
}
