package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// peer serves blobs as a boot server does: GET /blobs/sha256/{sum}, answering with what blobs
// holds for sum (which may be wrong bytes, to stand for a corrupt peer), 404 otherwise. The
// answers are chunked (no Content-Length), so that the bytes themselves are checked.
func peer(t *testing.T, blobs map[string][]byte) string {
	return peerWith(t, blobs, false)
}

// peerWith is peer, with Content-Length on every answer when withLength.
func peerWith(t *testing.T, blobs map[string][]byte, withLength bool) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /blobs/sha256/{sum}", func(w http.ResponseWriter, r *http.Request) {
		b, ok := blobs[r.PathValue("sum")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if withLength {
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		}
		w.Write(b)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestFetchBlob(t *testing.T) {
	good := []byte(strings.Repeat("kernel bytes ", 10000))
	sum := sumOf(good)
	corrupt := append([]byte(nil), good...)
	corrupt[100] ^= 1
	var (
		has     = peer(t, map[string][]byte{sum: good})
		missing = peer(t, nil)
		bad     = peer(t, map[string][]byte{sum: corrupt})
		short   = peer(t, map[string][]byte{sum: good[:len(good)-1]})
		long    = peer(t, map[string][]byte{sum: append(append([]byte(nil), good...), 'x')})
		down    = "http://127.0.0.1:1"
		sized   = peerWith(t, map[string][]byte{sum: good[:len(good)-1]}, true)
		whole   = peerWith(t, map[string][]byte{sum: good}, true)
	)
	tests := []struct {
		name     string
		peers    []string
		sum      string
		size     int64
		want     string // error substrings, "|"-separated; "" for success
		mismatch bool
	}{
		{"good", []string{has}, sum, int64(len(good)), "", false},
		{"trailing slash", []string{has + "/"}, sum, int64(len(good)), "", false},
		{"corrupted", []string{bad}, sum, int64(len(good)), "peer " + bad + ": blob does not match its sha256 and size: it sent sha256 ", true},
		{"short", []string{short}, sum, int64(len(good)), "peer " + short + ": blob does not match its sha256 and size: it sent sha256 |and 129999 bytes, want " + sum + " and 130000 bytes (refused)", true},
		{"content length", []string{sized}, sum, int64(len(good)), "peer " + sized + ": blob does not match its sha256 and size: it sends 129999 bytes, want 130000 (refused)", true},
		{"with content length", []string{whole}, sum, int64(len(good)), "", false},
		{"long", []string{long}, sum, int64(len(good)), "peer " + long + ": blob does not match", true},
		{"missing", []string{missing}, sum, int64(len(good)), "peer " + missing + ": GET " + missing + "/blobs/sha256/" + sum + ": 404 Not Found", false},
		{"second peer has it", []string{missing, bad, down, has}, sum, int64(len(good)), "", false},
		{"nobody has it", []string{missing, bad, down}, sum, int64(len(good)), "no peer gave it: peer " + missing + ": |; peer " + bad + ": blob does not match|; peer " + down + ": ", true},
		{"no peers", nil, sum, int64(len(good)), "no peer to fetch it from", false},
		{"bad sum", []string{has}, "ABC", 1, "not a sha256", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Create(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			err = FetchBlob(context.Background(), nil, tt.peers, tt.sum, tt.size, st)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				p, err := st.BlobPathBySum(sum)
				if err != nil {
					t.Fatal(err)
				}
				if b, err := os.ReadFile(p); err != nil || !cmp.Equal(b, good) {
					t.Errorf("stored blob: %v, %d bytes", err, len(b))
				}
			} else {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range strings.Split(tt.want, "|") {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error\n  %v\nwant it to contain\n  %s", err, w)
					}
				}
				if got := errors.Is(err, ErrBlobMismatch); got != tt.mismatch {
					t.Errorf("errors.Is(ErrBlobMismatch) = %v, want %v", got, tt.mismatch)
				}
				if st.HasBlob(sum, int64(len(good))) {
					t.Error("a refused blob was stored")
				}
			}
			// Nothing half-written is left behind.
			left, _ := filepath.Glob(filepath.Join(st.Dir(), blobDir, ".incoming-*"))
			if len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

func TestBlobPathBySum(t *testing.T) {
	st := newTestStore(t)
	p, err := st.Get("default")
	if err != nil {
		t.Fatal(err)
	}
	sum := p.Files[p.Kernel].SHA256
	if path, err := st.BlobPathBySum(sum); err != nil || filepath.Base(path) != sum {
		t.Errorf("BlobPathBySum = %s, %v", path, err)
	}
	if _, err := st.BlobPathBySum(strings.Repeat("0", 64)); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown blob: %v", err)
	}
	for _, bad := range []string{"", "../manifest.json", strings.Repeat("A", 64), sum[:63]} {
		if _, err := st.BlobPathBySum(bad); !errors.Is(err, ErrBadSum) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// newTestStore is a store with profile "default" (vmlinuz, initrd.img) and "rescue" (vmlinuz shared
// with default, and a boot file).
func newTestStore(t *testing.T) *Store {
	t.Helper()
	dir := t.TempDir()
	st, err := Create(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	k, i, b := write("vmlinuz", "the kernel"), write("initrd.img", "the initrd"), write("grub.cfg", "a boot file")
	if _, err := st.Add(Profile{Name: "default", Kernel: "vmlinuz", Initrd: "initrd.img", Cmdline: "console=ttyS0"}, map[string]string{"vmlinuz": k, "initrd.img": i}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Add(Profile{Name: "rescue", Kernel: "vmlinuz", BootFiles: []string{"grub.cfg"}}, map[string]string{"vmlinuz": k, "grub.cfg": b}); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestImportProfiles(t *testing.T) {
	src := newTestStore(t)
	blobs := map[string][]byte{}
	for _, p := range src.List() {
		for _, n := range p.FileNames() {
			path, err := src.BlobPath(p.Name, n)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			blobs[p.Files[n].SHA256] = b
		}
	}
	base := peer(t, blobs)

	dst, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	fetch := func(ctx context.Context, sum string, size int64) error {
		asked = append(asked, sum)
		return FetchBlob(ctx, nil, []string{base}, sum, size, dst)
	}
	if err := dst.ImportProfiles(context.Background(), src.List(), fetch); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(src.List(), dst.List()); diff != "" {
		t.Errorf("profiles (-src +dst):\n%s", diff)
	}
	if len(asked) != 3 {
		t.Errorf("fetched %d blobs, want 3 (the shared kernel once)", len(asked))
	}
	if probs := dst.Verify(); len(probs) > 0 {
		t.Errorf("problems: %v", probs)
	}
	reopened, err := Open(dst.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(src.List(), reopened.List()); diff != "" {
		t.Errorf("manifest on disk (-src +dst):\n%s", diff)
	}
	// Importing again fetches nothing.
	asked = nil
	if err := dst.ImportProfiles(context.Background(), src.List(), fetch); err != nil || len(asked) != 0 {
		t.Errorf("second import: %v, fetched %d", err, len(asked))
	}

	// A profile whose blob nobody has is not listed, and the manifest is unchanged.
	p := src.List()[0]
	p.Name = "broken"
	p.Files = map[string]Blob{p.Kernel: {SHA256: strings.Repeat("1", 64), Size: 5}, p.Initrd: p.Files[p.Initrd]}
	err = dst.ImportProfiles(context.Background(), []Profile{p}, fetch)
	if err == nil || !strings.Contains(err.Error(), `profile "broken": file "vmlinuz": images: blob 1111`) || !strings.Contains(err.Error(), "404 Not Found") {
		t.Errorf("error %v", err)
	}
	if _, err := dst.Get("broken"); !errors.Is(err, ErrNotFound) {
		t.Errorf("broken profile listed: %v", err)
	}

	// Manifests that do not check out are refused before anything is fetched.
	asked = nil
	bad := src.List()[0]
	delete(bad.Files, bad.Initrd)
	if err := dst.ImportProfiles(context.Background(), []Profile{bad}, fetch); err == nil || !strings.Contains(err.Error(), `file "initrd.img" has no blob`) || len(asked) != 0 {
		t.Errorf("error %v, fetched %d", err, len(asked))
	}
}
