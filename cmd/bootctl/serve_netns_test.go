package main

import (
	"github.com/bootfabric/bootfabric/internal/testenv"
	"regexp"

	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootsrv"
)

// netnsPair is a server and a client network namespace joined by a veth pair.
type netnsPair struct {
	srv, cli     string // namespace names
	srvIf, cliIf string // link names
	srvIP, cliIP string // addresses (the client's is what DHCP must give)
	prefix       string // the /24's first three bytes and a dot
}

func needRoot(t *testing.T, cmds ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "needs root for network namespaces")
	}
	for _, c := range cmds {
		if _, err := exec.LookPath(c); err != nil {
			testenv.Skip(t, "needs %s (Debian packages iproute2, busybox-static, curl; see scripts/apt-packages.txt)", c)
		}
	}
}

func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newNetnsPair creates the namespaces and the link, removed in t.Cleanup even when the test fails.
func newNetnsPair(t *testing.T) *netnsPair {
	t.Helper()
	id := fmt.Sprintf("%d%03d", os.Getpid()%100000, rand.IntN(1000))
	p := &netnsPair{srv: "bfs" + id, cli: "bfc" + id, srvIf: "bfs" + id, cliIf: "bfc" + id}
	net3 := 16 + rand.IntN(200)
	p.prefix = fmt.Sprintf("10.213.%d.", net3)
	p.srvIP, p.cliIP = p.prefix+"1", p.prefix+"10"
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", p.srv).Run()
		exec.Command("ip", "netns", "del", p.cli).Run()
	})
	sh(t, "ip", "netns", "add", p.srv)
	sh(t, "ip", "netns", "add", p.cli)
	sh(t, "ip", "-n", p.srv, "link", "add", p.srvIf, "type", "veth", "peer", "name", p.cliIf, "netns", p.cli)
	sh(t, "ip", "-n", p.srv, "addr", "add", p.srvIP+"/24", "dev", p.srvIf)
	sh(t, "ip", "-n", p.srv, "link", "set", p.srvIf, "up")
	sh(t, "ip", "-n", p.srv, "link", "set", "lo", "up")
	sh(t, "ip", "-n", p.cli, "link", "set", p.cliIf, "address", "52:54:00:00:00:00")
	sh(t, "ip", "-n", p.cli, "link", "set", p.cliIf, "up")
	sh(t, "ip", "-n", p.cli, "link", "set", "lo", "up")
	return p
}

// buildBootctl builds the bootctl binary into a temporary directory.
func buildBootctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bootctl")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestServeNetns boots a namespace "node" against `bootctl serve` running in another namespace:
// busybox udhcpc gets the reserved address, curl fetches the NBP over tftp:// and posts health, and
// the node ends healthy in `bootctl status`. Then SIGTERM stops the server gracefully.
func TestServeNetns(t *testing.T) {
	needRoot(t, "ip", "busybox", "curl", "go")
	bin := buildBootctl(t)
	p := newNetnsPair(t)
	f := newServeFiles(t, "reservation")
	inv := fmt.Sprintf("name,mac,ip,node\nnode00,52:54:00:00:00:00,%s,s0-b0-n0\nnode01,52:54:00:00:00:01,%s,s0-b0-n1\n",
		p.cliIP, p.prefix+"11")
	os.WriteFile(filepath.Join(f.dir, "inventory.csv"), []byte(inv), 0o644)
	cfg := fmt.Sprintf(`servers:
  - {name: bs0, address: %s}
topology: mini
inventory: inventory.csv
images: images
ipxe_dir: ipxe
state_dir: state
http: {listen: ":8080"}
tftp: {listen: ":69"}
dhcp:
  mode: reservation
  interfaces: [%s]
  subnet: %s/24
  lease_time: 10m
`, p.srvIP, p.srvIf, p.prefix+"0")
	os.WriteFile(f.config, []byte(cfg), 0o644)

	var serveOut bytes.Buffer
	serve := exec.Command("ip", "netns", "exec", p.srv, bin, "--log-level", "debug", "serve", "--config", f.config)
	serve.Stdout, serve.Stderr = &serveOut, &serveOut
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	t.Cleanup(func() {
		if serve.ProcessState == nil {
			serve.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("bootctl serve output:\n%s", serveOut.String())
		}
	})
	inCli := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", p.cli}, args...)...).CombinedOutput()
		return string(out), err
	}
	// Wait for the HTTP endpoint (the last one Serve starts is not ordered, so this is a fair probe).
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := inCli("true"); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("ip", "netns", "exec", p.srv, "curl", "-sf", "http://127.0.0.1:8080/healthz").CombinedOutput()
		if err == nil && strings.TrimSpace(string(out)) == "ok" {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("serve exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("bootctl serve not up within 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}

	script := filepath.Join(f.dir, "udhcpc.sh")
	leaseFile := filepath.Join(f.dir, "lease")
	os.WriteFile(script, []byte(`#!/bin/sh
case "$1" in
deconfig) ip addr flush dev "$interface"; ip link set "$interface" up ;;
bound|renew) ip addr flush dev "$interface"; ip addr add "$ip/$mask" dev "$interface"; echo "$ip $hostname $siaddr" > `+leaseFile+` ;;
esac
`), 0o755)
	if out, err := inCli("busybox", "udhcpc", "-i", p.cliIf, "-f", "-q", "-n", "-t", "5", "-T", "1", "-s", script); err != nil {
		t.Fatalf("udhcpc: %v\n%s", err, out)
	}
	lease, _ := os.ReadFile(leaseFile)
	if fields := strings.Fields(string(lease)); len(fields) < 1 || fields[0] != p.cliIP {
		t.Fatalf("udhcpc lease %q, want address %s", lease, p.cliIP)
	}
	if addrs, _ := inCli("ip", "-4", "addr", "show", p.cliIf); !strings.Contains(addrs, p.cliIP+"/24") {
		t.Fatalf("client address not set:\n%s", addrs)
	}
	nbp := filepath.Join(f.dir, "nbp")
	if out, err := inCli("curl", "-sS", "--tftp-blksize", "1468", "-o", nbp, "tftp://"+p.srvIP+"/undionly.kpxe"); err != nil {
		t.Fatalf("curl tftp: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(nbp); !bytes.Equal(got, f.nbp) {
		t.Fatalf("NBP over tftp:// differs (%d bytes, want %d)", len(got), len(f.nbp))
	}
	// The node's script, fetched from its address, gives the health URL with the node's token.
	script, err := inCli("curl", "-sSf", "http://"+p.srvIP+":8080/ipxe/52:54:00:00:00:00")
	if err != nil {
		t.Fatalf("curl script: %v\n%s", err, script)
	}
	hm := regexp.MustCompile(`bootfabric.health=(\S+)`).FindStringSubmatch(script)
	if hm == nil {
		t.Fatalf("script has no health URL:\n%s", script)
	}
	if out, err := inCli("curl", "-sSf", "-X", "POST", "-H", "Content-Type: application/json", "-d", `{"status":"ok","details":"netns"}`,
		hm[1]); err != nil {
		t.Fatalf("curl health: %v\n%s", err, out)
	}
	out, err := exec.Command("ip", "netns", "exec", p.srv, bin, "status", "--server", "http://127.0.0.1:8080", "--output", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	var res statusResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("status output: %v\n%s", err, out)
	}
	n := findNode(t, res, "node00")
	if n.State != bootsrv.Healthy {
		t.Errorf("node00 is %v, want healthy; history %+v", n.State, n.History)
	}
	for _, st := range []bootsrv.State{bootsrv.Discover, bootsrv.Offered, bootsrv.Bound, bootsrv.NBP, bootsrv.Healthy} {
		if n.Times[st].IsZero() {
			t.Errorf("node00 never entered %v: %v", st, n.Times)
		}
	}

	// SIGTERM: graceful stop, exit status 0, states saved.
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop within 15 s of SIGTERM")
	}
	store, err := bootsrv.OpenStore(filepath.Join(f.dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	saved, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range saved {
		if n.Name == "node00" {
			found = true
			if n.State != bootsrv.Healthy {
				t.Errorf("saved state of node00: %v", n.State)
			}
		}
	}
	if !found {
		t.Errorf("node00 not saved: %+v", saved)
	}
}
