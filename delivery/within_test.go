package delivery

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFetchWithinTimeout: a server that never answers is given up on at the timeout, not at the
// caller's deadline.
func TestFetchWithinTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	o := Options{Server: srv.URL, Profile: "p", File: "initrd", Out: filepath.Join(t.TempDir(), "initrd"), ServerOnly: true}
	if _, err := FetchWithin(ctx, o, 200*time.Millisecond); err == nil {
		t.Fatal("a server that never answers: no error")
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("gave up after %v, want about the 200 ms timeout", took)
	}
}

// TestResultText: the lines say what came from where, and the bad pieces only when there were some.
func TestResultText(t *testing.T) {
	for _, tc := range []struct {
		res  Result
		want []string
		not  string
	}{
		{Result{Size: 2e6, SHA256: "ab", Seconds: 1.25, FromPeers: 1.5e6, FromServer: 5e5, SeededFor: 3, Uploaded: 1e6},
			[]string{"out: 2 MB verified (sha256 ab) in 1.2 s: 1.5 MB from peers, 500 KB from the server\n", "seeded 3 s, sent 1 MB to peers\n"}, "bad pieces"},
		{Result{BadPieces: 2, BannedPeers: []string{"10.0.0.9:6881"}}, []string{"2 bad pieces dropped; peers banned for them: 10.0.0.9:6881\n"}, "\x00"},
	} {
		var b strings.Builder
		if err := tc.res.WriteText(&b, "out"); err != nil {
			t.Fatal(err)
		}
		for _, s := range tc.want {
			if !strings.Contains(b.String(), s) {
				t.Errorf("no %q in\n%s", s, b.String())
			}
		}
		if strings.Contains(b.String(), tc.not) {
			t.Errorf("%q in\n%s", tc.not, b.String())
		}
	}
}
