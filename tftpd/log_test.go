package tftpd

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestRequestLogFields checks that every log line about a request says who asked (remote, and
// the node NodeName knows at that address), for what (filename, mode, options) and which server
// answered (the Logger's field), for each way a request ends: windowed and lock-step transfers,
// a missing file, a refused path, a request the parser refuses, a write request and a stray
// datagram.
func TestRequestLogFields(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	data := testfix.RandomBytes(3000, 5)
	nodeName := func(a netip.Addr) (string, bool) {
		if a == netip.MustParseAddr("127.0.0.1") {
			return "node-7", true
		}
		return "", false
	}
	ts := startServer(t, Config{Root: fstest.MapFS{"boot/ok.efi": {Data: data}},
		Logger: zap.New(core).With(zap.String("server", "bs0")), NodeName: nodeName})

	tests := []struct {
		name string
		do   func(t *testing.T)
		msg  string
		want map[string]any // fields beside remote, node and server
	}{
		{"windowed", func(t *testing.T) {
			rc, first := rawRRQ(t, ts.addr, "boot/ok.efi", "blksize", "1024", "windowsize", "4", "tsize", "0")
			parseOACK(t, first)
			if got := rawFetchWindowed(t, rc, 1024, 4, nil); !bytes.Equal(got, data) {
				t.Fatalf("got %d bytes, want %d", len(got), len(data))
			}
		}, "tftp transfer done", map[string]any{"filename": "boot/ok.efi", "mode": "octet", "options": "blksize=1024 tsize=0 windowsize=4",
			"path": "boot/ok.efi", "outcome": "ok", "windowsize": int64(4)}},
		{"lock-step", func(t *testing.T) {
			if _, _, err := fetch(ts.addr, "boot/ok.efi", 1468, true); err != nil {
				t.Fatal(err)
			}
		}, "tftp transfer done", map[string]any{"filename": "boot/ok.efi", "mode": "octet", "options": "blksize=1468 tsize=0",
			"path": "boot/ok.efi", "outcome": "ok", "windowsize": int64(1)}},
		{"missing file", func(t *testing.T) { fetch(ts.addr, "boot/none.efi", 0, false) },
			"tftp transfer failed", map[string]any{"filename": "boot/none.efi", "mode": "octet", "options": "",
				"path": "boot/none.efi", "outcome": "not_found"}},
		{"refused path", func(t *testing.T) { fetch(ts.addr, "../etc/passwd", 0, true) },
			"tftp transfer failed", map[string]any{"filename": "../etc/passwd", "mode": "octet", "options": "tsize=0",
				"path": "", "outcome": "refused"}},
		{"bad request", func(t *testing.T) { sendRRQ(t, ts.addr, "127.0.0.1", "mail", "boot/ok.efi").read(t) },
			"tftp request refused", map[string]any{}},
		{"write", func(t *testing.T) {
			c, err := net.Dial("udp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte("\x00\x02up.bin\x00OCTET\x00blksize\x001468\x00")); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 512)); err != nil {
				t.Fatalf("no answer to the write request: %v", err)
			}
		}, "tftp write refused", map[string]any{"filename": "up.bin", "mode": "octet", "options": "blksize=1468"}},
		{"stray ACK", func(t *testing.T) {
			c, err := net.Dial("udp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte{0, opACK, 0, 1}); err != nil {
				t.Fatal(err)
			}
		}, "tftp datagram dropped", map[string]any{"opcode": int64(opACK)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen := logs.FilterMessage(tc.msg).Len()
			tc.do(t)
			entry := waitLog(t, logs, tc.msg, seen)
			got := entry.ContextMap()
			if !strings.HasPrefix(got["remote"].(string), "127.0.0.1:") {
				t.Errorf("remote = %v, want 127.0.0.1:port", got["remote"])
			}
			want := map[string]any{"node": "node-7", "server": "bs0", "remote": got["remote"]}
			for k, v := range tc.want {
				want[k] = v
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					delete(got, k) // bytes, durations and errors vary
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%q fields (-want +got):\n%s", tc.msg, diff)
			}
		})
	}
	ts.stop()
	for _, e := range logs.All() {
		if e.Message == "tftp serving" || e.Message == "tftp stopped" {
			continue
		}
		if m := e.ContextMap(); m["remote"] == nil || m["node"] != "node-7" || m["server"] != "bs0" {
			t.Errorf("line %q lacks remote, node or server: %v", e.Message, m)
		}
	}
}

// waitLog waits up to 5 s for the line msg after the first skip ones: a transfer's line is
// written after its observer has been told.
func waitLog(t *testing.T, logs *observer.ObservedLogs, msg string, skip int) observer.LoggedEntry {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if all := logs.FilterMessage(msg).All(); len(all) > skip {
			return all[skip]
		}
	}
	t.Fatalf("no log line %q within 5 s", msg)
	return observer.LoggedEntry{}
}

func TestClipLoggedText(t *testing.T) {
	long := strings.Repeat("a", maxLoggedText+10)
	for _, c := range []struct{ in, want string }{
		{"pxelinux.0", "pxelinux.0"},
		{long[:maxLoggedText], long[:maxLoggedText]},
		{long, long[:maxLoggedText] + "...(266 bytes)"},
	} {
		if got := clip(c.in); got != c.want {
			t.Errorf("clip(%d bytes) = %q, want %q", len(c.in), got, c.want)
		}
	}
}
