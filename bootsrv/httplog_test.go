package bootsrv

import (
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestHTTPLogFields: every line the HTTP endpoint logs about a request (the debug access line and
// the handlers' own lines) carries the server, remote address, method and path, and the node and
// MAC when the request shows whose it is: by the MAC or name in the path, or by the remote address.
func TestHTTPLogFields(t *testing.T) {
	f := newFixture(t)
	core, logs := observer.New(zapcore.DebugLevel)
	s, err := New(f.config(t, func(c *bootconfig.Config) { c.HTTP.URL = "http://10.9.9.9:8080" }), Options{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h := s.Handler()
	node00 := map[string]any{"node": "node00", "mac": "52:54:00:00:00:00"}
	node01 := map[string]any{"node": "node01", "mac": "52:54:00:00:00:01"}
	for _, tc := range []struct {
		method, target, remote string
		code                   int
		who                    map[string]any // node and mac, nil: neither
		lines                  []string       // the request's lines besides "HTTP request"
	}{
		{"GET", "/ipxe/52-54-00-00-00-00", "127.0.0.1:40000", 200, node00, nil},
		{"GET", "/ipxe/52:54:00:00:00:01", "127.0.0.1:40001", 403, node01, []string{"iPXE script refused"}},
		{"GET", "/ipxe/02:00:00:00:00:99", "10.1.1.1:5000", 404, map[string]any{"mac": "02:00:00:00:00:99"}, nil},
		{"GET", "/boot/default/vmlinuz?token=wrong", "127.0.0.1:40002", 200, node00, []string{"download without the node's token: not counted"}},
		{"GET", "/boot/default/nosuch", "10.0.0.11:7000", 404, node01, nil},
		{"POST", "/api/v1/nodes/node01/health", "10.0.0.11:7001", 401, node01, []string{"health report refused"}},
		{"POST", "/api/v1/nodes/node00/reboot", "10.1.1.1:5001", 403, node00, []string{"operator request refused"}},
		{"GET", "/api/v1/nodes", "10.1.1.1:5002", 200, nil, nil},
		{"GET", "/healthz", "[::1]:5003", 200, nil, nil},
	} {
		logs.TakeAll()
		w := do(t, h, tc.method, tc.target, "", tc.remote)
		if w.Code != tc.code {
			t.Errorf("%s %s from %s: %d, want %d: %s", tc.method, tc.target, tc.remote, w.Code, tc.code, w.Body)
		}
		want := map[string]any{"server": "bs0", "remote": tc.remote, "method": tc.method, "path": tc.target}
		if i := len(tc.target) - len("?token=wrong"); i > 0 && tc.target[i:] == "?token=wrong" {
			want["path"] = tc.target[:i] // the path, never the token
		}
		for k, v := range tc.who {
			want[k] = v
		}
		var got []string
		for _, e := range logs.AllUntimed() {
			if e.LoggerName != "" {
				continue // the tracker's own lines (state transitions) are about the node, not a request
			}
			got = append(got, e.Message)
			ctx := e.ContextMap()
			for _, k := range []string{"code", "bytes", "took", "error", "detail", "event", "state", "file"} {
				delete(ctx, k)
			}
			if d := cmp.Diff(want, ctx); d != "" {
				t.Errorf("%s %s from %s: line %q fields (-want +got):\n%s", tc.method, tc.target, tc.remote, e.Message, d)
			}
		}
		if d := cmp.Diff(append(tc.lines, "HTTP request"), got); d != "" {
			t.Errorf("%s %s from %s: lines (-want +got):\n%s", tc.method, tc.target, tc.remote, d)
		}
	}
}

func TestClipLoggedPath(t *testing.T) {
	long := "/ipxe/" + strings.Repeat("x", maxLoggedPath)
	for _, c := range []struct{ in, want string }{
		{"/ipxe/52:54:00:00:00:01", "/ipxe/52:54:00:00:00:01"},
		{long, long[:maxLoggedPath] + "...(262 bytes)"},
	} {
		if got := clipPath(c.in); got != c.want {
			t.Errorf("clipPath(%d bytes) = %q, want %q", len(c.in), got, c.want)
		}
	}
}
