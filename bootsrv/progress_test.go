package bootsrv

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
)

// TestProgressEndpoint follows one node's boot through GET /api/v1/progress: a whole kernel, an
// initrd cut short (given up, its time and bytes kept), the firmware starting over by itself
// (a restart), a download without the node's token (not counted), and the operator's reboot,
// which begins a new boot with the counts at zero. The answer carries no history.
func TestProgressEndpoint(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, nil)
	srv := httptest.NewServer(s.Handler()) // 127.0.0.1: node00's address
	t.Cleanup(srv.Close)
	progress := func() (nodestate.LiveNode, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/api/v1/progress")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var pr bootapi.ProgressResponse
		if err := json.Unmarshal(body, &pr); err != nil || resp.StatusCode != 200 {
			t.Fatalf("progress: %s: %v: %s", resp.Status, err, body)
		}
		for _, n := range pr.Nodes {
			if n.Name == "node00" {
				return n, string(body)
			}
		}
		t.Fatalf("no node00 in %s", body)
		return nodestate.LiveNode{}, ""
	}
	get := func(path string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	s.tracker.Observe("node00", nodestate.EvDiscover, "test: first DHCP") // from pending: a new boot
	get("/boot/default/initrd.img?token=" + attemptToken(t, s, "node00"))
	var n nodestate.LiveNode
	testfix.WaitFor(t, "the initrd's transfer done", 5*time.Second, func() bool {
		n, _ = progress()
		return n.Transfer != nil && n.Transfer.Outcome == nodestate.TransferDone
	})
	if x := n.Transfer; x.Sent != int64(len(f.initrd)) || x.Size != int64(len(f.initrd)) || !strings.HasSuffix(x.File, "initrd.img") || !(x.RateMbps > 0) {
		t.Errorf("initrd transfer %+v, want %d of %d bytes of initrd.img at a positive rate", x, len(f.initrd), len(f.initrd))
	}
	if n.State != nodestate.Initrd || n.Attempt != 1 || n.Restarts != 0 || n.GaveUp != 0 {
		t.Errorf("after the kernel: %+v", n)
	}

	// The node goes away after 64 KiB of the kernel: the server's next write fails (through a
	// writer, not a socket, whose buffers on a loaded host could take the whole file first).
	req := httptest.NewRequest("GET", "/boot/default/vmlinuz?token="+attemptToken(t, s, "node00"), nil)
	req.RemoteAddr = "127.0.0.1:1"
	s.Handler().ServeHTTP(&cutWriter{header: http.Header{}, left: 64 << 10}, req)
	n, _ = progress()
	if n.GaveUp != 1 {
		t.Fatalf("after a cut kernel: %+v, want 1 transfer given up", n)
	}
	if x := n.LastGaveUp; x == nil || x.Outcome != nodestate.TransferFailed || x.Sent >= x.Size || x.Size != int64(len(f.kernel)) || !(x.Seconds > 0) {
		t.Errorf("given-up transfer %+v, want part of %d bytes, failed, with its time", x, len(f.kernel))
	}
	if n.State != nodestate.Failed {
		t.Errorf("state %v after a cut transfer, want failed", n.State)
	}

	s.tracker.Observe("node00", nodestate.EvDiscover, "test: the firmware starts over")
	n, body := progress()
	if n.Restarts != 1 || n.GaveUp != 1 || n.Attempt != 2 || n.State != nodestate.Discover {
		t.Errorf("after the firmware's restart: %+v, want attempt 2, 1 restart, 1 given up", n)
	}
	if strings.Contains(body, "history") || strings.Contains(body, "\n  ") {
		t.Errorf("progress answer carries history or indentation: %s", body)
	}

	// From the node's address without its token (another host that took the address): the
	// download is served, and not counted as the node's.
	before := n.Transfer
	get("/boot/default/initrd.img")
	if n, _ = progress(); *n.Transfer != *before {
		t.Errorf("a download without the token changed the node's transfer: %+v, was %+v", n.Transfer, before)
	}

	if _, err := s.tracker.RequestReboot("node00"); err != nil {
		t.Fatal(err)
	}
	s.tracker.Observe("node00", nodestate.EvDiscover, "test: the armed reboot")
	if n, _ = progress(); n.Restarts != 0 || n.GaveUp != 0 || n.LastGaveUp != nil || n.Attempt != 3 {
		t.Errorf("after the operator's reboot: %+v, want a new boot with no restart and nothing given up", n)
	}
}

// cutWriter is a client that goes away after left bytes: every write past them fails.
type cutWriter struct {
	header http.Header
	left   int
}

func (w *cutWriter) Header() http.Header { return w.header }
func (w *cutWriter) WriteHeader(int)     {}
func (w *cutWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		n := w.left
		w.left = 0
		return n, errors.New("connection reset by peer")
	}
	w.left -= len(p)
	return len(p), nil
}
