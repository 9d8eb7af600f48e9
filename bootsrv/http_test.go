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

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/google/go-cmp/cmp"
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

// handlerTest is TestHTTPHandlers' server: the fixture's files and node00's token. Its steps run
// in order, each starting from the states the steps before it left.
type handlerTest struct {
	f   *fixture
	s   *Server
	h   http.Handler
	tok string // node00's
}

// node00Addr is node00's address (the fixture's inventory gives it 127.0.0.1).
const node00Addr = "127.0.0.1:40000"

// TestHTTPHandlers boots node00 through the HTTP handlers (script, kernel, initrd, health
// reports) and checks on the way what they refuse, the status API, the metrics and liveness.
func TestHTTPHandlers(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, func(c *bootconfig.Config) { c.HTTP.URL = "http://10.9.9.9:8080" })
	ht := &handlerTest{f: f, s: s, h: s.Handler(), tok: attemptToken(t, s, "node00")}
	if len(ht.tok) != nodeTokenLen {
		t.Fatalf("node00's token %q", ht.tok)
	}
	ht.script(t)
	ht.scriptRefusals(t)
	ht.kernelAndInitrd(t)
	ht.bootRefusals(t)
	ht.healthReports(t)
	ht.statusAPI(t)
	ht.failedReport(t)
	ht.statusQueries(t)
	ht.metricsAndLiveness(t)
}

// codeCase is a request without a body and the status code it must get.
type codeCase struct {
	what, method, target, remote string
	code                         int
}

// wantCodes sends each request and checks its status code.
func (ht *handlerTest) wantCodes(t *testing.T, cases []codeCase) {
	t.Helper()
	for _, c := range cases {
		if w := do(t, ht.h, c.method, c.target, "", c.remote); w.Code != c.code {
			t.Errorf("%s: %d, want %d", c.what, w.Code, c.code)
		}
	}
}

// wantState checks the state of a node after what happened to it.
func (ht *handlerTest) wantState(t *testing.T, node string, want nodestate.State, after string) {
	t.Helper()
	if st := nodeAt(t, ht.s, node).State; st != want {
		t.Errorf("%s after %s: %v, want %v", node, after, st, want)
	}
}

// fetch GETs target from node00's address, with a Range header unless byteRange is empty, and
// stops the test unless the answer has the status code.
func (ht *handlerTest) fetch(t *testing.T, what, target, byteRange string, code int) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	req.RemoteAddr = node00Addr
	if byteRange != "" {
		req.Header.Set("Range", byteRange)
	}
	w := httptest.NewRecorder()
	ht.h.ServeHTTP(w, req)
	if w.Code != code {
		t.Fatalf("%s: %d, want %d", what, w.Code, code)
	}
	return w
}

// script fetches node00's iPXE script by MAC, in both notations: it names the kernel, the initrd
// and the health URL, each with node00's token, and the node moves to nbp.
func (ht *handlerTest) script(t *testing.T) {
	const url = "http://10.9.9.9:8080"
	for _, mac := range []string{"52:54:00:00:00:00", "52-54-00-00-00-00"} {
		w := do(t, ht.h, "GET", "/ipxe/"+mac, "", node00Addr)
		if w.Code != 200 {
			t.Fatalf("GET /ipxe/%s: %d %s", mac, w.Code, w.Body)
		}
		for _, want := range []string{"#!ipxe", "kernel " + url + "/boot/default/vmlinuz?token=" + ht.tok + " ", "bootfabric.node=node00",
			"bootfabric.health=" + url + "/api/v1/nodes/node00/health?token=" + ht.tok, "initrd " + url + "/boot/default/initrd.img?token=" + ht.tok + " "} {
			if !strings.Contains(w.Body.String(), want) {
				t.Errorf("script lacks %q:\n%s", want, w.Body)
			}
		}
	}
	ht.wantState(t, "node00", nodestate.NBP, "its script")
}

// scriptRefusals: node00's script is not given to another address (nor its token), an unknown
// MAC has none and a malformed one is a bad request.
func (ht *handlerTest) scriptRefusals(t *testing.T) {
	if w := do(t, ht.h, "GET", "/ipxe/52:54:00:00:00:00", "", "192.0.2.1:1"); w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), ht.tok) {
		t.Errorf("node00's script from another address: %d %s", w.Code, w.Body)
	}
	ht.wantCodes(t, []codeCase{
		{"unknown MAC", "GET", "/ipxe/52:54:00:00:00:ff", "", http.StatusNotFound},
		{"bad MAC", "GET", "/ipxe/nonsense", "", http.StatusBadRequest},
	})
}

// kernelAndInitrd fetches the kernel whole, without then with the token, and the initrd, a range
// then whole: the state follows the node with the request's address and token, and only a whole
// delivery counts. HEAD gives the kernel's length.
func (ht *handlerTest) kernelAndInitrd(t *testing.T) {
	ht.fetch(t, "kernel without token", "/boot/default/vmlinuz", "", http.StatusOK)
	ht.wantState(t, "node00", nodestate.NBP, "a kernel download without the token")
	w := ht.fetch(t, "kernel", "/boot/default/vmlinuz?token="+ht.tok, "", http.StatusOK)
	mustEqualBytes(t, "kernel", w.Body.Bytes(), ht.f.kernel)
	ht.wantState(t, "node00", nodestate.Kernel, "the kernel")
	w = ht.fetch(t, "initrd range", "/boot/default/initrd.img?token="+ht.tok, "bytes=100-199", http.StatusPartialContent)
	mustEqualBytes(t, "initrd range", w.Body.Bytes(), ht.f.initrd[100:200])
	ht.wantState(t, "node00", nodestate.Kernel, "an initrd range")
	ht.fetch(t, "initrd", "/boot/default/initrd.img?token="+ht.tok, "", http.StatusOK)
	ht.wantState(t, "node00", nodestate.Initrd, "the initrd")
	if w := do(t, ht.h, "HEAD", "/boot/default/vmlinuz", "", node00Addr); w.Code != 200 || w.Header().Get("Content-Length") != fmt.Sprint(len(ht.f.kernel)) {
		t.Errorf("HEAD: %d %v", w.Code, w.Header())
	}
}

// bootRefusals: naming another node (the old ?node=) from another address moves nothing; missing
// files and profiles and a path out of the store are not found; the iPXE binaries are served.
func (ht *handlerTest) bootRefusals(t *testing.T) {
	do(t, ht.h, "GET", "/boot/default/vmlinuz?node=node01&token="+nodeToken(ht.s, "node01"), "", "192.0.2.1:1")
	ht.wantState(t, "node01", nodestate.Pending, "a kernel fetched from another address")
	ht.wantCodes(t, []codeCase{
		{"missing file", "GET", "/boot/default/missing", "", http.StatusNotFound},
		{"missing profile", "GET", "/boot/nope/vmlinuz", "", http.StatusNotFound},
		{"escape", "GET", "/boot/default/..%2f..%2fmanifest.json", "", http.StatusNotFound},
	})
	if w := do(t, ht.h, "GET", "/ipxe/bin/ipxe.efi", "", ""); w.Code != 200 || w.Body.Len() != len(ht.f.nbp) {
		t.Errorf("ipxe.efi over HTTP: %d, %d bytes", w.Code, w.Body.Len())
	}
}

// healthReports posts health reports with node00's token from its address: one is taken (node00
// is healthy), the others are refused with a JSON error naming why (node02 stays pending).
func (ht *handlerTest) healthReports(t *testing.T) {
	for _, tc := range []struct {
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
		{"too large", "node00", `{"status":"ok","details":"` + strings.Repeat("x", bootconfig.DefaultMaxReportBytes) + `"}`, 413, "larger than"},
		{"other node", "node02", `{"status":"failed","details":{"disk":"missing"}}`, 401, "token"},
	} {
		w := do(t, ht.h, "POST", "/api/v1/nodes/"+tc.node+"/health?token="+ht.tok, tc.body, node00Addr)
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.wantErr) {
			t.Errorf("%s: %d %s; want %d with %q", tc.name, w.Code, w.Body, tc.code, tc.wantErr)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: content type %q", tc.name, ct)
		}
	}
	if n := nodeAt(t, ht.s, "node00"); n.State != nodestate.Healthy || n.Health == nil || string(n.Health.Details) != `"all good"` {
		t.Errorf("node00 after health: %+v", n)
	}
	if n := nodeAt(t, ht.s, "node02"); n.State != nodestate.Pending {
		t.Errorf("node02 after a report with node00's token: %+v", n)
	}
}

// statusAPI lists the nodes, all (node00 with its timestamps) then the healthy ones.
func (ht *handlerTest) statusAPI(t *testing.T) {
	w := do(t, ht.h, "GET", "/api/v1/nodes", "", "")
	var nodes bootapi.NodesResponse
	if err := json.Unmarshal(w.Body.Bytes(), &nodes); err != nil || len(nodes.Nodes) != 32 || nodes.Server != "bs0" {
		t.Fatalf("nodes: %v %d %s", err, len(nodes.Nodes), w.Body.String()[:200])
	}
	if nodes.Nodes[0].Times[nodestate.Healthy].IsZero() || nodes.Nodes[0].Times[nodestate.NBP].IsZero() {
		t.Errorf("node00 timestamps: %v", nodes.Nodes[0].Times)
	}
	w = do(t, ht.h, "GET", "/api/v1/nodes?state=healthy", "", "")
	var healthy bootapi.NodesResponse
	if err := json.Unmarshal(w.Body.Bytes(), &healthy); err != nil {
		t.Fatalf("healthy nodes: %v %s", err, w.Body)
	}
	if len(healthy.Nodes) != 1 || healthy.Nodes[0].Name != "node00" {
		t.Errorf("healthy nodes: %+v", healthy.Nodes)
	}
}

// failedReport: the attempt reported already takes no other report (the same one again, from a
// node whose first answer was lost, is answered as the first was and changes nothing); in the next
// attempt, a report can fail the node and the state follows.
func (ht *handlerTest) failedReport(t *testing.T) {
	if w := do(t, ht.h, "POST", "/api/v1/nodes/node00/health?token="+ht.tok, `{"status":"ok"}`, node00Addr); w.Code != http.StatusOK {
		t.Errorf("the same report again: %d %s, want 200", w.Code, w.Body)
	}
	if n := nodeAt(t, ht.s, "node00"); n.State != nodestate.Healthy || string(n.Health.Details) != `"all good"` {
		t.Errorf("node00 after the same report again: %+v", n)
	}
	if w := do(t, ht.h, "POST", "/api/v1/nodes/node00/health?token="+ht.tok, `{"status":"failed"}`, node00Addr); w.Code != http.StatusConflict {
		t.Errorf("second report of one attempt: %d %s, want 409", w.Code, w.Body)
	}
	ht.s.tracker.Observe("node00", nodestate.EvRebootDiscover, "test: the next boot attempt")
	ht.tok = nodeToken(ht.s, "node00")
	if w := do(t, ht.h, "POST", "/api/v1/nodes/node00/health?token="+ht.tok, `{"status":"failed","details":{"disk":"missing"}}`, node00Addr); w.Code != 200 {
		t.Fatalf("failed report: %d %s", w.Code, w.Body)
	}
	if n := nodeAt(t, ht.s, "node00"); n.State != nodestate.Failed || !strings.Contains(n.Error, "missing") {
		t.Errorf("node00 after failed report: %+v", n)
	}
}

// statusQueries: a bad state filter is refused, one node is given by name, and the summary counts
// node00 failed and the others pending.
func (ht *handlerTest) statusQueries(t *testing.T) {
	ht.wantCodes(t, []codeCase{{"bad state filter", "GET", "/api/v1/nodes?state=sleepy", "", http.StatusBadRequest}})
	if w := do(t, ht.h, "GET", "/api/v1/nodes/node01", "", ""); w.Code != 200 || !strings.Contains(w.Body.String(), `"state": "pending"`) {
		t.Errorf("one node: %d %s", w.Code, w.Body)
	}
	w := do(t, ht.h, "GET", "/api/v1/summary", "", "")
	var sum nodestate.Summary
	if err := json.Unmarshal(w.Body.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Nodes != 32 || sum.States[nodestate.Failed] != 1 || sum.States[nodestate.Pending] != 31 || sum.Health.Status != nodestate.HealthDegraded {
		t.Errorf("summary: %+v", sum)
	}
}

// metricsAndLiveness: the metrics count what the steps before did; /healthz answers; the API
// refuses a method it does not have.
func (ht *handlerTest) metricsAndLiveness(t *testing.T) {
	w := do(t, ht.h, "GET", "/metrics", "", "")
	for _, want := range []string{`bootfabric_boot_nodes{state="failed"} 1`, `bootfabric_http_requests_total{code="200",route="/boot/{profile}/{file}"}`,
		`bootfabric_boot_health_reports_total{status="ok"} 1`, "bootfabric_tftp_active_transfers", "go_goroutines"} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if w := do(t, ht.h, "GET", "/healthz", "", ""); w.Code != 200 || w.Body.String() != "ok\n" {
		t.Errorf("healthz: %d %q", w.Code, w.Body)
	}
	ht.wantCodes(t, []codeCase{{"DELETE", "DELETE", "/api/v1/nodes", "", http.StatusMethodNotAllowed}})
}

func TestHealthMisdirected(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, func(c *bootconfig.Config) {
		c.Servers = append(c.Servers, bootconfig.ServerEntry{Name: "other", Address: "127.0.0.2"})
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
	cfg, err := bootconfig.LoadConfig(fx.cfgPath)
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(cfg, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := s.Handler()
	target := "/api/v1/nodes/node00/health?token=" + attemptToken(f, s, "node00")
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
	inv := strings.Replace(testfix.MiniInventoryCSV(t), "10.0.0.11,", ",", 1) // node01 has no address
	if err := os.WriteFile(filepath.Join(f.dir, "inventory.csv"), []byte(inv), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.server(t, func(c *bootconfig.Config) { c.HTTP.URL = "http://10.9.9.9:8080"; c.DHCP.Mode = dhcpd.ModeProxy })
	h := s.Handler()
	tok := s.nodes.addressToken("node01")
	s.tracker.Observe("node01", nodestate.EvDiscover, "proxy DHCP exchange") // as the proxyDHCP answer would
	if w := do(t, h, "GET", "/ipxe/52:54:00:00:00:01", "", "192.0.2.66:1000"); w.Code != http.StatusUnauthorized {
		t.Fatalf("script without the token: %d", w.Code)
	}
	if w := do(t, h, "GET", "/ipxe/52:54:00:00:00:01?token="+tok, "", "192.0.2.77:1000"); w.Code != 200 {
		t.Fatalf("script: %d", w.Code)
	}
	do(t, h, "GET", "/boot/default/vmlinuz?token="+nodeToken(s, "node01"), "", "192.0.2.77:1001")
	if n, _ := s.tracker.Node("node01"); n.State != nodestate.Kernel || n.IP != "192.0.2.77" {
		t.Errorf("node01: %v at %q", n.State, n.IP)
	}
}

// TestNodesInventory: with ?inventory=1 the nodes API lists every inventory node with its owner,
// the other server's nodes included, while nodes lists only this server's.
func TestNodesInventory(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, func(c *bootconfig.Config) {
		c.Servers = []bootconfig.ServerEntry{{Name: "bs0", Address: "10.0.0.1"}, {Name: "bs1", Address: "10.0.0.2"}}
	})
	h := s.Handler()
	var plain, full bootapi.NodesResponse
	if err := json.Unmarshal(do(t, h, "GET", "/api/v1/nodes", "", "").Body.Bytes(), &plain); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(do(t, h, "GET", "/api/v1/nodes?inventory=1", "", "").Body.Bytes(), &full); err != nil {
		t.Fatal(err)
	}
	if plain.Inventory != nil || len(full.Inventory) != 32 {
		t.Fatalf("inventory without asking: %d entries; asked: %d, want 32", len(plain.Inventory), len(full.Inventory))
	}
	owners := map[string]int{}
	for _, e := range full.Inventory {
		owners[e.Owner]++
	}
	if d := cmp.Diff(map[string]int{"bs0": len(full.Nodes), "bs1": 32 - len(full.Nodes)}, owners); d != "" || len(full.Nodes) == 32 {
		t.Errorf("owners (-want +got):\n%s (bs0 tracks %d)", d, len(full.Nodes))
	}
	if d := cmp.Diff(bootapi.InventoryEntry{Name: "node00", MAC: "52:54:00:00:00:00", IP: "127.0.0.1", Position: "s0-b0-n0", Owner: "bs0"}, full.Inventory[0]); d != "" {
		t.Errorf("node00 (-want +got):\n%s", d)
	}
}
