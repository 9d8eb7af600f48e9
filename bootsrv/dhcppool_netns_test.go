package bootsrv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"
)

// TestNetnsPoolUdhcpc boots busybox udhcpc, a client nobody here wrote, against a boot server with a
// pool in a network namespace: an inventory node without an ip and a MAC outside the inventory bind
// from the pool, the reserved node keeps its address, and after a restart of the server on the same
// state directory both pool clients get their addresses back.
func TestNetnsPoolUdhcpc(t *testing.T) {
	testenv.NeedRoot(t, "to create network namespaces")
	testenv.NeedTool(t, "ip", "iproute2")
	testenv.NeedTool(t, "udhcpc", "udhcpc")
	sfx := fmt.Sprintf("%04x%02x", os.Getpid()&0xffff, rand.IntN(256))
	srvNS, cliNS := "bfpS"+sfx, "bfpC"+sfx
	for _, ns := range []string{srvNS, cliNS} {
		poolSh(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	poolSh(t, "ip", "-n", cliNS, "link", "add", "cl0", "type", "veth", "peer", "name", "eth0", "netns", srvNS)
	poolSh(t, "ip", "-n", srvNS, "addr", "add", "10.78.0.1/24", "dev", "eth0")
	for _, c := range [][]string{{srvNS, "eth0"}, {srvNS, "lo"}, {cliNS, "cl0"}, {cliNS, "lo"}} {
		poolSh(t, "ip", "-n", c[0], "link", "set", c[1], "up")
	}

	f := newFixture(t)
	inv := strings.Replace(poolInventory(t), "127.0.0.10", "10.78.0.10", 1)
	if err := os.WriteFile(filepath.Join(f.dir, "inventory.csv"), []byte(inv), 0o644); err != nil {
		t.Fatal(err)
	}
	serve := func() (stop func()) {
		c := f.config(t, func(c *Config) {
			c.Servers = []ServerEntry{{Name: "bs0", Address: "10.78.0.1"}}
			c.DHCP = DHCPConfig{Mode: DHCPReservation, Interfaces: []string{"eth0"}, Listen: ":67", Subnet: "10.78.0.0/24",
				Pool: &PoolConfig{Range: "10.78.0.100-10.78.0.120", Lease: Duration(10 * time.Minute), Unknown: true}}
		})
		s, err := New(c, Options{Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if err := poolInNetns(srvNS, func() error { return s.Listen(ctx) }); err != nil {
			cancel()
			s.Close()
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	}
	dir := t.TempDir()
	udhcpc := func(mac string) string {
		poolSh(t, "ip", "-n", cliNS, "link", "set", "cl0", "address", mac)
		out := filepath.Join(dir, "lease-"+strings.ReplaceAll(mac, ":", ""))
		os.Remove(out)
		script := filepath.Join(dir, "udhcpc.sh")
		os.WriteFile(script, []byte("#!/bin/sh\n[ \"$1\" = bound ] && env > "+out+"\nexit 0\n"), 0o755)
		poolSh(t, "ip", "netns", "exec", cliNS, "udhcpc", "-i", "cl0", "-f", "-q", "-n", "-t", "4", "-T", "1", "-s", script)
		b, err := os.ReadFile(out)
		if err != nil {
			return "no lease"
		}
		env := map[string]string{}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				env[k] = v
			}
		}
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

func poolSh(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// poolInNetns runs f on a thread switched into namespace ns, so that the sockets f opens live
// there. The thread is discarded afterwards: the goroutine exits locked.
func poolInNetns(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		nsf, err := os.Open(filepath.Join("/run/netns", ns))
		if err != nil {
			errc <- err
			return
		}
		defer nsf.Close()
		if err := unix.Setns(int(nsf.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}
