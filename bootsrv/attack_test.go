package bootsrv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/nodestate/boltstore"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"
)

// The attacks of issue 13, as a hostile host on the boot network makes them, one test each. In the
// fixture node00 is 127.0.0.1; the attacker is 192.0.2.66 unless the attack needs a real socket.

const attacker = "192.0.2.66:4242"

// nodeAt returns a node's status, failing the test when it is unknown.
func nodeAt(t *testing.T, s *Server, name string) nodestate.NodeStatus {
	t.Helper()
	n, ok := s.tracker.Node(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	return n
}

// TestAttackHealthFromAnyAddress: `curl -X POST -d '{"status":"failed"}' .../health` from any host
// used to fail (or heal) any node.
func TestAttackHealthFromAnyAddress(t *testing.T) {
	s := newFixture(t).server(t, nil)
	h := s.Handler()
	for _, tc := range []struct {
		name, target, remote string
		code                 int
	}{
		{"no token, other host", "/api/v1/nodes/node00/health", attacker, http.StatusUnauthorized},
		{"no token, node's address", "/api/v1/nodes/node00/health", "127.0.0.1:1", http.StatusUnauthorized},
		{"another node's token", "/api/v1/nodes/node00/health?token=" + nodeToken(s, "node01"), "127.0.0.1:1", http.StatusUnauthorized},
		{"right token, other host", "/api/v1/nodes/node00/health?token=" + nodeToken(s, "node00"), attacker, http.StatusForbidden},
		{"no token, node01", "/api/v1/nodes/node01/health", attacker, http.StatusUnauthorized},
	} {
		w := do(t, h, "POST", tc.target, `{"status":"failed"}`, tc.remote)
		if w.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, w.Code, w.Body, tc.code)
		}
	}
	for _, name := range []string{"node00", "node01"} {
		if n := nodeAt(t, s, name); n.State != nodestate.Pending || n.Health != nil {
			t.Errorf("%s after the attacks: %v %+v", name, n.State, n.Health)
		}
	}
	// The node itself, with its token from its own address, is heard (Bearer works as ?token=).
	req := httptest.NewRequest("POST", "/api/v1/nodes/node00/health", strings.NewReader(`{"status":"ok"}`))
	req.RemoteAddr = "127.0.0.1:1"
	req.Header.Set("Authorization", "Bearer "+attemptToken(t, s, "node00"))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != 200 || nodeAt(t, s, "node00").State != nodestate.Healthy {
		t.Errorf("node00's own report: %d %s", w.Code, w.Body)
	}
}

// TestAttackOneByteRange: `GET /boot/default/initrd.img?node=s0-b0-n1` with `Range: bytes=0-0`
// moved that node to initrd (one byte counted as delivered).
func TestAttackOneByteRange(t *testing.T) {
	s := newFixture(t).server(t, nil)
	h := s.Handler()
	get := func(target, remote string) int {
		req := httptest.NewRequest("GET", target, nil)
		req.RemoteAddr = remote
		req.Header.Set("Range", "bytes=0-0")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	tok := nodeToken(s, "node00")
	for _, tc := range []struct{ target, remote string }{
		{"/boot/default/initrd.img?node=node01", attacker},
		{"/boot/default/initrd.img?node=node00", "127.0.0.1:1"},
		{"/boot/default/initrd.img?token=" + tok, "127.0.0.1:1"}, // even the node's own range
		{"/boot/default/vmlinuz?token=" + tok, "127.0.0.1:1"},
	} {
		if code := get(tc.target, tc.remote); code != http.StatusPartialContent {
			t.Fatalf("%s: %d", tc.target, code)
		}
	}
	for _, name := range []string{"node00", "node01"} {
		if n := nodeAt(t, s, name); n.State != nodestate.Pending {
			t.Errorf("%s after one-byte ranges: %v", name, n.State)
		}
	}
}

// TestAttackCutDownload: a download cut short, attributed with ?node= or from the node's address
// without its token, marked the node failed.
func TestAttackCutDownload(t *testing.T) {
	s := newFixture(t).server(t, nil)
	srv := httptest.NewServer(s.Handler()) // the attacker is 127.0.0.1 here, node00's address
	defer srv.Close()
	for _, target := range []string{"/boot/default/vmlinuz?node=node01", "/boot/default/vmlinuz"} {
		resp, err := http.Get(srv.URL + target)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(resp.Body, make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close() // cut: the server's write fails
	}
	srv.CloseClientConnections()
	// The handlers finish writing into the closed connections; each request is counted once its
	// handler has returned, after it has said what the download means for the node.
	testfix.WaitFor(t, "both cut downloads handled", 5*time.Second, func() bool {
		return testutil.ToFloat64(s.httpm.requests.WithLabelValues("/boot/{profile}/{file}", "200")) == 2
	})
	for _, name := range []string{"node00", "node01"} {
		if n := nodeAt(t, s, name); n.State != nodestate.Pending {
			t.Errorf("%s after cut downloads: %v (%s)", name, n.State, n.Error)
		}
	}
}

// TestAttackScriptTheft: `GET /ipxe/{mac}` from any host moved the node to nbp and gave away its
// script; in proxy mode without inventory addresses, whoever fetched it first became the node's IP.
func TestAttackScriptTheft(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, nil)
	w := do(t, s.Handler(), "GET", "/ipxe/52:54:00:00:00:00", "", attacker)
	if w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), nodeToken(s, "node00")) {
		t.Errorf("script to another host: %d %s", w.Code, w.Body)
	}
	if n := nodeAt(t, s, "node00"); n.State != nodestate.Pending {
		t.Errorf("node00 after another host's script fetch: %v", n.State)
	}

	inv := strings.Replace(testfix.MiniInventoryCSV(t), "10.0.0.11,", ",", 1) // node01 has no address
	if err := os.WriteFile(filepath.Join(f.dir, "inventory.csv"), []byte(inv), 0o644); err != nil {
		t.Fatal(err)
	}
	p := f.server(t, func(c *bootconfig.Config) {
		c.DHCP.Mode = dhcpd.ModeProxy
		c.StateDir = filepath.Join(f.dir, "state-proxy")
	})
	w = do(t, p.Handler(), "GET", "/ipxe/52:54:00:00:00:01", "", attacker)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("proxy-mode script without the token: %d %s", w.Code, w.Body)
	}
	if n := nodeAt(t, p, "node01"); n.IP != "" || n.State != nodestate.Pending {
		t.Errorf("node01 after the attacker's fetch: %v at %q", n.State, n.IP)
	}
}

// TestAttackSpoofedDiscover: one spoofed DHCPDISCOVER moved a healthy node back to offered.
func TestAttackSpoofedDiscover(t *testing.T) {
	s := newFixture(t).server(t, nil)
	if _, err := s.tracker.Report("node00", nodestate.Health{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	mac, _ := net.ParseMAC("52:54:00:00:00:00")
	obs := newDHCPObserver(s)
	obs.OnDHCP(mac, dhcpv4.MessageTypeDiscover, dhcpd.OutcomeOffered, nil, dhcpd.KindPXE)
	if n := nodeAt(t, s, "node00"); n.State != nodestate.Healthy || n.Attempt != 0 || n.LastEvent != nodestate.EvOffer {
		t.Errorf("after a spoofed DISCOVER: %v attempt %d last %v", n.State, n.Attempt, n.LastEvent)
	}
	// The operator's reboot request makes the next one count; it needs the operator token.
	h := s.Handler()
	if w := do(t, h, "POST", "/api/v1/nodes/node00/reboot", "", "127.0.0.1:1"); w.Code != http.StatusUnauthorized {
		t.Errorf("reboot without the token: %d", w.Code)
	}
	req := httptest.NewRequest("POST", "/api/v1/nodes/node00/reboot", nil)
	req.Header.Set("Authorization", "Bearer "+string(s.operatorToken))
	req.RemoteAddr = attacker
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusForbidden {
		t.Errorf("reboot from another host: %d", w.Code)
	}
	req.RemoteAddr = "127.0.0.1:1"
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("reboot: %d %s", w.Code, w.Body)
	}
	obs.OnDHCP(mac, dhcpv4.MessageTypeDiscover, dhcpd.OutcomeOffered, nil, dhcpd.KindPXE)
	if n := nodeAt(t, s, "node00"); n.State != nodestate.Offered || n.Attempt != 1 {
		t.Errorf("after the asked-for reboot: %v attempt %d", n.State, n.Attempt)
	}
}

// TestAttackManyRanges: `Range: bytes=` with 260,000 `0-0,` parts turned a 1 MB request into a
// 38 MB answer; on /blobs (a fleet's peers fetch image blobs there) 21,000 parts of `-1` turned a
// 63 KB request into 3.26 MB (issue 25). Overlapping parts are merged, and more than max_ranges
// distinct ones get the file once, on every route that serves a file.
func TestAttackManyRanges(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, nil)
	h := s.Handler()
	size := len(f.initrd)
	blob, err := s.images.BlobPath("default", "initrd.img")
	if err != nil {
		t.Fatal(err)
	}
	var far strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&far, "%d-%d,", 2*i, 2*i)
	}
	for _, tc := range []struct {
		name, ranges string
		code         int
	}{
		{"overlapping", strings.Repeat("0-0,", 20_000) + "0-0", http.StatusPartialContent},
		{"overlapping suffixes", strings.Repeat("-1,", 21_000) + "-1", http.StatusPartialContent},
		{"distinct", strings.TrimSuffix(far.String(), ","), http.StatusOK},
	} {
		for _, target := range []string{"/boot/default/initrd.img", "/blobs/sha256/" + filepath.Base(blob)} {
			req := httptest.NewRequest("GET", target, nil)
			req.Header.Set("Range", "bytes="+tc.ranges)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.code || w.Body.Len() > size {
				t.Errorf("%s %s: %d with %d bytes for a %d-byte file", target, tc.name, w.Code, w.Body.Len(), size)
			}
		}
	}
}

// TestAttackIdleConnections: 289 idle keep-alive connections from one host exhausted the
// descriptors. One address gets max_conns_per_client, and a connection that sends no request is
// closed after read_header_timeout.
func TestAttackIdleConnections(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, func(c *bootconfig.Config) {
		c.HTTP.MaxConnsPerClient = 8
		c.HTTP.ReadHeaderTimeout = bootconfig.Duration(5 * time.Second) // past the 2 s the test waits for the over-cap closes
		c.TFTP.Listen = "off"
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	if err := s.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	go func() { done <- s.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	addr := s.HTTPAddr().String()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// Those over the cap are closed at once: a read sees EOF well before the header timeout.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var held []net.Conn
	for _, c := range conns {
		wg.Go(func() {
			// 2 s: a server starved of CPU (-race beside the main run) closes late.
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(held) != 8 {
		t.Errorf("%d of 40 idle connections held open, want 8", len(held))
	}
	// The held ones are closed after the header timeout (5 s from their accept): each read ends
	// with the server's close, well before its own deadline. Then the server answers again.
	for _, c := range held {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("a held idle connection: read %v, want EOF (closed after the header timeout)", err)
		}
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("after the idle connections: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz: %s", resp.Status)
	}
}

// TestAttackHealthGrowth: each health POST grew the node's record (34 made it 1 MB). A report is
// bounded by max_report_bytes, a transition's detail by nodestate.MaxDetailLen, and the history by
// health.history, the rest counted.
func TestAttackHealthGrowth(t *testing.T) {
	s := newFixture(t).server(t, func(c *bootconfig.Config) { c.Health.History = 8 })
	h := s.Handler()
	details := strings.Repeat("x", bootconfig.DefaultMaxReportBytes-100)
	for i := range 40 {
		// A report spends its attempt's token: each is one boot attempt of its own.
		s.tracker.Observe("node00", nodestate.EvRebootDiscover, "test: a new boot attempt")
		target := "/api/v1/nodes/node00/health?token=" + nodeToken(s, "node00")
		status := []string{"ok", "failed"}[i%2]
		w := do(t, h, "POST", target, `{"status":"`+status+`","details":"`+details+`"}`, "127.0.0.1:1")
		if w.Code != 200 {
			t.Fatalf("report %d: %d %s", i, w.Code, w.Body)
		}
	}
	s.tracker.Observe("node00", nodestate.EvRebootDiscover, "test: a new boot attempt")
	target := "/api/v1/nodes/node00/health?token=" + nodeToken(s, "node00")
	if w := do(t, h, "POST", target, `{"status":"ok","details":"`+strings.Repeat("x", bootconfig.DefaultMaxReportBytes)+`"}`, "127.0.0.1:1"); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized report: %d", w.Code)
	}
	n := nodeAt(t, s, "node00")
	rec, _ := json.Marshal(n)
	if len(rec) > 2*bootconfig.DefaultMaxReportBytes+8*(nodestate.MaxDetailLen+200) {
		t.Errorf("node00's record is %d bytes after 40 reports", len(rec))
	}
	// 81 transitions: each attempt's start and its report, and the last attempt's start.
	if len(n.History) != 8 || n.HistoryDropped != 73 {
		t.Errorf("history %d kept, %d dropped; want 8 and 73", len(n.History), n.HistoryDropped)
	}
}

// TestAttackZeroLengthStateFile: a zero-length nodes.db started empty without a word.
func TestAttackZeroLengthStateFile(t *testing.T) {
	f := newFixture(t)
	state := filepath.Join(f.dir, "state")
	os.MkdirAll(state, 0o755)
	if err := os.WriteFile(filepath.Join(state, boltstore.StateFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(f.config(t, nil), Options{Logger: zaptest.NewLogger(t)})
	var de *boltstore.DamagedError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "zero-length") || !strings.Contains(err.Error(), "--recover") ||
		!strings.Contains(err.Error(), filepath.Join(state, boltstore.StateFile)) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("zero-length state file: %v", err)
	}
	s, err := New(f.config(t, nil), Options{Logger: zaptest.NewLogger(t), RecoverState: true})
	if err != nil {
		t.Fatalf("--recover: %v", err)
	}
	s.Close()
	kept, _ := filepath.Glob(filepath.Join(state, boltstore.StateFile+".damaged-*"))
	if len(kept) != 1 {
		t.Errorf("damaged copies kept: %v", kept)
	}
}

// TestAttackSymlinkOutOfRoots: a symbolic link inside ipxe_dir (or the image store) served a file
// outside it over /ipxe/bin (and /boot).
func TestAttackSymlinkOutOfRoots(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(f.dir, "secret")
	if err := os.WriteFile(secret, []byte("not for the boot network\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(f.dir, "ipxe", "ipxe.efi")
	os.Remove(bin)
	if err := os.Symlink(secret, bin); err != nil {
		t.Fatal(err)
	}
	s := f.server(t, nil)
	blob, err := s.images.BlobPath("default", "vmlinuz")
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(blob)
	if err := os.Symlink(secret, blob); err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	for _, target := range []string{"/ipxe/bin/ipxe.efi", "/boot/default/vmlinuz", "/blobs/sha256/" + filepath.Base(blob)} {
		w := do(t, h, "GET", target, "", attacker)
		if w.Code == 200 || strings.Contains(w.Body.String(), "not for the boot network") {
			t.Errorf("%s through a symlink out of its root: %d %q", target, w.Code, w.Body)
		}
	}
	// TFTP serves s.fsys: the same links are refused there (issue 25 item 8: TFTP served the
	// link in ipxe_dir that HTTP refused).
	for _, name := range []string{"ipxe.efi", "boot/default/vmlinuz"} {
		if b, err := fs.ReadFile(s.fsys, name); err == nil || strings.Contains(string(b), "not for the boot network") {
			t.Errorf("TFTP's %s through a symlink out of its root: %q, %v", name, b, err)
		}
	}
	if b, err := fs.ReadFile(s.fsys, "undionly.kpxe"); err != nil || len(b) != len(f.nbp) {
		t.Errorf("TFTP's undionly.kpxe: %d bytes, %v", len(b), err)
	}
	// Files inside the roots are still served.
	if w := do(t, h, "GET", "/ipxe/bin/undionly.kpxe", "", attacker); w.Code != 200 || w.Body.Len() != len(f.nbp) {
		t.Errorf("undionly.kpxe: %d, %d bytes", w.Code, w.Body.Len())
	}
	// A link out of ipxe_dir to a file of its own name (Debian: ipxe.efi -> /boot/ipxe.efi) is
	// served: it is the binary the operator installed, not a way to another file.
	other := filepath.Join(f.dir, "boot")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "undionly.kpxe"), f.nbp, 0o644)
	os.Remove(filepath.Join(f.dir, "ipxe", "undionly.kpxe"))
	os.Symlink(filepath.Join(other, "undionly.kpxe"), filepath.Join(f.dir, "ipxe", "undionly.kpxe"))
	s2 := f.server(t, func(c *bootconfig.Config) { c.StateDir = filepath.Join(f.dir, "state2") })
	if w := do(t, s2.Handler(), "GET", "/ipxe/bin/undionly.kpxe", "", attacker); w.Code != 200 || w.Body.Len() != len(f.nbp) {
		t.Errorf("undionly.kpxe linked to a file of its name: %d, %d bytes", w.Code, w.Body.Len())
	}
	if w := do(t, s2.Handler(), "GET", "/ipxe/bin/ipxe.efi", "", attacker); w.Code == 200 {
		t.Errorf("ipxe.efi linked to another name: %d", w.Code)
	}
}

// TestAttackTokenOfIdleNode is issue 25's point 4: with DHCP answered here, a host that put a
// powered-off node's address on its interface fetched the node's script, and with its token moved
// the node from pending to healthy. Tokens now belong to one boot attempt, which only the node's
// DHCP exchange starts and its health report spends: the script of a node in no attempt carries a
// token that opens nothing, and a token stays worthless once its attempt was reported.
func TestAttackTokenOfIdleNode(t *testing.T) {
	s := newFixture(t).server(t, func(c *bootconfig.Config) { c.HTTP.URL = "http://127.0.0.1:8080" })
	// As with DHCP answered here (the fixture's addresses span no one subnet to configure): only
	// the handlers run, which read the mode.
	s.cfg.DHCP.Mode = dhcpd.ModeReservation
	h := s.Handler()
	report := func(tok, status string) int {
		return do(t, h, "POST", "/api/v1/nodes/node00/health?token="+tok, `{"status":"`+status+`"}`, "127.0.0.1:1").Code
	}
	// Powered off: the script is served to the address (iPXE must boot even when the attempt
	// is not known here), but its token opens nothing.
	w := do(t, h, "GET", "/ipxe/52:54:00:00:00:00", "", "127.0.0.1:1")
	if w.Code != http.StatusOK {
		t.Fatalf("script of an idle node to its address: %d %s", w.Code, w.Body)
	}
	stolen := scriptToken(t, w.Body.String())
	if code := report(stolen, "ok"); code != http.StatusConflict {
		t.Errorf("report with the token of a node in no attempt: %d, want 409", code)
	}
	if n := nodeAt(t, s, "node00"); n.State == nodestate.Healthy {
		t.Errorf("node00 healthy without booting: %v", n.State)
	}
	// The real boot: a DHCP exchange starts attempt 1; the script now carries its token.
	s.tracker.Observe("node00", nodestate.EvDiscover, "DHCPDISCOVER")
	w = do(t, h, "GET", "/ipxe/52:54:00:00:00:00", "", "127.0.0.1:1")
	tok := scriptToken(t, w.Body.String())
	if tok == stolen {
		t.Fatal("the attempt's token is the idle node's")
	}
	if code := report(stolen, "failed"); code != http.StatusUnauthorized {
		t.Errorf("report with the idle node's token during the attempt: %d, want 401", code)
	}
	if code := report(tok, "ok"); code != http.StatusOK {
		t.Errorf("the node's own report: %d", code)
	}
	// Spent: the booted node's token, taken from it now, cannot fail it.
	if code := report(tok, "failed"); code != http.StatusConflict || nodeAt(t, s, "node00").State != nodestate.Healthy {
		t.Errorf("second report with the spent token: %d, node %v", code, nodeAt(t, s, "node00").State)
	}
}

// scriptToken returns the token an iPXE script carries.
func scriptToken(t *testing.T, script string) string {
	t.Helper()
	_, rest, ok := strings.Cut(script, "token=")
	if !ok || len(rest) < nodeTokenLen {
		t.Fatalf("no token in the script:\n%q", script)
	}
	return rest[:nodeTokenLen]
}
