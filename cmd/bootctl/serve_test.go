package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/nodestate/boltstore"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/pin/tftp/v3"
	"go.uber.org/zap/zaptest"
)

// runBootctl runs the command line in-process with ctx and returns its exit status, stdout and
// stderr.
func runBootctl(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(ctx, append([]string{"bootctl"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// randomFile writes n seeded random bytes to path (testfix.RandomFile) and returns them.
func randomFile(t *testing.T, path string, n int, seed uint64) []byte {
	t.Helper()
	return testfix.RandomFile(t, path, n, seed)
}

// serveFiles is a boot server's files: a store with profile "default", an iPXE directory, an
// inventory of four mini nodes (node00 has 127.0.0.1) and a config.
type serveFiles struct {
	dir, config         string
	kernel, initrd, nbp []byte
}

func newServeFiles(t *testing.T, dhcpMode string) *serveFiles {
	t.Helper()
	dir := t.TempDir()
	f := &serveFiles{dir: dir, config: filepath.Join(dir, "serve.yaml")}
	b := testfix.BootDir(t, dir, testfix.BootSizes{Kernel: 2<<20 + 3, Initrd: 1<<20 + 7, NBP: 70_000, Seed: 1}, "console=ttyS0 quiet")
	f.kernel, f.initrd, f.nbp = b.Kernel, b.Initrd, b.NBP
	inv := "name,mac,ip,node\nnode00,52:54:00:00:00:00,127.0.0.1,s0-b0-n0\nnode01,52:54:00:00:00:01,127.0.0.11,s0-b0-n1\n" +
		"node02,52:54:00:00:00:02,127.0.0.12,s0-b0-n2\nnode03,52:54:00:00:00:03,127.0.0.13,s0-b0-n3\n"
	testfix.WriteFile(t, filepath.Join(dir, "inventory.csv"), []byte(inv))
	dhcp := fmt.Sprintf(`{mode: %s, listen: "127.0.0.1:0", subnet: 127.0.0.0/8, lease_time: 10m}`, dhcpMode)
	testfix.WriteFile(t, f.config, []byte(testfix.ServeYAML("50ms", dhcp)))
	return f
}

// startServer runs a boot server from the files until the returned stop function is called.
func startServer(t *testing.T, f *serveFiles) (*bootsrv.Server, func()) {
	t.Helper()
	cfg, err := bootconfig.LoadConfig(f.config)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := bootsrv.New(cfg, bootsrv.Options{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return srv, testfix.Serve(t, srv)
}

// dora runs DISCOVER/OFFER/REQUEST/ACK against a DHCP server on loopback with the dhcpv4 package
// (the server answers a client on a non-standard port directly). afterOffer runs between OFFER and
// REQUEST.
func dora(t *testing.T, server *net.UDPAddr, mac net.HardwareAddr, afterOffer func()) net.IP {
	return doraAs(t, server, mac, afterOffer, "undionly.kpxe",
		dhcpv4.WithOption(dhcpv4.OptClassIdentifier("PXEClient:Arch:00000:UNDI:002001")))
}

// doraAs runs DORA as a client identified by the modifiers and checks the boot file it is given.
func doraAs(t *testing.T, server *net.UDPAddr, mac net.HardwareAddr, afterOffer func(), wantFile string, client ...dhcpv4.Modifier) net.IP {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exchange := func(req *dhcpv4.DHCPv4, want dhcpv4.MessageType) *dhcpv4.DHCPv4 {
		for try := 0; try < 3; try++ {
			if _, err := conn.WriteToUDP(req.ToBytes(), server); err != nil {
				t.Fatal(err)
			}
			conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			buf := make([]byte, 1500)
			n, _, err := conn.ReadFromUDP(buf)
			if err != nil {
				continue
			}
			resp, err := dhcpv4.FromBytes(buf[:n])
			if err != nil {
				t.Fatalf("reply: %v", err)
			}
			if resp.TransactionID != req.TransactionID || resp.MessageType() != want {
				t.Fatalf("got %v, want %v", resp.Summary(), want)
			}
			return resp
		}
		t.Fatalf("no %v from %v", want, server)
		return nil
	}
	disc, err := dhcpv4.NewDiscovery(mac, client...)
	if err != nil {
		t.Fatal(err)
	}
	offer := exchange(disc, dhcpv4.MessageTypeOffer)
	afterOffer()
	req, err := dhcpv4.NewRequestFromOffer(offer, client...)
	if err != nil {
		t.Fatal(err)
	}
	ack := exchange(req, dhcpv4.MessageTypeAck)
	for _, m := range []*dhcpv4.DHCPv4{offer, ack} {
		if m.GetOneOption(dhcpv4.OptionBootfileName) == nil || string(m.GetOneOption(dhcpv4.OptionBootfileName)) != wantFile || !m.ServerIPAddr.Equal(net.IPv4(127, 0, 0, 1)) {
			t.Errorf("%v: boot file %q from %v, want %s from 127.0.0.1", m.MessageType(), m.GetOneOption(dhcpv4.OptionBootfileName), m.ServerIPAddr, wantFile)
		}
	}
	return ack.YourIPAddr
}

func tftpGet(t *testing.T, addr, name string) []byte {
	t.Helper()
	c, err := tftp.NewClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetBlockSize(1468)
	c.RequestTSize(true)
	c.SetTimeout(time.Second)
	wt, err := c.Receive(name, "octet")
	if err != nil {
		t.Fatalf("tftp %s: %v", name, err)
	}
	tsize, ok := wt.(tftp.IncomingTransfer).Size()
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		t.Fatalf("tftp %s: %v", name, err)
	}
	if !ok || tsize != int64(buf.Len()) {
		t.Errorf("tsize %d, %v; got %d bytes", tsize, ok, buf.Len())
	}
	return buf.Bytes()
}

// tsizeProbe does what UEFI firmware does first: ask for the file with tsize, read the OACK, abort
// with TFTP error 5.
func tsizeProbe(t *testing.T, addr, name string) {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	server, _ := net.ResolveUDPAddr("udp4", addr)
	rrq := append([]byte{0, 1}, []byte(name+"\x00octet\x00tsize\x000\x00blksize\x001468\x00")...)
	if _, err := conn.WriteToUDP(rrq, server); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 2048)
	n, from, err := conn.ReadFromUDP(buf)
	if err != nil {
		t.Fatalf("tsize probe: %v", err)
	}
	if n < 2 || buf[1] != 6 || !bytes.Contains(buf[:n], []byte("tsize\x00")) {
		t.Fatalf("tsize probe: want an OACK with tsize, got % x", buf[:n])
	}
	conn.WriteToUDP(append([]byte{0, 5, 0, 5}, []byte("probe done\x00")...), from)
}

func httpGet(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return b
}

func statusJSON(t *testing.T, url string) bootapi.Status {
	t.Helper()
	code, out, errs := runBootctl(t, context.Background(), "status", "--server", url, "--output", "json")
	if code != 0 {
		t.Fatalf("status: %d %s", code, errs)
	}
	var res bootapi.Status
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("status output: %v\n%s", err, out)
	}
	return res
}

func findNode(t *testing.T, res bootapi.Status, name string) nodestate.NodeStatus {
	t.Helper()
	for _, n := range res.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s in status", name)
	return nodestate.NodeStatus{}
}

// TestServeLoopback boots node00 on loopback through every endpoint with real clients (the dhcpv4
// package, the pin/tftp client, net/http), checks `bootctl status`, then restarts the server and
// checks that the state survived.
func TestServeLoopback(t *testing.T) {
	f := newServeFiles(t, "reservation")
	srv, stop := startServer(t, f)
	mac, _ := net.ParseMAC("52:54:00:00:00:00")
	lb := &loopbackBoot{f: f, srv: srv, base: "http://" + srv.HTTPAddr().String(), mac: mac}
	lb.dhcp(t)
	lb.tftpProbeAndRefused(t)
	lb.tftpNBP(t)
	lb.ipxeDHCP(t)
	lb.httpBoot(t)
	n := lb.checkStatus(t)

	// Restart on the same state directory.
	stop()
	srv2, _ := startServer(t, f)
	lb2 := &loopbackBoot{f: f, srv: srv2, base: "http://" + srv2.HTTPAddr().String(), mac: mac}
	lb2.checkRestarted(t, n)
	lb2.reboot(t)
}

// loopbackBoot is TestServeLoopback's server and node00's MAC.
type loopbackBoot struct {
	f    *serveFiles
	srv  *bootsrv.Server
	base string // the server's URL
	mac  net.HardwareAddr
}

// node00 returns node00's status at the server now.
func (lb *loopbackBoot) node00() nodestate.NodeStatus {
	n, _ := lb.srv.Tracker().Node("node00")
	return n
}

// dhcp: node00's PXE DISCOVER gets its reserved address and the node is bound.
func (lb *loopbackBoot) dhcp(t *testing.T) {
	ip := dora(t, lb.srv.DHCPAddrs()[0], lb.mac, func() {})
	if !ip.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("DHCP gave %v, want the reserved 127.0.0.1", ip)
	}
	waitState(t, lb.srv, "node00", nodestate.Bound)
}

// tftpProbeAndRefused: neither UEFI's tsize probe nor a request for a missing boot file moves the
// node; each is recorded.
func (lb *loopbackBoot) tftpProbeAndRefused(t *testing.T) {
	// The UEFI tsize probe: RRQ with tsize, OACK, then ERROR 5 from the client. Not a failure.
	tsizeProbe(t, lb.srv.TFTPAddr().String(), "undionly.kpxe")
	// tftpd reports the probe once it has the client's ERROR, after the client returns: wait for
	// the probe's event, then the state it left.
	testfix.WaitFor(t, "the tsize probe recorded", 5*time.Second, func() bool { return lb.node00().LastEvent == nodestate.EvProbe })
	if n := lb.node00(); n.State != nodestate.Bound {
		t.Errorf("after the tsize probe: %v (%s), want still bound", n.State, n.Error)
	}
	// A request for a missing boot file is recorded and moves nothing: anyone can send one from
	// the node's address (issue 13).
	c, _ := tftp.NewClient(lb.srv.TFTPAddr().String())
	if _, err := c.Receive("missing.efi", "octet"); err == nil {
		t.Error("missing.efi fetched")
	}
	var n nodestate.NodeStatus
	testfix.WaitFor(t, "the refused request recorded", 5*time.Second, func() bool {
		n = lb.node00()
		return n.LastEvent == nodestate.EvTransferRefused
	})
	if n.State != nodestate.Bound {
		t.Errorf("after a request for a missing file: %v, want still bound", n.State)
	}
}

// tftpNBP fetches the NBP over TFTP: the node moves to nbp.
func (lb *loopbackBoot) tftpNBP(t *testing.T) {
	got := tftpGet(t, lb.srv.TFTPAddr().String(), "undionly.kpxe")
	if !bytes.Equal(got, lb.f.nbp) {
		t.Fatalf("NBP over TFTP differs: %d bytes, want %d", len(got), len(lb.f.nbp))
	}
	// tftpd reports a transfer when the server has seen the last ACK, which may be just after the
	// client returns.
	waitState(t, lb.srv, "node00", nodestate.NBP)
}

// ipxeDHCP: iPXE, loaded, asks for an address again and is given its script's URL; the boot
// stays at nbp.
func (lb *loopbackBoot) ipxeDHCP(t *testing.T) {
	doraAs(t, lb.srv.DHCPAddrs()[0], lb.mac, func() {}, lb.base+"/ipxe/52:54:00:00:00:00",
		dhcpv4.WithOption(dhcpv4.OptClassIdentifier("PXEClient:Arch:00000:UNDI:002001")),
		dhcpv4.WithOption(dhcpv4.OptUserClass("iPXE")))
	// dhcpd reports a request to the tracker before it sends the reply: the ACK is recorded.
	if n := lb.node00(); n.LastEvent != nodestate.EvAck || n.State != nodestate.NBP || n.Attempt != 1 {
		t.Errorf("after iPXE's DHCP: last event %v, %v attempt %d, want ack, nbp attempt 1", n.LastEvent, n.State, n.Attempt)
	}
}

// httpBoot does what node00's iPXE script says: fetch the kernel and the initrd (also over TFTP,
// as some firmware does), then post a health report.
func (lb *loopbackBoot) httpBoot(t *testing.T) {
	script := string(httpGet(t, lb.base+"/ipxe/52:54:00:00:00:00"))
	m := regexp.MustCompile(`(?m)^kernel (\S+) .*bootfabric.health=(\S+)`).FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("script has no kernel line:\n%s", script)
	}
	if !strings.HasPrefix(m[1], lb.base+"/boot/default/vmlinuz") {
		t.Errorf("kernel URL %s", m[1])
	}
	if got := httpGet(t, m[1]); !bytes.Equal(got, lb.f.kernel) {
		t.Fatal("kernel over HTTP differs")
	}
	im := regexp.MustCompile(`(?m)^initrd (\S+)`).FindStringSubmatch(script)
	if im == nil {
		t.Fatalf("script has no initrd line:\n%s", script)
	}
	if got := httpGet(t, im[1]); !bytes.Equal(got, lb.f.initrd) {
		t.Fatal("initrd over HTTP differs")
	}
	if got := tftpGet(t, lb.srv.TFTPAddr().String(), "boot/default/initrd.img"); !bytes.Equal(got, lb.f.initrd) {
		t.Fatal("initrd over TFTP differs")
	}
	resp, err := http.Post(m[2], "application/json", strings.NewReader(`{"status":"ok","details":{"uptime":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health: %s", resp.Status)
	}
}

// checkStatus: `bootctl status` (JSON and table) and the metrics show node00 healthy with a
// timestamp for every state, the others pending. It returns node00's status.
func (lb *loopbackBoot) checkStatus(t *testing.T) nodestate.NodeStatus {
	res := statusJSON(t, lb.base)
	n := findNode(t, res, "node00")
	if n.State != nodestate.Healthy {
		t.Errorf("node00 is %v, want healthy; history %+v", n.State, n.History)
	}
	for _, st := range []nodestate.State{nodestate.Discover, nodestate.Offered, nodestate.Bound, nodestate.NBP, nodestate.Kernel, nodestate.Initrd, nodestate.Healthy} {
		if n.Times[st].IsZero() {
			t.Errorf("node00 has no timestamp for %v: %v", st, n.Times)
		}
	}
	if res.Summary.Nodes != 4 || res.Summary.States[nodestate.Healthy] != 1 || res.Summary.States[nodestate.Pending] != 3 || res.Summary.Health.Status != nodestate.HealthPartial {
		t.Errorf("summary %+v", res.Summary)
	}
	if res.Nodes[len(res.Nodes)-1].Name != "node00" {
		t.Errorf("nodes not grouped by state: last is %s", res.Nodes[len(res.Nodes)-1].Name)
	}
	metrics := string(httpGet(t, lb.base+"/metrics"))
	for _, want := range []string{`bootfabric_dhcp_packets_total{outcome="acked",type="REQUEST"} 2`,
		`bootfabric_tftp_transfers_total{outcome="ok"} 2`, `bootfabric_boot_nodes{state="healthy"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	code, table, _ := runBootctl(t, context.Background(), "status", "--server", lb.base)
	if code != 0 || !strings.Contains(table, "health partial (1 healthy, 0 failed, 0 booting, 3 pending)") || !strings.Contains(table, "node00") {
		t.Errorf("status table (%d):\n%s", code, table)
	}
	return n
}

// checkRestarted: the restarted server has node00 as it was before (healthy, same discover time,
// its report); a DISCOVER of the healthy node nobody asked for is only an event.
func (lb *loopbackBoot) checkRestarted(t *testing.T, before nodestate.NodeStatus) {
	n2 := findNode(t, statusJSON(t, lb.base), "node00")
	if n2.State != nodestate.Healthy || !n2.Times[nodestate.Discover].Equal(before.Times[nodestate.Discover]) || n2.Health == nil {
		t.Errorf("after restart node00 = %+v\nbefore %+v", n2, before)
	}
	dora(t, lb.srv.DHCPAddrs()[0], lb.mac, func() {})
	// The whole exchange is recorded before the ACK is sent (its event is the last): the state
	// it left is final.
	if n := lb.node00(); n.LastEvent != nodestate.EvAck || n.State != nodestate.Healthy || n.Attempt != 1 {
		t.Errorf("after an unasked DISCOVER: last event %v, %v attempt %d, want ack, healthy attempt 1", n.LastEvent, n.State, n.Attempt)
	}
}

// reboot: the operator asks for node00's reboot (bootctl node reboot, refused with a wrong
// token); the next DISCOVER starts the boot over. A REQUEST right after the OFFER: the ACK may be
// reported before the DISCOVER (see bootsrv's dhcpObserver); the states must still come out in
// order.
func (lb *loopbackBoot) reboot(t *testing.T) {
	tokFile := filepath.Join(lb.f.dir, "state", bootconfig.OperatorTokenFile)
	wrong := testfix.WriteFile(t, filepath.Join(t.TempDir(), "wrong.token"), []byte("0123456789abcdef0123456789abcdef\n"))
	if code, _, errs := runBootctl(t, context.Background(), "node", "reboot", "node00", "--server", lb.base, "--token-file", wrong); code != 1 || !strings.Contains(errs, "401") {
		t.Errorf("reboot with the wrong token: %d %s", code, errs)
	}
	code, out, errs := runBootctl(t, context.Background(), "node", "reboot", "node00", "--server", lb.base, "--token-file", tokFile, "--output", "json")
	if code != 0 || !strings.Contains(out, `"reboot_requested": true`) {
		t.Fatalf("node reboot: %d %s %s", code, out, errs)
	}
	dora(t, lb.srv.DHCPAddrs()[0], lb.mac, func() {})
	if n := waitState(t, lb.srv, "node00", nodestate.Bound); n.Attempt != 2 {
		t.Errorf("after reboot: attempt %d, want 2", n.Attempt)
	}
}

// waitState waits up to 5 s for a node to reach a state and returns its status then; on time out
// the test stops, with the node's history in the log.
func waitState(t *testing.T, srv *bootsrv.Server, name string, want nodestate.State) nodestate.NodeStatus {
	t.Helper()
	var n nodestate.NodeStatus
	reached := false
	defer func() {
		if !reached {
			t.Logf("%s is %v, want %v; history %+v", name, n.State, want, n.History)
		}
	}()
	testfix.WaitFor(t, fmt.Sprintf("%s %v", name, want), 5*time.Second, func() bool {
		n, _ = srv.Tracker().Node(name)
		return n.State == want
	})
	reached = true
	return n
}

// TestServeCommand runs `bootctl serve` with flag and environment overrides and stops it the way
// SIGTERM does (main cancels the context).
func TestServeCommand(t *testing.T) {
	f := newServeFiles(t, "off")
	port := testfix.FreePort(t)
	t.Setenv("BOOTCTL_TFTP", "off")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- run(ctx, []string{"bootctl", "serve", "--config", f.config, "--http", fmt.Sprintf("127.0.0.1:%d", port)}, &out, &errb)
	}()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	testfix.WaitFor(t, "bootctl serve up", 10*time.Second, func() bool {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			return true
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d: %s", code, errb.String())
		default:
		}
		return false
	})
	res := statusJSON(t, url)
	if res.Summary.Nodes != 4 {
		t.Errorf("summary %+v", res.Summary)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited with %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s of cancel")
	}
	if _, err := os.Stat(filepath.Join(f.dir, "state", boltstore.StateFile)); err != nil {
		t.Errorf("no state saved: %v", err)
	}
}

func TestServeBadInput(t *testing.T) {
	f := newServeFiles(t, "off")
	bad := filepath.Join(f.dir, "bad.yaml")
	os.WriteFile(bad, []byte("servers: [{address: 127.0.0.1}]\ntopology: mini\nhttp:\n  listen: x\n"), 0o644)
	tests := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"serve", "--config", bad}, nil, "bad.yaml: inventory: missing"},
		{[]string{"serve", "--config", f.config, "--dhcp", "sometimes"}, nil, "dhcp.mode: \"sometimes\" is not reservation, proxy or off"},
		// A flag's bad value is blamed on the flag, not on the line of the file it replaced.
		{[]string{"serve", "--config", f.config, "--http", "8080"}, nil, "bootctl serve: --http: \"8080\" is not HOST:PORT"},
		{[]string{"serve", "--config", f.config}, map[string]string{"BOOTCTL_SERVER_ID": "3"}, "server_id: 3 is not the index"},
		{[]string{"serve", "--config", f.config, "--inventory", filepath.Join(f.dir, "nope.csv")}, nil, "nope.csv: no such file"},
		{[]string{"serve", "--config", filepath.Join(f.dir, "nope.yaml")}, nil, "nope.yaml: no such file"},
		{[]string{"serve"}, nil, "bootctl serve: --config (or $BOOTCTL_CONFIG) is required"},
		{[]string{"status", "--server", "localhost:80"}, nil, "is not an http:// URL"},
		{[]string{"status", "--server", "http://x", "--output", "xml"}, nil, "--output: \"xml\" is not one of table, json, yaml, csv"},
		{[]string{"status", "--server", "http://x", "--state", "asleep"}, nil, "unknown boot state"},
	}
	for _, tc := range tests {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		code, _, errs := runBootctl(t, context.Background(), tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
	}
}
