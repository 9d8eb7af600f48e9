package ociimport

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// compress returns b compressed as name says ("", gzip, zstd, xz).
func compress(t testing.TB, name string, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w interface {
		Write([]byte) (int, error)
		Close() error
	}
	var err error
	switch name {
	case "":
		return b
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "zstd":
		w, err = zstd.NewWriter(&buf)
	case "xz":
		w, err = xz.NewWriter(&buf)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestImportRootTarball: a plain root file system tarball (what mmdebstrap writes), plain or
// compressed, is told from an image archive by its content and imports to the same archive as an
// OCI layout of the same files; a compressed image archive is refused, saying to decompress it.
func TestImportRootTarball(t *testing.T) {
	root := append(append([]te{}, bootLayer...), dir("etc/"), file("etc/hostname", "node\n"), symlink("bin", "usr/bin"), dir("usr/"), dir("usr/bin/"), file("usr/bin/sh", "#!"))
	dir := t.TempDir()
	st, ref, err := importInto(t, filepath.Join(dir, "ref"), Options{Source: writeLayout(t, dir, testImage(t, root))})
	if err != nil {
		t.Fatal(err)
	}
	refInitrd, _ := st.BlobPath("test", ref.Profile.Initrd)
	want := readCpio(t, refInitrd)
	for _, tc := range []struct{ name, compression string }{
		{"rootfs.tar", ""}, {"rootfs.tar.gz", "gzip"}, {"rootfs.tar.zst", "zstd"}, {"rootfs.tar.xz", "xz"}, {"rootfs.img", "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			src := filepath.Join(d, tc.name)
			if err := os.WriteFile(src, compress(t, tc.compression, tarBytes(t, root)), 0o644); err != nil {
				t.Fatal(err)
			}
			st, res, err := importInto(t, d, Options{Source: src})
			if err != nil {
				t.Fatal(err)
			}
			if res.Format != "rootfs-tar" || res.Layers != 1 || res.KernelSource != "/boot/vmlinuz-6.1.0" {
				t.Errorf("result %+v", res)
			}
			initrd, _ := st.BlobPath("test", res.Profile.Initrd)
			if diff := cmp.Diff(want, readCpio(t, initrd)); diff != "" {
				t.Errorf("archive differs from the OCI layout's (-layout +tarball):\n%s", diff)
			}
		})
	}
	// A docker save tarball, gzip-compressed: not a root file system.
	docker, err := os.ReadFile(writeDockerArchive(t, dir, testImage(t, root)))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "docker.tar.gz")
	os.WriteFile(src, compress(t, "gzip", docker), 0o644)
	if _, _, err := importInto(t, filepath.Join(dir, "z"), Options{Source: src}); err == nil || !strings.Contains(err.Error(), "decompress it first") {
		t.Errorf("gzip-compressed docker archive: %v", err)
	}
}
