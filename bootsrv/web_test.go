package bootsrv

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/google/go-cmp/cmp"
)

// TestWebAssets: the page and its files come with a policy that runs only the server's own script
// and style; anything else under /ui/ is 404, the page takes no other method, and / leads to it.
func TestWebAssets(t *testing.T) {
	f := newFixture(t)
	h := f.server(t, nil).Handler()
	for _, tc := range []struct {
		method, target string
		code           int
		contentType    string
		body           string
	}{
		{"GET", "/ui/", 200, "text/html; charset=utf-8", `<script src="app.js" defer>`},
		{"GET", "/ui/app.js", 200, "text/javascript; charset=utf-8", "new EventSource(\"/ui/events\")"},
		{"GET", "/ui/app.css", 200, "text/css; charset=utf-8", ".state-healthy"},
		{"GET", "/ui/favicon.svg", 200, "image/svg+xml", "<svg"},
		{"GET", "/ui/index.htm", 404, "", ""},
		{"GET", "/ui/..%2fhttp.go", 404, "", ""},
		{"GET", "/ui/web/app.js", 404, "", ""},
		{"POST", "/ui/", 405, "", ""},
		{"POST", "/ui/events", 405, "", ""},
		{"GET", "/", 302, "", ""},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			w := do(t, h, tc.method, tc.target, "", "192.0.2.9:1")
			if w.Code != tc.code {
				t.Fatalf("code %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			if tc.code == 302 && w.Header().Get("Location") != "/ui/" {
				t.Errorf("Location %q, want /ui/", w.Header().Get("Location"))
			}
			if tc.code != 200 {
				return
			}
			if got := w.Header().Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			if !strings.Contains(w.Body.String(), tc.body) {
				t.Errorf("body lacks %q", tc.body)
			}
			// The ETag answers a revalidation with 304.
			req := httptest.NewRequest("GET", tc.target, nil)
			req.Header.Set("If-None-Match", w.Header().Get("ETag"))
			w2 := httptest.NewRecorder()
			h.ServeHTTP(w2, req)
			if w2.Code != http.StatusNotModified {
				t.Errorf("revalidation: %d, want 304", w2.Code)
			}
		})
	}
}

// TestWebViewLayout: nodes are grouped by board when the topology has boards, by their first
// inventory group on a flat machine with groups, else by the flat machine's switches; the counts and the curve
// follow the states, and the same states give the same bytes.
func TestWebViewLayout(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	flat := func(inv string) func(*fixture) {
		return func(f *fixture) {
			testfix.WriteFile(t, filepath.Join(f.dir, "inventory.csv"), []byte(inv))
			testfix.WriteFile(t, f.cfgPath, []byte(strings.Replace(testfix.ServeYAML("0s", `{mode: "off"}`), "topology: mini\nmapping: bcda\n", "", 1)))
		}
	}
	for _, tc := range []struct {
		name       string
		setup      func(*fixture)
		layout     string
		wantGroups []string // name:count
	}{
		{"mini boards", nil, "board", []string{"s0-b0:4", "s0-b1:4", "s0-b2:4", "s0-b3:4", "s1-b0:4", "s1-b1:4", "s1-b2:4", "s1-b3:4"}},
		{"flat with groups", flat("name,mac,groups\nn1,52:54:00:00:01:01,gpu\nn2,52:54:00:00:01:02,cpu gpu\nn3,52:54:00:00:01:03,\nn4,52:54:00:00:01:04,gpu\n"),
			"group", []string{"gpu:2", "cpu:1", "(no group):1"}},
		{"flat", flat(testfix.FlatInventoryCSV(3)), "switch", []string{"sw0:3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			s := f.server(t, nil)
			nodes := s.tracker.Nodes()
			// The first node booted healthy in 12.5 s, the second failed, the rest wait.
			nodes[0].State, nodes[0].Times = nodestate.Healthy, map[nodestate.State]time.Time{nodestate.Discover: t0, nodestate.Healthy: t0.Add(12500 * time.Millisecond)}
			nodes[1].State, nodes[1].Times, nodes[1].Error = nodestate.Failed, map[nodestate.State]time.Time{nodestate.Discover: t0.Add(time.Second), nodestate.Failed: t0.Add(3 * time.Second)}, strings.Repeat("x", 1000)
			v := buildWebView(s, nodes)
			if v.Layout != tc.layout {
				t.Errorf("layout %q, want %q", v.Layout, tc.layout)
			}
			var got []string
			for _, g := range v.Groups {
				got = append(got, fmt.Sprintf("%s:%d", g.Name, len(g.Nodes)))
			}
			if diff := cmp.Diff(tc.wantGroups, got); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			counts := map[string]int{}
			for _, c := range v.States {
				counts[c.State] = c.Nodes
			}
			if counts["healthy"] != 1 || counts["failed"] != 1 || counts["pending"] != len(nodes)-2 || len(v.States) != len(nodestate.States()) {
				t.Errorf("states %v", v.States)
			}
			want := WebCurve{Start: t0, Nodes: len(nodes), Healthy: []float64{12.5}, Failed: 1}
			if diff := cmp.Diff(want, v.Curve); diff != "" {
				t.Errorf("curve (-want +got):\n%s", diff)
			}
			for _, g := range v.Groups {
				for _, n := range g.Nodes {
					if len(n.Error) > webMaxError+3 {
						t.Errorf("node %s: error of %d bytes on the page", n.Name, len(n.Error))
					}
				}
			}
			a, _ := json.Marshal(v)
			b, _ := json.Marshal(buildWebView(s, nodes))
			if string(a) != string(b) {
				t.Errorf("the same states gave two views:\n%s\n%s", a, b)
			}
		})
	}
}

// TestMeasuredCurve: the curve starts at the earliest state any node entered in its attempt and
// counts the healthy nodes' times, sorted; pending nodes and old times do not move the start.
func TestMeasuredCurve(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	node := func(st nodestate.State, times map[nodestate.State]time.Time) nodestate.NodeStatus {
		return nodestate.NodeStatus{State: st, Times: times}
	}
	for _, tc := range []struct {
		name  string
		nodes []nodestate.NodeStatus
		want  WebCurve
	}{
		{"none", nil, WebCurve{Healthy: []float64{}}},
		{"all pending", []nodestate.NodeStatus{node(nodestate.Pending, nil)}, WebCurve{Nodes: 1, Healthy: []float64{}}},
		{"booting and healthy", []nodestate.NodeStatus{
			node(nodestate.Healthy, map[nodestate.State]time.Time{nodestate.Discover: at(2), nodestate.Healthy: at(30)}),
			node(nodestate.Kernel, map[nodestate.State]time.Time{nodestate.Discover: at(0), nodestate.Kernel: at(5)}),
			node(nodestate.Healthy, map[nodestate.State]time.Time{nodestate.NBP: at(1), nodestate.Healthy: at(10.25)}),
			node(nodestate.Pending, map[nodestate.State]time.Time{nodestate.Pending: at(-100)}),
		}, WebCurve{Start: t0, Nodes: 4, Healthy: []float64{10.25, 30}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, measuredCurve(tc.nodes)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// openStream opens /ui/events from the local address from and returns the response, its first
// event's data, and a function that closes it.
func openStream(t *testing.T, url, from string) (*http.Response, string, func()) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/ui/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	closer := func() { cancel(); resp.Body.Close() }
	if resp.StatusCode != http.StatusOK {
		var e bootapi.ErrorBody
		json.NewDecoder(resp.Body).Decode(&e)
		return resp, e.Error, closer
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return resp, data, closer
		}
	}
	closer()
	t.Fatalf("stream from %s ended before an event: %v", from, sc.Err())
	return nil, "", nil
}

// TestWebEventsWatchers: a stream starts with the whole view; one address gets
// maxWatchersPerAddr streams and the server maxWatchers, more are answered 503 saying why, and a
// closed stream frees its slot.
func TestWebEventsWatchers(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(f.server(t, nil).Handler())
	defer srv.Close()
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	addrs := maxWatchers / maxWatchersPerAddr
	for i := range addrs {
		for range maxWatchersPerAddr {
			resp, data, closer := openStream(t, srv.URL, fmt.Sprintf("127.0.0.%d", i+2))
			closers = append(closers, closer)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("stream %d from 127.0.0.%d: %d %s", len(closers), i+2, resp.StatusCode, data)
			}
			var ev WebEvent
			if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.View == nil || ev.At.IsZero() {
				t.Fatalf("first event %q: %v", data, err)
			}
			if len(ev.View.Groups) != 8 || ev.View.Server != "bs0" {
				t.Fatalf("first event's view: %+v", ev.View)
			}
		}
	}
	// A full address, then a full server.
	resp, msg, closer := openStream(t, srv.URL, "127.0.0.2")
	closer()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(msg, "127.0.0.2 has 4 pages watching") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("fifth stream of one address: %d %q", resp.StatusCode, msg)
	}
	resp, msg, closer = openStream(t, srv.URL, fmt.Sprintf("127.0.0.%d", addrs+2))
	closer()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(msg, "32 pages are watching") {
		t.Errorf("stream over the server's ceiling: %d %q", resp.StatusCode, msg)
	}
	// Closing a stream frees its slot once the server sees it gone (its next write fails): wait.
	closers[0]()
	closers = closers[1:]
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, msg, closer = openStream(t, srv.URL, "127.0.0.2")
		closers = append(closers, closer)
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the closed stream's slot never came free: %d %q", resp.StatusCode, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestWebEventsFollow: a stream sends a new view when a node changes state, and the shutdown of
// the HTTP server ends the stream at once rather than holding the shutdown.
func TestWebEventsFollow(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, nil)
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Start()
	defer srv.Close()
	// A HEAD gets the headers and is over: more of them than one address has slots leave the GET
	// below its slot.
	for range maxWatchersPerAddr + 1 {
		head, err := (&http.Client{Timeout: 20 * time.Second}).Head(srv.URL + "/ui/events")
		if err != nil {
			t.Fatalf("HEAD: %v", err)
		}
		head.Body.Close()
		if head.StatusCode != 200 || head.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("HEAD: %d %q", head.StatusCode, head.Header.Get("Content-Type"))
		}
	}
	resp, err := http.Get(srv.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan WebEvent, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev WebEvent
				if json.Unmarshal([]byte(data), &ev) == nil {
					events <- ev
				}
			}
		}
	}()
	state := func(ev WebEvent, name string) string {
		for _, g := range ev.View.Groups {
			for _, n := range g.Nodes {
				if n.Name == name {
					return n.State
				}
			}
		}
		return ""
	}
	next := func(what string) WebEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("%s: the stream ended", what)
			}
			return ev
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no event in 30 s", what)
		}
		return WebEvent{}
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET after the HEADs: %d", resp.StatusCode)
	}
	if ev := next("first"); ev.View == nil || state(ev, "node03") != "pending" {
		t.Fatalf("first event: %+v", ev)
	}
	if _, _, err := s.tracker.Observe("node03", nodestate.EvDiscover, "test"); err != nil {
		t.Fatal(err)
	}
	for ev := next("after discover"); ev.View == nil || state(ev, "node03") != "discover"; ev = next("after discover") {
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a stream open: %v", err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("shutdown took %v with a stream open", took)
	}
}

// TestWebEventsDirect: the events handler called without an HTTP server (as FuzzHTTPAPI calls the
// handler) answers its first event and returns, rather than stream to no connection for minutes;
// a HEAD gets the headers alone.
func TestWebEventsDirect(t *testing.T) {
	f := newFixture(t)
	h := f.server(t, nil).Handler()
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- do(t, h, "GET", "/ui/events", "", "192.0.2.9:1") }()
	if w := do(t, h, "HEAD", "/ui/events", "", "192.0.2.9:1"); w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("HEAD: %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	select {
	case w := <-done:
		body := w.Body.String()
		if w.Code != 200 || !strings.HasPrefix(body, "retry: 3000\n\ndata: {\"at\":") || strings.Count(body, "data: ") != 1 || !strings.HasSuffix(body, "}\n\n") {
			t.Errorf("%d %q", w.Code, body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler did not return in 30 s")
	}
}

// BenchmarkWebView builds and encodes the page's view of a flat machine of 4096 nodes, a quarter
// of them healthy: the work one snapshot costs (once per second for all watchers) and the size
// of an event (sent to each watcher at most once per second).
func BenchmarkWebView(b *testing.B) {
	const n = 4096
	f := newFixture(b)
	var inv strings.Builder
	inv.WriteString("name,mac\n")
	for i := range n {
		fmt.Fprintf(&inv, "node%05d,52:54:00:%02x:%02x:%02x\n", i, i>>16, (i>>8)&0xff, i&0xff)
	}
	testfix.WriteFile(b, filepath.Join(f.dir, "inventory.csv"), []byte(inv.String()))
	testfix.WriteFile(b, f.cfgPath, []byte(strings.Replace(testfix.ServeYAML("0s", `{mode: "off"}`), "topology: mini\nmapping: bcda\n", "", 1)))
	s := f.server(b, nil)
	nodes := s.tracker.Nodes()
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for i := range nodes {
		if i%4 == 0 {
			nodes[i].State, nodes[i].Since, nodes[i].Attempt = nodestate.Healthy, t0.Add(time.Duration(i)*time.Millisecond), 1
			nodes[i].Times = map[nodestate.State]time.Time{nodestate.Discover: t0, nodestate.Healthy: nodes[i].Since}
		}
	}
	var size int
	b.ReportAllocs()
	for b.Loop() {
		v, err := json.Marshal(buildWebView(s, nodes))
		if err != nil {
			b.Fatal(err)
		}
		size = len(v)
	}
	b.ReportMetric(float64(size), "bytes/event")
	b.ReportMetric(float64(size)/n, "bytes/node")
}
