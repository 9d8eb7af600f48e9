package bootsrv

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
)

// TestUEFIHTTPBootFetch fetches the EFI application the way EDK II's HTTP boot client
// (HttpBootDxe) does, over TCP from node00's address: a HEAD for the size ("File Size: N Bytes"
// on the console), then the GET, whose Content-Length sizes the buffer the image is loaded into;
// the file name's .efi extension makes it an EFI image (HttpBootCheckImageType falls back to the
// extension when Content-Type is not application/efi). The HEAD leaves the boot state alone,
// the whole GET moves the node to nbp with the transfer named as HTTP, and byte ranges are
// honoured for clients that resume.
func TestUEFIHTTPBootFetch(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, nil)
	srv := httptest.NewServer(s.Handler()) // 127.0.0.1: node00's inventory address
	t.Cleanup(srv.Close)
	url := srv.URL + "/ipxe/bin/ipxe.efi"
	state := func() nodestate.NodeStatus {
		n, ok := s.tracker.Node("node00")
		if !ok {
			t.Fatal("no node00")
		}
		return n
	}
	fetch := func(method, rng string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	size := fmt.Sprint(len(f.nbp))

	resp, body := fetch(http.MethodHead, "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Length") != size || len(body) != 0 {
		t.Fatalf("HEAD: %s, Content-Length %q, %d body bytes; want 200, %s, none", resp.Status, resp.Header.Get("Content-Length"), len(body), size)
	}
	if st := state().State; st != nodestate.Pending {
		t.Errorf("after HEAD: %v, want pending (a size probe delivers nothing)", st)
	}

	resp, body = fetch(http.MethodGet, "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Length") != size || len(resp.TransferEncoding) != 0 {
		t.Fatalf("GET: %s, Content-Length %q, Transfer-Encoding %v; want 200 with Content-Length %s, not chunked",
			resp.Status, resp.Header.Get("Content-Length"), resp.TransferEncoding, size)
	}
	mustEqualBytes(t, "ipxe.efi", body, f.nbp)
	if ct := resp.Header.Get("Content-Type"); ct != "application/efi" && !strings.HasSuffix(url, ".efi") {
		t.Errorf("Content-Type %q and a URL without .efi: EDK II cannot tell the image type", ct)
	}
	if resp.Header.Get("Accept-Ranges") != "bytes" {
		t.Errorf("Accept-Ranges %q, want bytes", resp.Header.Get("Accept-Ranges"))
	}
	// The server records the delivery once the last byte is written, which may be after the
	// client has read it.
	var n nodestate.NodeStatus
	testfix.WaitFor(t, "nbp after GET", 2*time.Second, func() bool { n = state(); return n.State == nodestate.NBP })
	if last := n.History[len(n.History)-1]; last.To != nodestate.NBP || last.Detail != "http ipxe.efi" {
		t.Errorf("last transition %+v, want to nbp with detail %q (the first file over HTTP)", last, "http ipxe.efi")
	}

	resp, body = fetch(http.MethodGet, "bytes=1000-1999")
	if resp.StatusCode != http.StatusPartialContent || resp.Header.Get("Content-Range") != "bytes 1000-1999/"+size {
		t.Fatalf("range: %s, Content-Range %q", resp.Status, resp.Header.Get("Content-Range"))
	}
	mustEqualBytes(t, "ipxe.efi bytes 1000-1999", body, f.nbp[1000:2000])
	resp, _ = fetch(http.MethodGet, "bytes=99999999-")
	if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("range past the end: %s, want 416", resp.Status)
	}
}
