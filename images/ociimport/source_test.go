package ociimport

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImportFormats: an OCI layout, an OCI archive and a docker save tarball of one image give
// the same archive and kernel, in both compressions.
func TestImportFormats(t *testing.T) {
	img := testImage(t, bootLayer, []te{dir("etc/"), file("etc/os-release", "ID=test")})
	var first []entry
	for _, tc := range []struct {
		format      string
		write       func(testing.TB, string, v1.Image) string
		compression string
	}{
		{"oci-layout", writeLayout, Gzip},
		{"oci-archive", writeOCIArchive, Zstd},
		{"docker-archive", writeDockerArchive, Gzip},
	} {
		t.Run(tc.format, func(t *testing.T) {
			dir := t.TempDir()
			st, res, err := importInto(t, dir, Options{Source: tc.write(t, dir, img), Compression: tc.compression, Cmdline: "console=ttyS0"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Format != tc.format || res.Layers != 2 || res.KernelSource != "/boot/vmlinuz-6.1.0" || res.Compression != tc.compression {
				t.Errorf("result %+v", res)
			}
			p := res.Profile
			if p.Kernel != "vmlinuz" || p.Initrd != initrdName(tc.compression) || p.Cmdline != "console=ttyS0" || p.Files["vmlinuz"].Size != 6 {
				t.Errorf("profile %+v", p)
			}
			kernel, _ := st.BlobPath("test", "vmlinuz")
			if b, err := os.ReadFile(kernel); err != nil || string(b) != "KERNEL" {
				t.Errorf("kernel %q %v", b, err)
			}
			initrd, _ := st.BlobPath("test", p.Initrd)
			got := readCpio(t, initrd)
			if first == nil {
				first = got
			} else if diff := cmp.Diff(first, got); diff != "" {
				t.Errorf("archive differs from the OCI layout's (-layout +%s):\n%s", tc.format, diff)
			}
			if probs := st.Verify(); len(probs) > 0 {
				t.Errorf("verify: %v", probs)
			}
		})
	}
}

// TestImportZstdLayers: a layout whose layers are zstd-compressed (OCI allows it; BuildKit
// writes them) imports as its gzip twin does.
func TestImportZstdLayers(t *testing.T) {
	var layers []v1.Layer
	for _, entries := range [][]te{bootLayer, {dir("etc/"), file("etc/os-release", "ID=test")}, {whiteout("etc/.wh.os-release")}} {
		b := tarBytes(t, entries)
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
			tarball.WithCompression(compression.ZStd))
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := writeLayout(t, dir, img)
	zstdBlobs := 0
	filepath.Walk(filepath.Join(src, "blobs"), func(p string, fi os.FileInfo, err error) error {
		if b, _ := os.ReadFile(p); err == nil && !fi.IsDir() && bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
			zstdBlobs++
		}
		return nil
	})
	if zstdBlobs != 3 {
		t.Fatalf("%d zstd blobs in the layout, want 3", zstdBlobs)
	}
	st, res, err := importInto(t, dir, Options{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	initrd, _ := st.BlobPath("test", res.Profile.Initrd)
	want := []entry{wantDir("boot"), wantDir("etc"), wantKernel}
	if diff := cmp.Diff(want, readCpio(t, initrd)); diff != "" {
		t.Errorf("archive (-want +got):\n%s", diff)
	}
}

// TestImportKernel: the newest /boot/vmlinuz* through symlinks, or the file given.
func TestImportKernel(t *testing.T) {
	tmp := t.TempDir()
	img := testImage(t, []te{dir("boot/"), file("boot/vmlinuz-6.9.0", "OLD"), file("boot/vmlinuz-6.10.0", "NEW")},
		[]te{symlink("boot/vmlinuz-6.99", "/vmlinuz"), symlink("vmlinuz", "boot/vmlinuz-6.10.0")})
	src := writeLayout(t, tmp, img)
	st, res, err := importInto(t, tmp, Options{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	kernel, _ := st.BlobPath("test", "vmlinuz")
	if b, _ := os.ReadFile(kernel); string(b) != "NEW" || res.KernelSource != "/boot/vmlinuz-6.10.0" {
		t.Errorf("kernel %q from %s, want NEW from /boot/vmlinuz-6.10.0", b, res.KernelSource)
	}

	// No /boot at all, but a kernel file given.
	tmp = t.TempDir()
	given := filepath.Join(tmp, "bzImage")
	os.WriteFile(given, []byte("GIVEN"), 0o644)
	src = writeLayout(t, tmp, testImage(t, []te{file("etc/hostname", "h")}))
	st, res, err = importInto(t, tmp, Options{Source: src, Kernel: given})
	if err != nil {
		t.Fatal(err)
	}
	kernel, _ = st.BlobPath("test", "vmlinuz")
	if b, _ := os.ReadFile(kernel); string(b) != "GIVEN" || res.KernelSource != given {
		t.Errorf("kernel %q from %s", b, res.KernelSource)
	}
}

// TestImportCorrupt: a truncated or damaged source is one error naming the file, and the store
// keeps nothing.
func TestImportCorrupt(t *testing.T) {
	noise := make([]byte, 64<<10)
	rand.NewChaCha8([32]byte{1}).Read(noise)
	img := testImage(t, bootLayer, []te{file("big", string(noise))})
	for _, tc := range []struct {
		name  string
		build func(t *testing.T, dir string) string
		want  string
	}{
		{"truncated docker tarball", func(t *testing.T, dir string) string {
			p := writeDockerArchive(t, dir, img)
			truncate(t, p, 0.6)
			return p
		}, ""},
		{"docker tarball cut at a block boundary", func(t *testing.T, dir string) string {
			p := writeDockerArchive(t, dir, img)
			os.Truncate(p, lastMemberOffset(t, p))
			return p
		}, "truncated"},
		{"truncated OCI archive", func(t *testing.T, dir string) string {
			p := writeOCIArchive(t, dir, img)
			truncate(t, p, 0.5)
			return p
		}, ""},
		{"damaged layer blob in a layout", func(t *testing.T, dir string) string {
			p := writeLayout(t, dir, img)
			damageLargestBlob(t, p)
			return p
		}, ""},
		{"not a tar", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "junk.tar")
			os.WriteFile(p, []byte(strings.Repeat("junk", 300)), 0o644)
			return p
		}, "reading it as a tar archive"},
		{"truncated gzip root tarball", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "img.tar.gz")
			os.WriteFile(p, []byte{0x1f, 0x8b, 8, 0}, 0o644)
			return p
		}, "gzip"},
		{"missing", func(t *testing.T, dir string) string { return filepath.Join(dir, "nope.tar") }, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := tc.build(t, dir)
			st, _, err := importInto(t, dir, Options{Source: src})
			if err == nil || !errors.Is(err, ErrBadImage) || !strings.Contains(err.Error(), src+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want ErrBadImage naming %s (and %q)", err, src, tc.want)
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("error spans lines: %q", err)
			}
			t.Log(err)
			assertEmptyStore(t, st.Dir())
		})
	}
}

func truncate(t *testing.T, path string, frac float64) {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(float64(fi.Size())*frac)); err != nil {
		t.Fatal(err)
	}
}

// damageLargestBlob flips bytes in the middle of the layout's largest blob (a layer).
func damageLargestBlob(t *testing.T, layoutDir string) {
	var largest string
	var size int64
	filepath.Walk(filepath.Join(layoutDir, "blobs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && fi.Size() > size {
			largest, size = p, fi.Size()
		}
		return nil
	})
	b, err := os.ReadFile(largest)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 2; i < len(b)/2+16 && i < len(b); i++ {
		b[i] ^= 0x5a
	}
	os.Chmod(largest, 0o644)
	if err := os.WriteFile(largest, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lastMemberOffset is where the tar's last member's header starts.
func lastMemberOffset(t *testing.T, path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cr := &countingReader{r: f}
	tr := tar.NewReader(cr)
	var last int64
	for {
		// Next has read the member's header (one block: these names need no PAX record).
		if _, err := tr.Next(); err != nil {
			return last
		}
		last = cr.n - 512
	}
}

// TestImportPlatform: from a multi-platform index the image of the platform asked for is taken;
// a platform the index lacks is an error listing those it has.
func TestImportPlatform(t *testing.T) {
	amd := testImage(t, bootLayer, []te{file("arch", "amd64")})
	arm := testImage(t, bootLayer, []te{file("arch", "arm64")})
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}})
	dir := t.TempDir()
	p, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
	if err == nil {
		err = p.AppendIndex(idx)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ platform, want string }{{"linux/arm64", "arm64"}, {"linux/amd64", "amd64"}} {
		st, res, err := importInto(t, filepath.Join(dir, tc.want), Options{Source: string(p), Platform: tc.platform})
		if err != nil {
			t.Fatal(err)
		}
		initrd, _ := st.BlobPath("test", res.Profile.Initrd)
		if got := readCpio(t, initrd); got[len(got)-1].Data != tc.want {
			t.Errorf("%s: took the image with arch %q", tc.platform, got[len(got)-1].Data)
		}
	}
	_, _, err = importInto(t, filepath.Join(dir, "s390x"), Options{Source: string(p), Platform: "linux/s390x"})
	if err == nil || !strings.Contains(err.Error(), "no image for platform linux/s390x in the index (it has: linux/amd64, linux/arm64/v8)") {
		t.Errorf("missing platform: %v", err)
	}
}
