package dhcpd

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
)

// These tests build, in network namespaces, two boot servers (A 10.77.0.1,
// B 10.77.0.2) and a client namespace joined by a bridge, then boot real
// clients (busybox udhcpc, ISC dhclient, perfdhcp as a relay) against them.
// The relay link rl0 has an address on the servers' subnet (10.77.0.50) and
// one on a subnet of relayed clients (10.78.0.50), which server A reaches
// through it. They need root and the Debian packages udhcpc,
// isc-dhcp-client, kea-admin.

type nsEnv struct {
	t          *testing.T
	a, b, c    string // namespace names: server A, server B, clients
	recA, recB *recorder
	regA       *prometheus.Registry // server A's metrics
	dir        string
}

var (
	macA1 = net.HardwareAddr{0x52, 0x54, 0x00, 0xaa, 0x00, 0x01} // owned by A
	macB2 = net.HardwareAddr{0x52, 0x54, 0x00, 0xaa, 0x00, 0x02} // owned by B
	macA3 = net.HardwareAddr{0x52, 0x54, 0x00, 0xaa, 0x00, 0x03} // owned by A
)

func newNSEnv(t *testing.T) *nsEnv {
	e := newTopology(t)
	e.startServers()
	return e
}

// newTopology builds the namespaces and links without servers.
func newTopology(t *testing.T) *nsEnv {
	e := &nsEnv{t: t, a: testfix.Netns(t, "bfA"), b: testfix.Netns(t, "bfB"), c: testfix.Netns(t, "bfC"),
		recA: &recorder{}, recB: &recorder{}, regA: prometheus.NewRegistry(), dir: t.TempDir()}
	ipc := func(args ...string) { testfix.IP(t, e.c, args...) }
	ipc("link", "add", "br0", "type", "bridge")
	ipc("link", "set", "br0", "up")
	// Link names live inside the namespaces, so they cannot collide.
	for _, p := range []struct{ local, ns, peer, addr string }{
		{"sa", e.a, "eth0", "10.77.0.1/24"}, {"sb", e.b, "eth0", "10.77.0.2/24"},
	} {
		ipc("link", "add", p.local, "type", "veth", "peer", "name", p.peer, "netns", p.ns)
		ipc("link", "set", p.local, "master", "br0", "up")
		testfix.IP(t, p.ns, "addr", "add", p.addr, "dev", p.peer)
		testfix.IP(t, p.ns, "link", "set", p.peer, "up")
		testfix.IP(t, p.ns, "link", "set", "lo", "up")
	}
	for _, c := range []string{"cl0", "rl0"} {
		ipc("link", "add", c, "type", "veth", "peer", "name", c+"p")
		ipc("link", "set", c+"p", "master", "br0", "up")
		ipc("link", "set", c, "up")
	}
	ipc("addr", "add", "10.77.0.50/24", "dev", "rl0")
	ipc("addr", "add", "10.78.0.50/24", "dev", "rl0")
	ipc("link", "set", "lo", "up")
	testfix.IP(t, e.a, "route", "add", "10.78.0.0/24", "via", "10.77.0.50")
	return e
}

func (e *nsEnv) startServers() {
	relayRes := ReservationsFunc(func(m net.HardwareAddr) (Reservation, bool) {
		if len(m) == 6 && m[0] == 0x00 && m[1] == 0x0c && m[2] == 0x01 {
			return Reservation{IP: net.IPv4(10, 78, 100+m[4]%100, m[5]), Mask: net.CIDRMask(16, 32)}, true
		}
		return Reservation{}, false
	})
	resA := StaticReservations{
		macKey(macA1): {Name: "node-a1", IP: net.IPv4(10, 77, 0, 101), Mask: net.CIDRMask(24, 32), Router: net.IPv4(10, 77, 0, 254)},
		macKey(macA3): {Name: "node-a3", IP: net.IPv4(10, 77, 0, 103), Mask: net.CIDRMask(24, 32), Router: net.IPv4(10, 77, 0, 254)},
	}
	resB := StaticReservations{
		macKey(macB2): {Name: "node-b2", IP: net.IPv4(10, 77, 0, 102), Mask: net.CIDRMask(24, 32)},
	}
	// Server A serves the subnet it is attached to, as bootsrv serves dhcp.subnet (Networks):
	// a relay's giaddr there passed the network check before issue 25.
	e.serve(e.a, Config{ServerIP: net.IPv4(10, 77, 0, 1), Observer: e.recA, Registerer: e.regA,
		Networks: []netip.Prefix{netip.MustParsePrefix("10.77.0.0/24")}, Reservations: ReservationsFunc(func(m net.HardwareAddr) (Reservation, bool) {
			if r, ok := resA.Lookup(m); ok {
				return r, true
			}
			return relayRes.Lookup(m)
		})})
	e.serve(e.b, Config{ServerIP: net.IPv4(10, 77, 0, 2), Observer: e.recB, Reservations: resB})
}

// serve runs a server whose socket lives in namespace ns (testfix.InNetns).
func (e *nsEnv) serve(ns string, cfg Config) {
	t := e.t
	cfg.Interface = "eth0"
	cfg.Logger = zaptest.NewLogger(t)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := testfix.InNetns(ns, func() error { return s.Listen(context.Background()) }); err != nil {
		t.Fatal(err)
	}
	testfix.Run(t, "server in "+ns, s.Serve)
}

// outcomes lists the observer events for mac.
func outcomes(r *recorder, mac net.HardwareAddr) []string {
	var out []string
	for _, e := range r.get() {
		if e.MAC == mac.String() {
			out = append(out, e.Type+":"+string(e.Outcome))
		}
	}
	return out
}

func onlyNotOurs(evs []string) bool {
	for _, e := range evs {
		if !strings.HasSuffix(e, ":"+string(OutcomeNotOurs)) {
			return false
		}
	}
	return true
}

// udhcpc runs busybox udhcpc on the client link with address mac.
func (e *nsEnv) udhcpc(t *testing.T, mac net.HardwareAddr, extra ...string) map[string]string {
	t.Helper()
	return testfix.Udhcpc(t, e.c, "cl0", mac, e.dir, extra...)
}

// TestNetnsClients boots real DHCP clients in the client namespace against servers A and B;
// each case runs in order on the same servers.
func TestNetnsClients(t *testing.T) {
	e := newNSEnv(t)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"udhcpc BIOS PXE from server A", e.biosPXE},
		{"replies are unicast unless the client asks for broadcast", e.unicastReplies},
		{"udhcpc plain client from server B only", e.plainClient},
		{"dhclient UEFI x64", e.dhclientUEFI},
		{"perfdhcp through a relay", e.perfdhcpRelay},
		{"a relay inside the server's own subnet is refused", e.relayInsideSubnet},
	} {
		t.Run(tc.name, tc.run)
	}
}

// biosPXE boots busybox udhcpc as BIOS PXE firmware (option 60, option 93 = 0):
// server A answers with its reservation and boot file, server B stays silent.
func (e *nsEnv) biosPXE(t *testing.T) {
	got := e.udhcpc(t, macA1, "-V", "PXEClient:Arch:00000:UNDI:002001", "-x", "0x5d:0000")
	want := map[string]string{"ip": "10.77.0.101", "boot_file": "undionly.kpxe", "siaddr": "10.77.0.1",
		"serverid": "10.77.0.1", "hostname": "node-a1", "router": "10.77.0.254", "subnet": "255.255.255.0"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("udhcpc %s = %q, want %q", k, got[k], v)
		}
	}
	if a := outcomes(e.recA, macA1); len(a) < 2 || a[0] != "DISCOVER:offered" || a[len(a)-1] != "REQUEST:acked" {
		t.Errorf("server A events %v", a)
	}
	if b := outcomes(e.recB, macA1); len(b) == 0 || !onlyNotOurs(b) {
		t.Errorf("server B events for A's node %v: want only not_ours", b)
	}
}

// unicastReplies checks that replies go by unicast to the client's MAC (through a neighbour
// entry) unless the client asks for broadcast.
func (e *nsEnv) unicastReplies(t *testing.T) {
	// A bystander on the same bridge listens on the client port: a
	// broadcast reply reaches it, a unicast to the client's MAC does not.
	var bystander net.PacketConn
	if err := testfix.InNetns(e.b, func() (err error) { bystander, err = net.ListenPacket("udp4", "0.0.0.0:68"); return err }); err != nil {
		t.Fatal(err)
	}
	defer bystander.Close()
	heard := func() (n int) {
		buf := make([]byte, 1500)
		for {
			bystander.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			k, _, err := bystander.ReadFrom(buf)
			if err != nil {
				return n
			}
			if p, err := dhcpv4.FromBytes(buf[:k]); err == nil && p.OpCode == dhcpv4.OpcodeBootReply && bytes.Equal(p.ClientHWAddr, macA1) {
				n++
			}
		}
	}
	if got := e.udhcpc(t, macA1); got["ip"] != "10.77.0.101" {
		t.Fatalf("udhcpc got ip %q", got["ip"])
	}
	if n := heard(); n != 0 {
		t.Errorf("a bystander heard %d replies meant for %v: they were broadcast", n, macA1)
	}
	if neigh := testfix.IP(t, e.a, "neigh", "show", "10.77.0.101"); !strings.Contains(neigh, macA1.String()) {
		t.Errorf("server A has no neighbour entry 10.77.0.101 -> %v for the unicast: %q", macA1, neigh)
	}
	if got := e.udhcpc(t, macA1, "-B"); got["ip"] != "10.77.0.101" {
		t.Fatalf("udhcpc -B got ip %q", got["ip"])
	}
	if n := heard(); n < 2 {
		t.Errorf("udhcpc -B asked for broadcast replies; the bystander heard %d, want the OFFER and the ACK", n)
	}
}

// plainClient boots a plain udhcpc client that only server B owns.
func (e *nsEnv) plainClient(t *testing.T) {
	got := e.udhcpc(t, macB2)
	if got["ip"] != "10.77.0.102" || got["serverid"] != "10.77.0.2" || got["hostname"] != "node-b2" {
		t.Errorf("udhcpc got ip=%q serverid=%q hostname=%q", got["ip"], got["serverid"], got["hostname"])
	}
	if a := outcomes(e.recA, macB2); len(a) == 0 || !onlyNotOurs(a) {
		t.Errorf("server A events for B's node %v: want only not_ours", a)
	}
}

// dhclientUEFI boots ISC dhclient as x86-64 UEFI PXE firmware from server A.
func (e *nsEnv) dhclientUEFI(t *testing.T) {
	if _, err := exec.LookPath("dhclient"); err != nil {
		testenv.Skip(t, "needs ISC dhclient (Debian package isc-dhcp-client)")
	}
	testfix.IP(t, e.c, "link", "set", "cl0", "address", macA3.String())
	out := filepath.Join(e.dir, "dhclient.env")
	script := filepath.Join(e.dir, "dhclient.sh")
	os.WriteFile(script, []byte("#!/bin/sh\ncase \"$reason\" in BOUND|RENEW|REBOOT) env > "+out+".tmp && mv "+out+".tmp "+out+";; esac\nexit 0\n"), 0o755)
	conf := filepath.Join(e.dir, "dhclient.conf")
	os.WriteFile(conf, []byte(`option pxe-arch code 93 = unsigned integer 16;
send vendor-class-identifier "PXEClient:Arch:00007:UNDI:003016";
send pxe-arch 7;
request subnet-mask, routers, host-name;
timeout 20;
initial-interval 1;
`), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", e.c, "dhclient", "-4", "-d", "-v", "-cf", conf, "-sf", script,
		"-lf", filepath.Join(e.dir, "dhclient.leases"), "-pf", filepath.Join(e.dir, "dhclient.pid"), "cl0")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var b []byte
	for i := 0; i < 200; i++ {
		if b, _ = os.ReadFile(out); len(b) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond) // polls for the lease script's output
	}
	if len(b) == 0 {
		t.Fatalf("dhclient got no lease in 20 s:\n%s", log.String())
	}
	got := testfix.KV(string(b))
	want := map[string]string{"new_ip_address": "10.77.0.103", "new_filename": "ipxe.efi", "new_next_server": "10.77.0.1",
		"new_host_name": "node-a3", "new_dhcp_server_identifier": "10.77.0.1", "new_routers": "10.77.0.254"}
	for k, v := range want {
		if strings.Trim(got[k], "'\"") != v {
			t.Errorf("dhclient %s = %q, want %q", k, got[k], v)
		}
	}
	if b := outcomes(e.recB, macA3); !onlyNotOurs(b) {
		t.Errorf("server B answered A's node: %v", b)
	}
}

// perfdhcpRelay runs perfdhcp as a relay agent on the relayed clients' subnet (giaddr
// 10.78.0.50) against server A: it must acknowledge nearly every relayed REQUEST, and server B
// must see none of them.
func (e *nsEnv) perfdhcpRelay(t *testing.T) {
	if testing.Short() {
		// The race run (-short, nice 10 beside the main run on 2 cores) lost 13 % of the ACKs to
		// the host's load on a fresh machine; the main run checks the relay path at this rate.
		t.Skip("-short: 200 relayed exchanges a second measure the host's load beside the main run")
	}
	if _, err := exec.LookPath("perfdhcp"); err != nil {
		testenv.Skip(t, "needs perfdhcp (Debian package kea-admin)")
	}
	// perfdhcp acts as a relay: giaddr is its local address 10.78.0.50, replies come to port 67.
	// -d 5 -d 5: an answer counts unless it is 5 s late (perfdhcp's default is 1 s). What is checked
	// here is the relay path, not latency, and under -race beside the other runs answers took up to
	// 0.9 s, and some longer.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", e.c, "perfdhcp", "-4", "-l", "10.78.0.50", "-r", "200", "-n", "300",
		"-R", "100", "-b", "mac=00:0c:01:02:00:00", "-W", "1000000", "-d", "5", "-d", "5", "10.77.0.1").CombinedOutput()
	// perfdhcp exits 3 when packets were dropped; the numbers decide.
	st := parsePerfdhcp(string(out))
	t.Logf("perfdhcp: %+v (err %v)", st, err)
	if st.sent[0] == 0 {
		t.Fatalf("perfdhcp sent nothing: %v\n%s", err, out)
	}
	if st.recv[1] < st.sent[1]*99/100 || st.recv[1] == 0 {
		t.Errorf("relay path: %d ACKs for %d REQUESTs\n%s", st.recv[1], st.sent[1], out)
	}
	var relayed int
	for _, ev := range e.recA.get() {
		if strings.HasPrefix(ev.MAC, "00:0c:01") && ev.Outcome == OutcomeAcked {
			relayed++
		}
	}
	if relayed == 0 {
		t.Error("server A acknowledged no relayed client")
	}
	for _, ev := range e.recB.get() {
		if strings.HasPrefix(ev.MAC, "00:0c:01") {
			t.Errorf("server B saw relayed traffic addressed to A: %v", ev)
			break
		}
	}
}

// relayInsideSubnet runs perfdhcp as a relay with giaddr 10.77.0.50, inside the subnet server A
// is attached to: no relay can be there (its clients reach the server directly), so a reply to
// "the relay" would go to whatever host has that address. Server A was answering it (issue 25);
// it must refuse every request and count them.
func (e *nsEnv) relayInsideSubnet(t *testing.T) {
	if _, err := exec.LookPath("perfdhcp"); err != nil {
		testenv.Skip(t, "needs perfdhcp (Debian package kea-admin)")
	}
	before := refusedCount(t, e.regA, "giaddr_attached")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", e.c, "perfdhcp", "-4", "-l", "10.77.0.50", "-r", "100", "-n", "20",
		"-R", "20", "-b", "mac=00:0c:01:03:00:00", "-W", "1000000", "10.77.0.1").CombinedOutput()
	st := parsePerfdhcp(string(out))
	t.Logf("perfdhcp: %+v (err %v)", st, err)
	if st.sent[0] == 0 {
		t.Fatalf("perfdhcp sent nothing: %v\n%s", err, out)
	}
	if st.recv[0] != 0 {
		t.Errorf("a relay inside the server's subnet got %d OFFERs for %d DISCOVERs", st.recv[0], st.sent[0])
	}
	if n := refusedCount(t, e.regA, "giaddr_attached") - before; n < float64(st.sent[0]) {
		t.Errorf("refused{giaddr_attached} grew by %v for %d DISCOVERs", n, st.sent[0])
	}
}

// perfStats holds perfdhcp's per-exchange counters: [0] DISCOVER-OFFER,
// [1] REQUEST-ACK.
type perfStats struct {
	sent, recv, drops [2]int
	rate              float64
}

func parsePerfdhcp(out string) perfStats {
	var st perfStats
	ex := -1
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "***Statistics for: DISCOVER-OFFER"):
			ex = 0
		case strings.HasPrefix(l, "***Statistics for: REQUEST-ACK"):
			ex = 1
		case strings.HasPrefix(l, "***Rate statistics"):
			ex = -1
		}
		var n int
		if ex >= 0 {
			if _, err := fmt.Sscanf(l, "sent packets: %d", &n); err == nil {
				st.sent[ex] = n
			} else if _, err := fmt.Sscanf(l, "received packets: %d", &n); err == nil {
				st.recv[ex] = n
			} else if _, err := fmt.Sscanf(l, "drops: %d", &n); err == nil {
				st.drops[ex] = n
			}
		}
		fmt.Sscanf(l, "Rate: %f 4-way exchanges/second", &st.rate)
	}
	return st
}

// TestNetnsProductionShape runs the server as its own process inside a
// namespace the way bootsrv does: all interfaces, no configured ServerIP, so
// the identity comes from the arriving interface (IP_PKTINFO). A second
// process on the same port must refuse to start.
func TestNetnsProductionShape(t *testing.T) {
	if os.Getenv("DHCPD_NETNS_CHILD") != "" {
		netnsChild()
		return
	}
	e := newTopology(t)
	start := func() (*exec.Cmd, *bytes.Buffer, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		t.Cleanup(cancel)
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", e.a, os.Args[0], "-test.run=^TestNetnsProductionShape$")
		cmd.Env = append(os.Environ(), "DHCPD_NETNS_CHILD=1")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line := make([]byte, 6)
		n, _ := out.Read(line)
		if string(line[:n]) != "READY\n" {
			cmd.Wait()
			return nil, &errb, fmt.Errorf("child exited: %s", errb.String())
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, &errb, nil
	}
	if _, _, err := start(); err != nil {
		t.Fatal(err)
	}
	got := e.udhcpc(t, macA1, "-V", "PXEClient:Arch:00007:UNDI:003016", "-x", "0x5d:0007")
	want := map[string]string{"ip": "10.77.0.101", "siaddr": "10.77.0.1", "serverid": "10.77.0.1", "boot_file": "ipxe.efi"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("udhcpc %s = %q, want %q", k, got[k], v)
		}
	}
	_, errb, err := start()
	if err == nil {
		t.Fatal("a second server on port 67 in the same namespace started")
	}
	if !strings.Contains(errb.String(), "already held by another process") {
		t.Errorf("second server error does not say the port is held: %s", errb.String())
	}
	t.Logf("second server refused: %s", strings.TrimSpace(errb.String()))
}

func netnsChild() {
	res := StaticReservations{macKey(macA1): {Name: "node-a1", IP: net.IPv4(10, 77, 0, 101), Mask: net.CIDRMask(24, 32)}}
	s, err := New(Config{Reservations: res})
	if err == nil {
		err = s.Listen(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("READY")
	s.Serve(context.Background()) // until killed
	os.Exit(0)
}

// Make sure dhcpv4 is referenced even if subtests are skipped.
var _ = dhcpv4.ClientPort

// TestNetnsLocalPrefixes: the subnets the server is attached to are read through its socket, so
// from the socket's namespace, one per address with that address's own mask (secondary and
// labelled addresses included).
func TestNetnsLocalPrefixes(t *testing.T) {
	e := newTopology(t)
	testfix.IP(t, e.a, "addr", "add", "192.168.9.1/28", "dev", "eth0")
	testfix.IP(t, e.a, "addr", "add", "172.16.0.1/16", "dev", "eth0", "label", "eth0:1")
	var conn net.PacketConn
	if err := testfix.InNetns(e.a, func() (err error) { conn, err = net.ListenPacket("udp4", "0.0.0.0:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc, err := conn.(*net.UDPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	got, err := localPrefixes(rc)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	want := []netip.Prefix{netip.MustParsePrefix("10.77.0.0/24"), netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/16"), netip.MustParsePrefix("192.168.9.0/28")}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("local prefixes in %s (-want +got):\n%s", e.a, diff)
	}
}
