package images

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeFiles creates files with the given contents in a temp dir and
// returns name -> path.
func writeFiles(t *testing.T, contents map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out := map[string]string{}
	for n, c := range contents {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		out[n] = p
	}
	return out
}

func TestStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := writeFiles(t, map[string]string{"vmlinuz": "kernel bytes", "initrd.gz": "initrd bytes", "pxelinux.0": "nbp"})
	def := Profile{Name: "default", Kernel: "vmlinuz", Initrd: "initrd.gz", Cmdline: "console=ttyS0 quiet", BootFiles: []string{"pxelinux.0"}}
	got, err := s.Add(def, files)
	if err != nil {
		t.Fatal(err)
	}
	rescue := Profile{Name: "rescue", Kernel: "vmlinuz", Cmdline: "single"}
	if _, err := s.Add(rescue, map[string]string{"vmlinuz": files["vmlinuz"]}); err != nil {
		t.Fatal(err)
	}
	if got.Files["vmlinuz"].Size != int64(len("kernel bytes")) || len(got.Files) != 3 {
		t.Fatalf("Add returned %+v", got)
	}
	if got.Files["vmlinuz"].SHA256 != sha256Hex("kernel bytes") {
		t.Fatalf("kernel sha256 = %s", got.Files["vmlinuz"].SHA256)
	}

	reopened, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.List(), reopened.List()); diff != "" {
		t.Fatalf("profiles after reopen (-before +after):\n%s", diff)
	}
	names := []string{}
	for _, p := range reopened.List() {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"default", "rescue"}, names); diff != "" {
		t.Fatalf("List order (-want +got):\n%s", diff)
	}
	p, err := reopened.Get("default")
	if err != nil {
		t.Fatal(err)
	}
	def.Files = got.Files
	if diff := cmp.Diff(def, p); diff != "" {
		t.Fatalf("Get (-want +got):\n%s", diff)
	}
	if _, err := reopened.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(nope) error = %v, want ErrNotFound", err)
	}
	bp, err := reopened.BlobPath("rescue", "vmlinuz")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(bp); err != nil || string(b) != "kernel bytes" {
		t.Fatalf("BlobPath content %q, %v", b, err)
	}
	// Shared contents are stored once.
	blobs, _ := os.ReadDir(filepath.Join(dir, blobDir))
	if len(blobs) != 3 {
		t.Fatalf("%d blobs, want 3 (vmlinuz shared)", len(blobs))
	}
	if probs := reopened.Verify(); len(probs) != 0 {
		t.Fatalf("Verify on a fresh store: %v", probs)
	}

	// Replacing a profile keeps one entry.
	if _, err := reopened.Add(Profile{Name: "rescue", Kernel: "vmlinuz", Cmdline: "emergency"}, map[string]string{"vmlinuz": files["vmlinuz"]}); err != nil {
		t.Fatal(err)
	}
	if r, _ := reopened.Get("rescue"); r.Cmdline != "emergency" || len(reopened.List()) != 2 {
		t.Fatalf("after replace: %+v, %d profiles", r, len(reopened.List()))
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, blob string)
		want   []string // "profile/file kind"
	}{
		{"changed", func(t *testing.T, blob string) {
			os.Chmod(blob, 0o644)
			must(t, os.WriteFile(blob, []byte("kernel byteZ"), 0o644)) // same size
		}, []string{"a/vmlinuz changed", "b/vmlinuz changed"}},
		{"truncated", func(t *testing.T, blob string) {
			os.Chmod(blob, 0o644)
			must(t, os.Truncate(blob, 3))
		}, []string{"a/vmlinuz changed", "b/vmlinuz changed"}},
		{"missing", func(t *testing.T, blob string) { must(t, os.Remove(blob)) }, []string{"a/vmlinuz missing", "b/vmlinuz missing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			files := writeFiles(t, map[string]string{"vmlinuz": "kernel bytes", "initrd": "initrd bytes"})
			for _, n := range []string{"a", "b"} {
				if _, err := s.Add(Profile{Name: n, Kernel: "vmlinuz", Initrd: "initrd"}, files); err != nil {
					t.Fatal(err)
				}
			}
			blob, err := s.BlobPath("a", "vmlinuz")
			if err != nil {
				t.Fatal(err)
			}
			tc.tamper(t, blob)
			var got []string
			for _, p := range s.Verify() {
				got = append(got, p.Profile+"/"+p.File+" "+p.Kind)
				if !strings.Contains(p.String(), p.Blob.SHA256) || p.Detail == "" {
					t.Errorf("problem %v does not name the blob and what is wrong", p)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("Verify (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddErrors(t *testing.T) {
	files := writeFiles(t, map[string]string{"vmlinuz": "k", "initrd": "i"})
	tests := []struct {
		name  string
		p     Profile
		files map[string]string
		want  string
	}{
		{"no name", Profile{Kernel: "vmlinuz"}, files, "name is empty"},
		{"upper-case name", Profile{Name: "Default", Kernel: "vmlinuz"}, files, `character 'D'`},
		{"slash in name", Profile{Name: "a/b", Kernel: "vmlinuz"}, files, `character '/'`},
		{"dotdot file", Profile{Name: "a", Kernel: ".."}, files, `character '.' at byte 0`},
		{"slash in file", Profile{Name: "a", Kernel: "boot/vmlinuz"}, files, `character '/'`},
		{"no kernel", Profile{Name: "a"}, files, "kernel is required"},
		{"newline in cmdline", Profile{Name: "a", Kernel: "vmlinuz", Cmdline: "quiet\nshell"}, map[string]string{"vmlinuz": files["vmlinuz"]}, "control character"},
		{"source missing", Profile{Name: "a", Kernel: "vmlinuz", Initrd: "initrd"}, map[string]string{"vmlinuz": files["vmlinuz"]}, `no source given for file "initrd"`},
		{"extra file", Profile{Name: "a", Kernel: "vmlinuz"}, files, `file "initrd" is not the kernel`},
		{"unreadable source", Profile{Name: "a", Kernel: "vmlinuz"}, map[string]string{"vmlinuz": "/nonexistent/vmlinuz"}, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Add(tc.p, tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Add error = %v, want containing %q", err, tc.want)
			}
			if len(s.List()) != 0 {
				t.Fatal("failed Add left a profile")
			}
		})
	}
}

func TestOpenBadManifest(t *testing.T) {
	tests := []struct {
		name, manifest, want string
	}{
		{"not json", "{", "parsing"},
		{"version", `{"version":2,"profiles":[]}`, "manifest version 2"},
		{"unknown field", `{"version":1,"profiles":[],"extra":1}`, "unknown field"},
		{"bad profile", `{"version":1,"profiles":[{"name":"A","kernel":"k","files":{}}]}`, "profiles[0]"},
		{"no blob", `{"version":1,"profiles":[{"name":"a","kernel":"k","files":{}}]}`, `file "k" has no blob`},
		{"bad hash", `{"version":1,"profiles":[{"name":"a","kernel":"k","files":{"k":{"sha256":"../x","size":1}}}]}`, "bad sha256"},
		{"duplicate", `{"version":1,"profiles":[{"name":"a","kernel":"k","files":{"k":{"sha256":"` + strings.Repeat("a", 64) + `","size":1}}},{"name":"a","kernel":"k","files":{"k":{"sha256":"` + strings.Repeat("a", 64) + `","size":1}}}]}`, "duplicate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, manifestName), []byte(tc.manifest), 0o644))
			_, err := Open(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), manifestName) {
				t.Fatalf("Open error = %v, want naming %s and containing %q", err, manifestName, tc.want)
			}
		})
	}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestAddRepairsBlob(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := writeFiles(t, map[string]string{"vmlinuz": "kernel bytes"})
	p := Profile{Name: "a", Kernel: "vmlinuz"}
	if _, err := s.Add(p, files); err != nil {
		t.Fatal(err)
	}
	blob, _ := s.BlobPath("a", "vmlinuz")
	os.Chmod(blob, 0o644)
	must(t, os.WriteFile(blob, []byte("kernel byteZ"), 0o644))
	if len(s.Verify()) != 1 {
		t.Fatal("tampering not detected")
	}
	if _, err := s.Add(p, files); err != nil {
		t.Fatal(err)
	}
	if probs := s.Verify(); len(probs) != 0 {
		t.Fatalf("after adding again: %v", probs)
	}
}

func TestOpenMissingStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "typo")
	if _, err := Open(dir); !errors.Is(err, ErrNoStore) {
		t.Fatalf("Open(missing) = %v, want ErrNoStore", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("Open created %s", dir)
	}
	s, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.List()) != 0 {
		t.Errorf("new store lists %v", s.List())
	}
	if _, err := Open(dir); err != nil {
		t.Errorf("Open after Create: %v", err)
	}
}
