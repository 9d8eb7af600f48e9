package bootsrv

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/images"
)

func TestBlobRoute(t *testing.T) {
	fx := newFixture(t)
	s := fx.server(t, nil)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	p, err := s.images.Get("default")
	if err != nil {
		t.Fatal(err)
	}
	kernel := p.Files[p.Kernel]
	get := func(path, rng string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	tests := []struct {
		name, path, rng string
		code            int
		body            []byte
	}{
		{"blob", "/blobs/sha256/" + kernel.SHA256, "", http.StatusOK, fx.kernel},
		{"range", "/blobs/sha256/" + kernel.SHA256, "bytes=10-19", http.StatusPartialContent, fx.kernel[10:20]},
		{"unknown", "/blobs/sha256/" + strings.Repeat("0", 64), "", http.StatusNotFound, nil},
		{"malformed", "/blobs/sha256/xyz", "", http.StatusBadRequest, nil},
		{"upper case", "/blobs/sha256/" + strings.ToUpper(kernel.SHA256), "", http.StatusBadRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(tt.path, tt.rng)
			if code != tt.code {
				t.Fatalf("status %d, want %d (%s)", code, tt.code, body)
			}
			if tt.body != nil {
				mustEqualBytes(t, "body", body, tt.body)
			}
		})
	}
	// A peer fetches it from this route and verifies it.
	dst, err := images.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := images.FetchBlob(context.Background(), srv.Client(), []string{srv.URL}, kernel.SHA256, kernel.Size, dst); err != nil {
		t.Fatal(err)
	}
	if !dst.HasBlob(kernel.SHA256, kernel.Size) {
		t.Error("fetched blob missing")
	}
}
