package ociimport

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/images"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/klauspost/compress/zstd"
)

// te is a tar entry a test layer holds.
type te struct {
	name string
	typ  byte // tar type; 0 is a regular file
	data string
	link string // symlink or hard link target
	mode int64
	uid  int
	gid  int
	maj  int64
	min  int64
}

func file(n, data string) te { return te{name: n, data: data, mode: 0o644} }
func dir(n string) te        { return te{name: n, typ: tar.TypeDir, mode: 0o755} }
func symlink(n, target string) te {
	return te{name: n, typ: tar.TypeSymlink, link: target, mode: 0o777}
}
func hardlink(n, target string) te { return te{name: n, typ: tar.TypeLink, link: target, mode: 0o644} }
func whiteout(n string) te         { return file(n, "") }
func chardev(n string, maj, min int64) te {
	return te{name: n, typ: tar.TypeChar, mode: 0o666, maj: maj, min: min}
}

// tarBytes writes entries as a tar.
func tarBytes(t testing.TB, entries []te) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: e.mode, Uid: e.uid, Gid: e.gid, Linkname: e.link,
			Devmajor: e.maj, Devminor: e.min, ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX}
		if typ == tar.TypeReg {
			h.Size = int64(len(e.data))
		}
		if typ == tar.TypeXGlobalHeader {
			h = &tar.Header{Name: e.name, Typeflag: typ, PAXRecords: map[string]string{"comment": e.data}, Format: tar.FormatPAX}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeXGlobalHeader {
			continue
		}
		if _, err := tw.Write([]byte(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// testImage builds an image with one layer per entry list.
func testImage(t testing.TB, layers ...[]te) v1.Image {
	t.Helper()
	img := empty.Image
	for _, entries := range layers {
		b := tarBytes(t, entries)
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// writeLayout writes img as an OCI layout directory under dir.
func writeLayout(t testing.TB, dir string, img v1.Image) string {
	t.Helper()
	p, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	return string(p)
}

// writeDockerArchive writes img as docker save would.
func writeDockerArchive(t testing.TB, dir string, img v1.Image) string {
	t.Helper()
	tag, err := name.NewTag("example.org/test:latest")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "docker.tar")
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeOCIArchive writes img as an OCI layout in a tar.
func writeOCIArchive(t testing.TB, dir string, img v1.Image) string {
	t.Helper()
	src := writeLayout(t, filepath.Join(dir, "oci"), img)
	path := filepath.Join(dir, "oci.tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: fi.Size(), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil {
			_, err = tw.Write(b)
		}
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// entry is one cpio entry as the tests compare them.
type entry struct {
	Name   string
	Mode   string // octal, type bits included
	Owner  string // uid:gid
	Nlink  int
	Data   string // file contents or symlink target
	Dev    string // major:minor of a device node
	LinkOf string // for a hard link: the first path of its inode
}

// readCpio decompresses and parses a newc archive.
func readCpio(t testing.TB, path string) []entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader
	br := bufio.NewReader(f)
	f2 := br
	if magic, _ := br.Peek(4); bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		d, err := zstd.NewReader(f2)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		r = d
	} else if r, err = gzip.NewReader(f2); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	out, err := parseCpio(all)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func parseCpio(b []byte) ([]entry, error) {
	var out []entry
	firstOf := map[uint64]string{}
	off := 0
	field := func(i int) uint64 {
		v, _ := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
		return v
	}
	align := func(n int) int { return (n + 3) &^ 3 }
	for {
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			return nil, fmt.Errorf("bad header at %d", off)
		}
		ino, mode, uid, gid, nlink := field(0), field(1), field(2), field(3), field(4)
		size, rmaj, rmin, nsize := int(field(6)), field(9), field(10), int(field(11))
		nameEnd := off + 110 + nsize - 1
		name := string(b[off+110 : nameEnd])
		dataOff := align(off + 110 + nsize)
		data := string(b[dataOff : dataOff+size])
		off = align(dataOff + size)
		if name == "TRAILER!!!" {
			return out, nil
		}
		e := entry{Name: name, Mode: strconv.FormatUint(mode, 8), Owner: fmt.Sprintf("%d:%d", uid, gid), Nlink: int(nlink), Data: data}
		if t := mode & images.CpioTypeMask; t == images.CpioCharDev || t == images.CpioBlockDev {
			e.Dev = fmt.Sprintf("%d:%d", rmaj, rmin)
		}
		if mode&images.CpioTypeMask == images.CpioRegular && nlink > 1 {
			if first, ok := firstOf[ino]; ok {
				e.LinkOf = first
			} else {
				firstOf[ino] = name
			}
		}
		out = append(out, e)
	}
}

// importInto imports source into a new store under dir.
func importInto(t testing.TB, dir string, opt Options) (*images.Store, Result, error) {
	t.Helper()
	st, err := images.Create(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	if opt.Name == "" {
		opt.Name = "test"
	}
	opt.TempDir = dir
	res, err := Import(context.Background(), st, opt)
	return st, res, err
}
