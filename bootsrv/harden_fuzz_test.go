package bootsrv

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/google/go-cmp/cmp"
)

// FuzzHTTPAPI sends arbitrary requests (method, path, body, Range and Authorization headers) to
// the whole HTTP handler from a host of the boot network that is no node. Never a panic or a 5xx;
// no answer larger than the largest file plus its headers (the range cap); and no node's state,
// address or health moves: such a host cannot act for a node.
func FuzzHTTPAPI(f *testing.F) {
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
	tok := attemptToken(f, s, "node00")
	for _, seed := range []struct{ method, path, body, rng, auth string }{
		{"GET", "/ipxe/52:54:00:00:00:00", "", "", ""},
		{"GET", "/ipxe/52-54-00-00-00-01?token=" + tok, "", "", ""},
		{"GET", "/boot/default/initrd.img?node=node01", "", "bytes=0-0", ""},
		{"GET", "/boot/default/vmlinuz?token=" + tok, "", "bytes=0-0,0-0,0-0,5-9,100-", ""},
		{"GET", "/boot/default/vmlinuz", "", "bytes=-1,1-2,3-4,5-6,7-8,9-10,11-12,13-14,15-16,17-18,19-20,21-22,23-24,25-26,27-28,29-30,31-32", ""},
		{"HEAD", "/ipxe/bin/undionly.kpxe", "", "bytes=1-", ""},
		{"POST", "/api/v1/nodes/node00/health?token=" + tok, `{"status":"failed"}`, "", ""},
		{"POST", "/api/v1/nodes/node01/health", `{"status":"ok","details":{"a":1}}`, "", "Bearer " + tok},
		{"POST", "/api/v1/nodes/node00/reboot", "", "", "Bearer 0123456789abcdef0123456789abcdef"},
		{"GET", "/api/v1/nodes?state=healthy", "", "", ""},
		{"GET", "/api/v1/nodes/node03", "", "", ""},
		{"GET", "/api/v1/summary", "", "", ""},
		{"GET", "/blobs/sha256/" + strings.Repeat("0", 64), "", "", ""},
		{"GET", "/boot/default/..%2f..%2fmanifest.json", "", "", ""},
		{"DELETE", "/api/v1/nodes", "", "", ""},
	} {
		f.Add(seed.method, seed.path, []byte(seed.body), seed.rng, seed.auth)
	}
	maxBody := int64(len(fx.kernel) + 4096)
	f.Fuzz(func(t *testing.T, method, target string, body []byte, rng, auth string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || !validMethod(method) {
			return
		}
		req := &http.Request{Method: method, URL: u, RequestURI: target, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
			Host: "boot.test", RemoteAddr: attacker}
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		before := s.tracker.Nodes()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %q: %d %s", method, target, w.Code, w.Body)
		}
		if int64(w.Body.Len()) > maxBody {
			t.Fatalf("%s %q (Range %q): %d bytes", method, target, rng, w.Body.Len())
		}
		after := s.tracker.Nodes()
		for i := range before {
			b, a := before[i], after[i]
			if a.State != b.State || a.IP != b.IP || a.Health != nil || a.RebootRequested != b.RebootRequested {
				t.Fatalf("%s %q from another host moved %s: %v at %q -> %v at %q", method, target, a.Name, b.State, b.IP, a.State, a.IP)
			}
		}
	})
}

func validMethod(m string) bool {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH":
		return true
	}
	return false
}

// FuzzCoalesceRanges: the rewritten Range header is the input untouched (net/http judges it), none
// (the whole file), or at most limit sorted, disjoint, non-adjacent ranges inside the file that
// cover exactly the bytes the input asked for.
func FuzzCoalesceRanges(f *testing.F) {
	f.Add("bytes=0-0,0-0,0-0", int64(1000), uint8(16))
	f.Add("bytes=0-9,5-20,30-", int64(100), uint8(2))
	f.Add("bytes=-5,0-0", int64(10), uint8(1))
	f.Add("bytes=0-1,2-3,4-5", int64(6), uint8(16))
	f.Add("bytes=500-", int64(100), uint8(16))
	f.Add("bytes=abc", int64(100), uint8(16))
	f.Fuzz(func(t *testing.T, h string, size int64, limit uint8) {
		if limit == 0 || size <= 0 || size > 1<<40 {
			return
		}
		got := CoalesceRanges(h, size, int(limit))
		if got == h || got == "" {
			return
		}
		spec, ok := strings.CutPrefix(got, "bytes=")
		if !ok {
			t.Fatalf("%q -> %q", h, got)
		}
		parts := strings.Split(spec, ",")
		if len(parts) > int(limit) {
			t.Fatalf("%q -> %d ranges, limit %d", h, len(parts), limit)
		}
		prevEnd := int64(-2)
		for _, p := range parts {
			a, b, _ := strings.Cut(p, "-")
			start, err1 := strconv.ParseInt(a, 10, 64)
			end, err2 := strconv.ParseInt(b, 10, 64)
			if err1 != nil || err2 != nil || start > end || end >= size || start <= prevEnd+1 {
				t.Fatalf("%q (size %d) -> %q: range %q", h, size, got, p)
			}
			prevEnd = end
		}
		if size <= 4096 && !sameBytes(h, got, size) {
			t.Fatalf("%q (size %d) -> %q covers other bytes", h, size, got)
		}
	})
}

// sameBytes reports whether two Range headers ask for the same bytes of a file of size bytes.
func sameBytes(a, b string, size int64) bool {
	cover := func(h string) []bool {
		c := make([]bool, size)
		spec, _ := strings.CutPrefix(h, "bytes=")
		for p := range strings.SplitSeq(spec, ",") {
			if r, ok, _ := parseRange(strings.TrimSpace(p), size); ok {
				for i := r.start; i < r.end; i++ {
					c[i] = true
				}
			}
		}
		return c
	}
	return cmp.Equal(cover(a), cover(b))
}
