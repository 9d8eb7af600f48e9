package ociimport

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bootfabric/bootfabric/images"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// entryFunc is called for each tar entry of a layer; r reads the entry's data.
type entryFunc func(h *tar.Header, r io.Reader, at src) error

// layerReader streams layers and checks each against its diff ID (the sha256 of the
// uncompressed tar the image's config records), so that a corrupt layer is refused even when
// it still decompresses.
type layerReader struct {
	layers []v1.Layer
	blobs  layout.Path // the layout's directory, "" for a docker save tarball
	rootfs string      // a root file system tarball, read as the only layer (layers is nil)
}

// count is the number of layers.
func (lr layerReader) count() int {
	if lr.rootfs != "" {
		return 1
	}
	return len(lr.layers)
}

// uncompressed opens layer l's tar. A layout's blob is decompressed here, with klauspost's
// readers (about twice as fast as compress/gzip, and each layer is read twice); anything else
// goes through go-containerregistry.
func (lr layerReader) uncompressed(l v1.Layer) (io.ReadCloser, error) {
	if lr.blobs == "" {
		return l.Uncompressed()
	}
	d, err := l.Digest()
	if err != nil {
		return nil, err
	}
	f, err := lr.blobs.Blob(d)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	magic, _ := br.Peek(4)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, err
		}
		return readCloser{zr, func() error { zr.Close(); return f.Close() }}, nil
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(128<<20))
		if err != nil {
			f.Close()
			return nil, err
		}
		return readCloser{zr, func() error { zr.Close(); return f.Close() }}, nil
	}
	return readCloser{br, f.Close}, nil
}

// readCloser is a reader with its own close.
type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// read calls f for every entry of layer i, then verifies the layer's digest.
func (lr layerReader) read(ctx context.Context, i int, f entryFunc) error {
	if lr.rootfs != "" {
		return lr.readRootfs(ctx, f)
	}
	l := lr.layers[i]
	want, err := l.DiffID()
	if err != nil {
		return lr.wrap(i, l, err)
	}
	rc, err := lr.uncompressed(l)
	if err != nil {
		return lr.wrap(i, l, err)
	}
	defer rc.Close()
	h := sha256.New()
	tee := io.TeeReader(rc, h)
	if err := readTar(ctx, tee, i, f); err != nil {
		return lr.wrap(i, l, err)
	}
	// The tar's end blocks and any padding are part of what the diff ID covers.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return lr.wrap(i, l, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); want.String() != got {
		return lr.wrap(i, l, fmt.Errorf("content is %s, the image says %s: the layer is corrupt", got, want))
	}
	return nil
}

// readTar calls f for every entry of the tar r, layer i.
func readTar(ctx context.Context, r io.Reader, i int, f entryFunc) error {
	tr := tar.NewReader(r)
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tar entry %d: %w", n, err)
		}
		if err := f(hdr, tr, src{i, n}); err != nil {
			return fmt.Errorf("%s: %w", hdr.Name, err)
		}
	}
}

// readRootfs reads the root file system tarball, decompressed, as layer 0. It has no digest to
// check; a truncated compressed stream fails in its decompressor, read to its end here.
func (lr layerReader) readRootfs(ctx context.Context, f entryFunc) error {
	file, err := os.Open(lr.rootfs)
	if err != nil {
		return err
	}
	defer file.Close()
	r, _, err := decompressed(bufio.NewReaderSize(file, 1<<20))
	if err != nil {
		return err
	}
	defer r.Close()
	if err := readTar(ctx, r, 0, f); err != nil {
		return tarError(err)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return tarError(err)
	}
	return nil
}

// decompressed returns br decompressed by its magic (gzip, zstd, xz, or none) and the
// compression's name ("" for none).
func decompressed(br *bufio.Reader) (io.ReadCloser, string, error) {
	magic, _ := br.Peek(6)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, "", fmt.Errorf("gzip: %w", err)
		}
		return zr, "gzip", nil
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(128<<20))
		if err != nil {
			return nil, "", fmt.Errorf("zstd: %w", err)
		}
		return readCloser{zr, func() error { zr.Close(); return nil }}, "zstd", nil
	case bytes.Equal(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		xr, err := xz.NewReader(br)
		if err != nil {
			return nil, "", fmt.Errorf("xz: %w", err)
		}
		return io.NopCloser(xr), "xz", nil
	}
	return io.NopCloser(br), "", nil
}

func (lr layerReader) wrap(i int, l v1.Layer, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	d, derr := l.Digest()
	if derr != nil {
		return fmt.Errorf("layer %d of %d: %w", i+1, len(lr.layers), err)
	}
	return fmt.Errorf("layer %d of %d (%s): %w", i+1, len(lr.layers), shortHash(d), err)
}

func shortHash(h v1.Hash) string {
	if len(h.Hex) > 12 {
		return h.Algorithm + ":" + h.Hex[:12]
	}
	return h.String()
}

// emitter writes the final tree as an archive during the second pass over the layers.
type emitter struct {
	t       *tree
	cw      *images.CpioWriter
	nextIno uint32
	entries int

	kernel    *inode    // the inode whose data is the boot kernel, if taken from the image
	kernelOut io.Writer // where the kernel's data is copied to as well
	// capture keeps the data of the image's modules the agent loads (decompressed after the pass)
	capture map[*inode]*bytes.Buffer
}

func newEmitter(t *tree) *emitter {
	return &emitter{t: t, nextIno: uint32(len(t.inodes)) + 1, capture: map[*inode]*bytes.Buffer{}}
}

// data writes the current entry's size bytes from r.
func (e *emitter) data(r io.Reader, size int64) error {
	_, err := io.CopyN(e.cw, r, size)
	return err
}

// bytes writes the current entry's data, held whole (a symlink's target, a script).
func (e *emitter) bytes(s string) error {
	_, err := e.cw.Write([]byte(s))
	return err
}

// dirs writes every directory, parents first.
func (e *emitter) dirs() error {
	var err error
	e.t.walk(func(p string, n *node) {
		if err != nil || n.children == nil {
			return
		}
		err = e.put(p, n.meta, e.ino(), 2, 0)
	})
	return err
}

func (e *emitter) ino() uint32 {
	e.nextIno++
	return e.nextIno - 1
}

func (e *emitter) put(name string, m meta, ino, nlink uint32, size int64) error {
	e.entries++
	return e.cw.WriteHeader(&images.CpioHeader{Name: name, Ino: ino, Mode: m.mode, UID: m.uid, GID: m.gid, Nlink: nlink,
		Mtime: m.mtime, Size: size, RMajor: m.rmajor, RMin: m.rmin})
}

// entry writes what of the layer entry at survives: a file's data under its primary path, a
// later hard link, a symlink or a device node. Directories were written by dirs.
func (e *emitter) entry(h *tar.Header, r io.Reader, at src) error {
	if in := e.t.inodes[at]; in != nil {
		return e.file(in, r)
	}
	p, err := cleanName(h.Name)
	if err != nil || p == "" || strings.HasPrefix(p[strings.LastIndex(p, "/")+1:], ".wh.") {
		return err
	}
	n := e.t.lookup(p)
	if n == nil || n.from != at || n.children != nil {
		return nil // replaced or removed by a later entry, or a directory
	}
	if in := n.inode; in != nil {
		if in.members[0] == p {
			return nil // written with the data
		}
		return e.put(p, n.meta, in.ino, uint32(len(in.members)), 0)
	}
	if err := e.put(p, n.meta, e.ino(), 1, int64(len(n.meta.link))); err != nil {
		return err
	}
	return e.bytes(n.meta.link)
}

// file writes an inode's data under its first path; its other paths follow as links.
func (e *emitter) file(in *inode, r io.Reader) error {
	n := e.t.lookup(in.members[0])
	if err := e.put(in.members[0], n.meta, in.ino, uint32(len(in.members)), n.meta.size); err != nil {
		return err
	}
	if in == e.kernel {
		r = io.TeeReader(r, e.kernelOut)
	}
	if buf := e.capture[in]; buf != nil {
		r = io.TeeReader(r, buf)
	}
	if err := e.data(r, n.meta.size); err != nil {
		return fmt.Errorf("copying %s: %w", in.members[0], err)
	}
	return nil
}
