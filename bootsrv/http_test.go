package bootsrv

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func do(t *testing.T, h http.Handler, method, target, body, remote string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	if remote != "" {
		req.RemoteAddr = remote
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestHTTPHandlers(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, func(c *Config) { c.HTTP.URL = "http://10.9.9.9:8080" })
	h := s.Handler()
	node := func(name string) NodeStatus {
		n, ok := s.tracker.Node(name)
		if !ok {
			t.Fatalf("no node %s", name)
		}
		return n
	}
	const local = "127.0.0.1:40000" // node00's address
	tok := s.nodes.token("node00")
	if len(tok) != nodeTokenLen {
		t.Fatalf("node00's token %q", tok)
	}

	// iPXE script of node00 by MAC, in both notations.
	for _, mac := range []string{"52:54:00:00:00:00", "52-54-00-00-00-00"} {
		w := do(t, h, "GET", "/ipxe/"+mac, "", local)
		if w.Code != 200 {
			t.Fatalf("GET /ipxe/%s: %d %s", mac, w.Code, w.Body)
		}
		for _, want := range []string{"#!ipxe", "kernel http://10.9.9.9:8080/boot/default/vmlinuz?token=" + tok + " ", "bootfabric.node=node00",
			"bootfabric.health=http://10.9.9.9:8080/api/v1/nodes/node00/health?token=" + tok, "initrd http://10.9.9.9:8080/boot/default/initrd.img?token=" + tok + " "} {
			if !strings.Contains(w.Body.String(), want) {
				t.Errorf("script lacks %q:\n%s", want, w.Body)
			}
		}
	}
	if st := node("node00").State; st != NBP {
		t.Errorf("after script: %v, want nbp", st)
	}
	if w := do(t, h, "GET", "/ipxe/52:54:00:00:00:00", "", "192.0.2.1:1"); w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), tok) {
		t.Errorf("node00's script from another address: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/ipxe/52:54:00:00:00:ff", "", ""); w.Code != 404 {
		t.Errorf("unknown MAC: %d", w.Code)
	}
	if w := do(t, h, "GET", "/ipxe/nonsense", "", ""); w.Code != 400 {
		t.Errorf("bad MAC: %d", w.Code)
	}

	// Kernel: whole, then a range; the state follows the node with the request's address and
	// token, and only a whole delivery counts.
	w := do(t, h, "GET", "/boot/default/vmlinuz", "", local)
	if w.Code != 200 {
		t.Fatalf("kernel without token: %d", w.Code)
	}
	if st := node("node00").State; st != NBP {
		t.Errorf("after a kernel download without the token: %v", st)
	}
	w = do(t, h, "GET", "/boot/default/vmlinuz?token="+tok, "", local)
	if w.Code != 200 {
		t.Fatalf("kernel: %d", w.Code)
	}
	mustEqualBytes(t, "kernel", w.Body.Bytes(), f.kernel)
	if st := node("node00").State; st != Kernel {
		t.Errorf("after kernel: %v", st)
	}
	req := httptest.NewRequest("GET", "/boot/default/initrd.img?token="+tok, nil)
	req.Header.Set("Range", "bytes=100-199")
	req.RemoteAddr = local
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, req)
	if rw.Code != http.StatusPartialContent {
		t.Fatalf("range: %d", rw.Code)
	}
	mustEqualBytes(t, "initrd range", rw.Body.Bytes(), f.initrd[100:200])
	if st := node("node00").State; st != Kernel {
		t.Errorf("after an initrd range: %v, want kernel still", st)
	}
	if w := do(t, h, "GET", "/boot/default/initrd.img?token="+tok, "", local); w.Code != 200 {
		t.Fatalf("initrd: %d", w.Code)
	}
	if st := node("node00").State; st != Initrd {
		t.Errorf("after initrd: %v", st)
	}
	if w := do(t, h, "HEAD", "/boot/default/vmlinuz", "", local); w.Code != 200 || w.Header().Get("Content-Length") != fmt.Sprint(len(f.kernel)) {
		t.Errorf("HEAD: %d %v", w.Code, w.Header())
	}
	// Naming another node (the old ?node=) from another address moves nothing.
	do(t, h, "GET", "/boot/default/vmlinuz?node=node01&token="+s.nodes.token("node01"), "", "192.0.2.1:1")
	if st := node("node01").State; st != Pending {
		t.Errorf("node01 after a kernel fetched from another address: %v", st)
	}
	if w := do(t, h, "GET", "/boot/default/missing", "", ""); w.Code != 404 {
		t.Errorf("missing file: %d", w.Code)
	}
	if w := do(t, h, "GET", "/boot/nope/vmlinuz", "", ""); w.Code != 404 {
		t.Errorf("missing profile: %d", w.Code)
	}
	if w := do(t, h, "GET", "/boot/default/..%2f..%2fmanifest.json", "", ""); w.Code != 404 {
		t.Errorf("escape: %d", w.Code)
	}
	if w := do(t, h, "GET", "/ipxe/bin/ipxe.efi", "", ""); w.Code != 200 || w.Body.Len() != len(f.nbp) {
		t.Errorf("ipxe.efi over HTTP: %d, %d bytes", w.Code, w.Body.Len())
	}

	// Health reports.
	healthTests := []struct {
		name, node, body string
		code             int
		wantErr          string
	}{
		{"ok", "node00", `{"status":"ok","details":"all good"}`, 200, ""},
		{"unknown node", "node99", `{"status":"ok"}`, 404, `unknown node \"node99\"`},
		{"empty body", "node00", ``, 400, "empty body"},
		{"not json", "node00", `status=ok`, 400, "malformed body"},
		{"unknown field", "node00", `{"status":"ok","colour":1}`, 400, `unknown field \"colour\"`},
		{"bad status", "node00", `{"status":"fine"}`, 400, `status \"fine\": want \"ok\" or \"failed\"`},
		{"two values", "node00", `{"status":"ok"}{"status":"ok"}`, 400, "more than one JSON value"},
		{"too large", "node00", `{"status":"ok","details":"` + strings.Repeat("x", DefaultMaxReportBytes) + `"}`, 413, "larger than"},
		{"other node", "node02", `{"status":"failed","details":{"disk":"missing"}}`, 401, "token"},
	}
	for _, tc := range healthTests {
		w := do(t, h, "POST", "/api/v1/nodes/"+tc.node+"/health?token="+tok, tc.body, local)
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.wantErr) {
			t.Errorf("%s: %d %s; want %d with %q", tc.name, w.Code, w.Body, tc.code, tc.wantErr)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: content type %q", tc.name, ct)
		}
	}
	if n := node("node00"); n.State != Healthy || n.Health == nil || string(n.Health.Details) != `"all good"` {
		t.Errorf("node00 after health: %+v", n)
	}
	if n := node("node02"); n.State != Pending {
		t.Errorf("node02 after a report with node00's token: %+v", n)
	}

	// Status API.
	w = do(t, h, "GET", "/api/v1/nodes", "", "")
	var nodes NodesResponse
	if err := json.Unmarshal(w.Body.Bytes(), &nodes); err != nil || len(nodes.Nodes) != 32 || nodes.Server != "bs0" {
		t.Fatalf("nodes: %v %d %s", err, len(nodes.Nodes), w.Body.String()[:200])
	}
	if nodes.Nodes[0].Times[Healthy].IsZero() || nodes.Nodes[0].Times[NBP].IsZero() {
		t.Errorf("node00 timestamps: %v", nodes.Nodes[0].Times)
	}
	w = do(t, h, "GET", "/api/v1/nodes?state=healthy", "", "")
	json.Unmarshal(w.Body.Bytes(), &nodes)
	if len(nodes.Nodes) != 1 || nodes.Nodes[0].Name != "node00" {
		t.Errorf("healthy nodes: %+v", nodes.Nodes)
	}
	// A report from a booted node can fail it; the state follows.
	if w := do(t, h, "POST", "/api/v1/nodes/node00/health?token="+tok, `{"status":"failed","details":{"disk":"missing"}}`, local); w.Code != 200 {
		t.Fatalf("failed report: %d %s", w.Code, w.Body)
	}
	if n := node("node00"); n.State != Failed || !strings.Contains(n.Error, "missing") {
		t.Errorf("node00 after failed report: %+v", n)
	}
	if w := do(t, h, "GET", "/api/v1/nodes?state=sleepy", "", ""); w.Code != 400 {
		t.Errorf("bad state filter: %d", w.Code)
	}
	if w := do(t, h, "GET", "/api/v1/nodes/node01", "", ""); w.Code != 200 || !strings.Contains(w.Body.String(), `"state": "pending"`) {
		t.Errorf("one node: %d %s", w.Code, w.Body)
	}
	w = do(t, h, "GET", "/api/v1/summary", "", "")
	var sum Summary
	if err := json.Unmarshal(w.Body.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Nodes != 32 || sum.States[Failed] != 1 || sum.States[Pending] != 31 || sum.Health.Status != HealthDegraded {
		t.Errorf("summary: %+v", sum)
	}

	// Metrics and liveness.
	w = do(t, h, "GET", "/metrics", "", "")
	for _, want := range []string{`bootfabric_boot_nodes{state="failed"} 1`, `bootfabric_http_requests_total{code="200",route="/boot/{profile}/{file}"}`,
		`bootfabric_boot_health_reports_total{status="ok"} 1`, "bootfabric_tftp_active_transfers", "go_goroutines"} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if w := do(t, h, "GET", "/healthz", "", ""); w.Code != 200 || w.Body.String() != "ok\n" {
		t.Errorf("healthz: %d %q", w.Code, w.Body)
	}
	if w := do(t, h, "DELETE", "/api/v1/nodes", "", ""); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d", w.Code)
	}
}

func TestHealthMisdirected(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, func(c *Config) {
		c.Servers = append(c.Servers, ServerEntry{Name: "other", Address: "127.0.0.2"})
	})
	// bcda over 2 servers: node04 (s0-b1-n0) is the other server's.
	w := do(t, s.Handler(), "POST", "/api/v1/nodes/node04/health", `{"status":"ok"}`, "")
	// (The misdirection is said before the token is checked: node04's token is not this server's
	// to check, and the answer names only what the configuration already tells every server.)
	if w.Code != http.StatusMisdirectedRequest || !strings.Contains(w.Body.String(), "other (127.0.0.2)") {
		t.Errorf("misdirected: %d %s", w.Code, w.Body)
	}
	if w := do(t, s.Handler(), "GET", "/ipxe/52:54:00:00:00:04", "", ""); w.Code != 404 {
		t.Errorf("script of the other server's node: %d", w.Code)
	}
}

// FuzzHealthReport posts arbitrary bodies to the health endpoint: the answer is 200 or a 4xx with
// a JSON error, never a panic or a 5xx.
func FuzzHealthReport(f *testing.F) {
	f.Add(`{"status":"ok"}`)
	f.Add(`{"status":"failed","details":{"disk":"sda missing"}}`)
	f.Add(`{"status":"ok","details":"x"} trailing`)
	fx := newFixture(f)
	cfg, err := LoadConfig(fx.cfgPath)
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(cfg, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := s.Handler()
	target := "/api/v1/nodes/node00/health?token=" + s.nodes.token("node00")
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", target, strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:40000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 && (w.Code < 400 || w.Code >= 500) {
			t.Fatalf("%q: status %d", body, w.Code)
		}
		var v map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatalf("%q: answer is not JSON: %s", body, w.Body)
		}
	})
}

// TestLearnIPFromScript: a node without an inventory address (proxy mode) is known by the address
// it fetched its script from with its token (the token of its DHCP boot file URL).
func TestLearnIPFromScript(t *testing.T) {
	f := newFixture(t)
	inv := strings.Replace(miniInventoryCSV(t), "10.0.0.11,", ",", 1) // node01 has no address
	if err := os.WriteFile(filepath.Join(f.dir, "inventory.csv"), []byte(inv), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.server(t, func(c *Config) { c.HTTP.URL = "http://10.9.9.9:8080"; c.DHCP.Mode = DHCPProxy })
	h := s.Handler()
	tok := s.nodes.token("node01")
	if w := do(t, h, "GET", "/ipxe/52:54:00:00:00:01", "", "192.0.2.66:1000"); w.Code != http.StatusUnauthorized {
		t.Fatalf("script without the token: %d", w.Code)
	}
	if w := do(t, h, "GET", "/ipxe/52:54:00:00:00:01?token="+tok, "", "192.0.2.77:1000"); w.Code != 200 {
		t.Fatalf("script: %d", w.Code)
	}
	do(t, h, "GET", "/boot/default/vmlinuz?token="+tok, "", "192.0.2.77:1001")
	if n, _ := s.tracker.Node("node01"); n.State != Kernel || n.IP != "192.0.2.77" {
		t.Errorf("node01: %v at %q", n.State, n.IP)
	}
}
