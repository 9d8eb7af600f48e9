package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/nodestate/boltstore"
)

// netnsPair is a server and a client network namespace joined by a veth pair.
type netnsPair struct {
	srv, cli     string // namespace names
	srvIf, cliIf string // link names
	srvIP, cliIP string // addresses (the client's is what DHCP must give)
	prefix       string // the /24's first three bytes and a dot
}

// newNetnsPair creates the namespaces (testfix.Netns: removed with their links when the test
// ends, passed or failed) and the link, the client's end with node00's MAC.
func newNetnsPair(t *testing.T) *netnsPair {
	t.Helper()
	p := &netnsPair{srv: testfix.Netns(t, "bfs"), cli: testfix.Netns(t, "bfc")}
	p.srvIf, p.cliIf = p.srv, p.cli
	p.prefix = fmt.Sprintf("10.213.%d.", 16+rand.IntN(200))
	p.srvIP, p.cliIP = p.prefix+"1", p.prefix+"10"
	testfix.IP(t, p.srv, "link", "add", p.srvIf, "type", "veth", "peer", "name", p.cliIf, "netns", p.cli)
	testfix.IP(t, p.srv, "addr", "add", p.srvIP+"/24", "dev", p.srvIf)
	testfix.IP(t, p.srv, "link", "set", p.srvIf, "up")
	testfix.IP(t, p.srv, "link", "set", "lo", "up")
	testfix.IP(t, p.cli, "link", "set", p.cliIf, "address", "52:54:00:00:00:00")
	testfix.IP(t, p.cli, "link", "set", p.cliIf, "up")
	testfix.IP(t, p.cli, "link", "set", "lo", "up")
	return p
}

// inCli runs a command in the client namespace, for at most 30 s, and returns its combined
// output.
func (p *netnsPair) inCli(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", p.cli}, args...)...).CombinedOutput()
	return string(out), err
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
	testenv.NeedRoot(t, "to create network namespaces")
	testenv.NeedTool(t, "busybox", "busybox-static")
	testenv.NeedTool(t, "curl", "curl")
	if _, err := exec.LookPath("go"); err != nil {
		testenv.Skip(t, "needs the go command, to build bootctl")
	}
	bin := buildBootctl(t)
	p := newNetnsPair(t)
	f := newServeFiles(t, "reservation")
	writeNetnsServeFiles(t, f, p)
	serve := startServeInNetns(t, bin, p, f.config)
	p.udhcpc(t, f.dir)
	p.bootOverCurl(t, f)
	checkNetnsStatus(t, bin, p.srv)

	// SIGTERM: graceful stop, exit status 0, states saved.
	serve.sigterm(t)
	checkSavedHealthy(t, filepath.Join(f.dir, "state"))
}

// writeNetnsServeFiles writes the inventory (node00 at the client's address) and a configuration
// serving DHCP on the server's end of the link, HTTP on :8080 and TFTP on :69.
func writeNetnsServeFiles(t *testing.T, f *serveFiles, p *netnsPair) {
	inv := fmt.Sprintf("name,mac,ip,node\nnode00,52:54:00:00:00:00,%s,s0-b0-n0\nnode01,52:54:00:00:00:01,%s,s0-b0-n1\n",
		p.cliIP, p.prefix+"11")
	testfix.WriteFile(t, filepath.Join(f.dir, "inventory.csv"), []byte(inv))
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
	testfix.WriteFile(t, f.config, []byte(cfg))
}

// netnsServe is `bootctl serve` running in a namespace: the process, its exit once it has
// exited, and its output.
type netnsServe struct {
	cmd    *exec.Cmd
	exited chan error
	out    bytes.Buffer
}

// startServeInNetns starts `bootctl serve` with config in p's server namespace (killed when the
// test ends unless it has exited; its output is logged if the test failed) and waits for its HTTP
// endpoint, checking meanwhile that the client namespace can be entered.
func startServeInNetns(t *testing.T, bin string, p *netnsPair, config string) *netnsServe {
	s := &netnsServe{exited: make(chan error, 1)}
	s.cmd = exec.Command("ip", "netns", "exec", p.srv, bin, "--log-level", "debug", "serve", "--config", config)
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("bootctl serve output:\n%s", s.out.String())
		}
	})
	// Wait for the HTTP endpoint (the last one Serve starts is not ordered, so this is a fair probe).
	testfix.WaitFor(t, "bootctl serve up", 20*time.Second, func() bool {
		if _, err := p.inCli("true"); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("ip", "netns", "exec", p.srv, "curl", "-sf", "http://127.0.0.1:8080/healthz").CombinedOutput()
		if err == nil && strings.TrimSpace(string(out)) == "ok" {
			return true
		}
		select {
		case err := <-s.exited:
			t.Fatalf("serve exited: %v", err)
		default:
		}
		return false
	})
	return s
}

// sigterm stops the server with SIGTERM: it must exit with status 0 within 15 s.
func (s *netnsServe) sigterm(t *testing.T) {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop within 15 s of SIGTERM")
	}
}

// udhcpc runs busybox udhcpc in the client namespace, with a script that sets the address it is
// given: the reserved one, set on the client's link.
func (p *netnsPair) udhcpc(t *testing.T, dir string) {
	script := filepath.Join(dir, "udhcpc.sh")
	leaseFile := filepath.Join(dir, "lease")
	err := os.WriteFile(script, []byte(`#!/bin/sh
case "$1" in
deconfig) ip addr flush dev "$interface"; ip link set "$interface" up ;;
bound|renew) ip addr flush dev "$interface"; ip addr add "$ip/$mask" dev "$interface"; echo "$ip $hostname $siaddr" > `+leaseFile+` ;;
esac
`), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := p.inCli("busybox", "udhcpc", "-i", p.cliIf, "-f", "-q", "-n", "-t", "5", "-T", "1", "-s", script); err != nil {
		t.Fatalf("udhcpc: %v\n%s", err, out)
	}
	lease, _ := os.ReadFile(leaseFile)
	if fields := strings.Fields(string(lease)); len(fields) < 1 || fields[0] != p.cliIP {
		t.Fatalf("udhcpc lease %q, want address %s", lease, p.cliIP)
	}
	if addrs, _ := p.inCli("ip", "-4", "addr", "show", p.cliIf); !strings.Contains(addrs, p.cliIP+"/24") {
		t.Fatalf("client address not set:\n%s", addrs)
	}
}

// bootOverCurl boots node00 from the client namespace with curl: the NBP over tftp://, then the
// node's script, fetched from its address, for the health URL with its token, and a health report.
func (p *netnsPair) bootOverCurl(t *testing.T, f *serveFiles) {
	nbp := filepath.Join(f.dir, "nbp")
	if out, err := p.inCli("curl", "-sS", "--tftp-blksize", "1468", "-o", nbp, "tftp://"+p.srvIP+"/undionly.kpxe"); err != nil {
		t.Fatalf("curl tftp: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(nbp); !bytes.Equal(got, f.nbp) {
		t.Fatalf("NBP over tftp:// differs (%d bytes, want %d)", len(got), len(f.nbp))
	}
	script, err := p.inCli("curl", "-sSf", "http://"+p.srvIP+":8080/ipxe/52:54:00:00:00:00")
	if err != nil {
		t.Fatalf("curl script: %v\n%s", err, script)
	}
	hm := regexp.MustCompile(`bootfabric.health=(\S+)`).FindStringSubmatch(script)
	if hm == nil {
		t.Fatalf("script has no health URL:\n%s", script)
	}
	if out, err := p.inCli("curl", "-sSf", "-X", "POST", "-H", "Content-Type: application/json", "-d", `{"status":"ok","details":"netns"}`,
		hm[1]); err != nil {
		t.Fatalf("curl health: %v\n%s", err, out)
	}
}

// checkNetnsStatus runs `bootctl status` in the server's namespace ns: node00 is healthy and
// went through every state of its boot.
func checkNetnsStatus(t *testing.T, bin, ns string) {
	out, err := exec.Command("ip", "netns", "exec", ns, bin, "status", "--server", "http://127.0.0.1:8080", "--output", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	var res bootapi.Status
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("status output: %v\n%s", err, out)
	}
	n := findNode(t, res, "node00")
	if n.State != nodestate.Healthy {
		t.Errorf("node00 is %v, want healthy; history %+v", n.State, n.History)
	}
	for _, st := range []nodestate.State{nodestate.Discover, nodestate.Offered, nodestate.Bound, nodestate.NBP, nodestate.Healthy} {
		if n.Times[st].IsZero() {
			t.Errorf("node00 never entered %v: %v", st, n.Times)
		}
	}
}

// checkSavedHealthy: the server saved node00's state, healthy, in its state directory dir.
func checkSavedHealthy(t *testing.T, dir string) {
	store, err := boltstore.Open(dir)
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
			if n.State != nodestate.Healthy {
				t.Errorf("saved state of node00: %v", n.State)
			}
		}
	}
	if !found {
		t.Errorf("node00 not saved: %+v", saved)
	}
}
