package bootsrv

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/nodestate"
)

func TestCheckNode(t *testing.T) {
	local, other := netip.MustParseAddr("10.0.0.10"), netip.MustParseAddr("10.0.0.66")
	tests := []struct {
		name string
		c    NodeCheck
		code int // 0: allowed
	}{
		{"token and address", NodeCheck{From: local, NodeIP: "10.0.0.10", TokenOK: true, AuthOn: true, NeedAddr: true}, 0},
		{"no token", NodeCheck{From: local, NodeIP: "10.0.0.10", AuthOn: true, NeedAddr: true}, http.StatusUnauthorized},
		{"other address", NodeCheck{From: other, NodeIP: "10.0.0.10", TokenOK: true, AuthOn: true, NeedAddr: true}, http.StatusForbidden},
		{"no address known yet", NodeCheck{From: local, TokenOK: true, AuthOn: true, NeedAddr: true}, http.StatusForbidden},
		{"proxy mode, token only", NodeCheck{From: other, TokenOK: true, AuthOn: true}, 0},
		{"proxy mode, no token", NodeCheck{From: other, AuthOn: true}, http.StatusUnauthorized},
		{"auth off, address", NodeCheck{From: local, NodeIP: "10.0.0.10", NeedAddr: true}, 0},
		{"auth off, other address", NodeCheck{From: other, NodeIP: "10.0.0.10", NeedAddr: true}, http.StatusForbidden},
	}
	for _, tc := range tests {
		err := CheckNode("n", tc.c)
		code := 0
		if ae, ok := err.(*authError); ok {
			code = ae.code
		} else if err != nil {
			t.Fatalf("%s: %T %v", tc.name, err, err)
		}
		if code != tc.code {
			t.Errorf("%s: %d (%v), want %d", tc.name, code, err, tc.code)
		}
	}
}

func TestDownloadEvent(t *testing.T) {
	tests := []struct {
		name string
		d    Delivery
		want nodestate.Event
		ok   bool
	}{
		{"full", Delivery{"GET", 200, 100, 100}, nodestate.EvKernel, true},
		{"cut", Delivery{"GET", 200, 10, 100}, nodestate.EvTransferFailed, true},
		{"one-byte range", Delivery{"GET", 206, 1, 100}, 0, false},
		{"whole-file range", Delivery{"GET", 206, 100, 100}, 0, false},
		{"head", Delivery{"HEAD", 200, 0, 100}, 0, false},
		{"not modified", Delivery{"GET", 304, 0, 100}, 0, false},
		{"not found", Delivery{"GET", 404, 10, 100}, 0, false},
	}
	for _, tc := range tests {
		got, ok := DownloadEvent(tc.d, nodestate.EvKernel)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCoalesceRanges(t *testing.T) {
	tests := []struct {
		name, in string
		size     int64
		limit    int
		want     string
	}{
		{"one", "bytes=0-99", 1000, 16, "bytes=0-99"},
		{"duplicates", "bytes=0-0,0-0,0-0", 1000, 16, "bytes=0-0"},
		{"overlap and adjacent", "bytes=10-19,0-9,15-30,50-", 100, 16, "bytes=0-30,50-99"},
		{"suffix", "bytes=-10,0-4", 100, 16, "bytes=0-4,90-99"},
		{"beyond the end clipped", "bytes=90-500", 100, 16, "bytes=90-99"},
		{"unsatisfiable parts dropped", "bytes=200-300,0-0", 100, 16, "bytes=0-0"},
		{"all unsatisfiable: untouched", "bytes=200-300", 100, 16, "bytes=200-300"},
		{"too many: whole file", "bytes=0-0,2-2,4-4", 100, 2, ""},
		{"malformed: untouched", "bytes=a-b", 100, 16, "bytes=a-b"},
		{"other unit: untouched", "items=0-1", 100, 16, "items=0-1"},
	}
	for _, tc := range tests {
		if got := CoalesceRanges(tc.in, tc.size, tc.limit); got != tc.want {
			t.Errorf("%s: %q -> %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestSecretFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "node.secret")
	a, err := readSecret(p, "http.node_secret_file")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 || len(a) != 64 {
		t.Fatalf("created secret: %v %v, %d characters", err, fi.Mode(), len(a))
	}
	b, err := readSecret(p, "http.node_secret_file")
	if err != nil || string(a) != string(b) {
		t.Errorf("second read: %v, same %v", err, string(a) == string(b))
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	if _, err := readSecret(short, "http.operator_token_file"); err == nil || !strings.Contains(err.Error(), short) || !strings.Contains(err.Error(), "at least 16") {
		t.Errorf("short secret: %v", err)
	}
	n := nodeAuth{secret: a, issuer: "bs0"}
	tok := n.token("node00", 1)
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"same node, same attempt", n.check("node00", 1, tok)},
		{"same node, next attempt", !n.check("node00", 2, tok)},
		{"other node", !n.check("node01", 1, tok)},
		// Two servers of a fleet may number one node's attempts alike (fleetrun.go).
		{"same node and attempt, other server", !(nodeAuth{secret: a, issuer: "bs1"}).check("node00", 1, tok)},
		{"empty", !n.check("node00", 1, "")},
		{"address token is no node token", !n.check("node00", 1, n.addressToken("node00"))},
		{"length", len(tok) == nodeTokenLen},
		{"auth off", (nodeAuth{}).token("x", 1) == "" && (nodeAuth{}).check("x", 1, "")},
	} {
		if !tc.ok {
			t.Errorf("node tokens: %s", tc.name)
		}
	}
}

// attemptToken returns the token of the node's current boot attempt, starting one first (as its
// DHCP DISCOVER would) unless one is open.
func attemptToken(t testing.TB, s *Server, name string) string {
	t.Helper()
	if st, ok := s.tracker.Node(name); !ok {
		t.Fatalf("no node %s", name)
	} else if !st.AttemptOpen() {
		if _, _, err := s.tracker.Observe(name, nodestate.EvDiscover, "test: a boot attempt"); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := s.tracker.Node(name)
	return s.nodes.token(name, st.Attempt)
}

// nodeToken returns the token of the node's current attempt, changing nothing.
func nodeToken(s *Server, name string) string {
	st, _ := s.tracker.Node(name)
	return s.nodes.token(name, st.Attempt)
}

// TestFromThisHost: an operator request from the server's host is accepted over loopback and to
// one of the host's own addresses from that address (bootctl node reboot --server
// http://ADDRESS on the server), and refused from any other address.
func TestFromThisHost(t *testing.T) {
	local := &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 80}
	for _, tc := range []struct {
		remote string
		local  net.Addr
		want   bool
	}{
		{"127.0.0.1:5000", nil, true},
		{"[::1]:5000", nil, true},
		{"10.0.0.1:5000", local, true},
		{"10.0.0.2:5000", local, false},
		{"10.0.0.1:5000", nil, false}, // no local address known: not proven
	} {
		r := httptest.NewRequest("POST", "/api/v1/nodes/node00/reboot", nil)
		if tc.local != nil {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tc.local))
		}
		r.RemoteAddr = tc.remote
		if got := fromThisHost(r, remoteAddr(r)); got != tc.want {
			t.Errorf("from %s to %v: %v, want %v", tc.remote, tc.local, got, tc.want)
		}
	}
}
