package ociimport

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ErrBadImage is wrapped by every error caused by the image given (a missing, corrupt or
// unusable source) rather than by the store or the machine.
var ErrBadImage = errors.New("bad image")

// source is an opened image and what to remove once it has been read.
type source struct {
	img     v1.Image
	format  string      // "oci-layout", "oci-archive", "docker-archive" or "rootfs-tar"
	blobs   layout.Path // the layout's directory, "" for a docker save tarball
	rootfs  string      // a root file system tarball (img is nil)
	cleanup func()
}

// reader returns what reads the source's layers and records the image's digest and layer count.
func (s source) reader(res *Result) (layerReader, error) {
	if s.rootfs != "" {
		res.Layers = 1
		return layerReader{rootfs: s.rootfs}, nil
	}
	if d, err := s.img.Digest(); err == nil {
		res.Digest = d.String()
	}
	layers, err := s.img.Layers()
	if err != nil {
		return layerReader{}, err
	}
	res.Layers = len(layers)
	return layerReader{layers: layers, blobs: s.blobs}, nil
}

// openSource opens the image at path: an OCI layout directory, an OCI archive, a docker save
// tarball or a root file system tarball (plain, gzip, zstd or xz), told apart by content. An OCI archive is unpacked into a directory under tmpDir, since go-containerregistry
// reads layouts only from directories.
func openSource(ctx context.Context, path string, want v1.Platform, tmpDir string) (source, error) {
	fi, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is in the message already
		}
		return source{}, err
	}
	if fi.IsDir() {
		img, err := layoutImage(path, want)
		return source{img: img, format: "oci-layout", blobs: layout.Path(path), cleanup: func() {}}, err
	}
	kind, err := archiveKind(path)
	if err != nil {
		return source{}, err
	}
	if kind == "rootfs-tar" {
		return source{format: kind, rootfs: path, cleanup: func() {}}, nil
	}
	if kind == "docker-archive" {
		img, err := tarball.ImageFromPath(path, nil)
		return source{img: img, format: kind, cleanup: func() {}}, err
	}
	dir, err := os.MkdirTemp(tmpDir, "bootctl-oci-*")
	if err != nil {
		return source{}, fmt.Errorf("unpacking the OCI archive: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := unpackArchive(ctx, path, dir); err != nil {
		cleanup()
		return source{}, err
	}
	img, err := layoutImage(dir, want)
	if err != nil {
		cleanup()
		return source{}, err
	}
	return source{img: img, format: kind, blobs: layout.Path(dir), cleanup: cleanup}, nil
}

// archiveKind tells a docker save tarball (manifest.json) from an OCI archive (oci-layout) by
// their member names (docker save of Docker 25 and later writes both, and either reader works),
// and both from a root file system tarball (what mmdebstrap or tar -C root writes), which has
// neither. A compressed tarball is a root file system: docker save and OCI archives are plain.
func archiveKind(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	r, compression, err := decompressed(br)
	if err != nil {
		return "", err
	}
	defer r.Close()
	if compression != "" {
		return compressedKind(r, compression)
	}
	cr := &countingReader{r: br}
	tr := tar.NewReader(cr)
	oci, entries := false, 0
	for ; ; entries++ {
		h, err := tr.Next()
		if err == io.EOF {
			if err := checkTarEnd(f, cr.n); err != nil {
				return "", err
			}
			break
		}
		if err != nil {
			return "", tarError(err)
		}
		switch strings.TrimPrefix(h.Name, "./") {
		case "manifest.json":
			return "docker-archive", nil
		case "oci-layout":
			oci = true
		}
	}
	switch {
	case oci:
		return "oci-archive", nil
	case entries == 0:
		return "", errors.New("is an empty tar archive")
	}
	return "rootfs-tar", nil
}

// compressedKind checks that a compressed tarball starts as a root file system, not as a
// compressed image archive, which go-containerregistry reads only uncompressed.
func compressedKind(r io.Reader, compression string) (string, error) {
	tr := tar.NewReader(r)
	for i := 0; i < 16; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			if i == 0 {
				return "", fmt.Errorf("is an empty %s-compressed tar archive", compression)
			}
			break
		}
		if err != nil {
			return "", fmt.Errorf("is %s-compressed, but not a tar inside: %w", compression, tarError(err))
		}
		switch strings.TrimPrefix(h.Name, "./") {
		case "manifest.json", "oci-layout", "index.json":
			return "", fmt.Errorf("is a %s-compressed image archive; decompress it first (it has %s)", compression, h.Name)
		}
	}
	return "rootfs-tar", nil
}

// unpackArchive writes the regular files of the tar at path under dir, refusing names that leave it.
func unpackArchive(ctx context.Context, path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cr := &countingReader{r: bufio.NewReader(f)}
	tr := tar.NewReader(cr)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			return checkTarEnd(f, cr.n)
		}
		if err != nil {
			return tarError(err)
		}
		if h.Typeflag != tar.TypeReg { // archive/tar reads the old TypeRegA as TypeReg
			continue
		}
		name, err := cleanName(h.Name)
		if err != nil || name == "" {
			return fmt.Errorf("member %q: %w", h.Name, err)
		}
		if err := unpackFile(tr, filepath.Join(dir, filepath.FromSlash(name)), h.Size); err != nil {
			return fmt.Errorf("member %q: %w", h.Name, err)
		}
	}
}

func unpackFile(r io.Reader, dst string, size int64) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.CopyN(out, r, size)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// layoutImage picks the image of the layout in dir for the platform want; an index inside the
// index (as docker's layouts have) is searched too.
func layoutImage(dir string, want v1.Platform) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("not an OCI image layout: %w", err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("reading the OCI index: %w", err)
	}
	var seen []string
	img, err := pickImage(idx, want, &seen, 0)
	if err != nil {
		return nil, err
	}
	if img == nil {
		return nil, fmt.Errorf("no image for platform %s in the index (it has: %s)", want.String(), strings.Join(seen, ", "))
	}
	return img, nil
}

// pickImage returns the first image of idx (depth-first) whose platform satisfies want or is
// not given, nil if none; seen collects the platforms passed over, for the error.
func pickImage(idx v1.ImageIndex, want v1.Platform, seen *[]string, depth int) (v1.Image, error) {
	if depth > 4 {
		return nil, errors.New("indexes nested more than 4 deep")
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the OCI index: %w", err)
	}
	for _, d := range m.Manifests {
		switch {
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("index %s: %w", d.Digest, err)
			}
			if img, err := pickImage(child, want, seen, depth+1); img != nil || err != nil {
				return img, err
			}
		case d.MediaType.IsImage() && (d.Platform == nil || d.Platform.Satisfies(want)):
			img, err := idx.Image(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("image %s: %w", d.Digest, err)
			}
			return img, nil
		case d.MediaType.IsImage():
			*seen = append(*seen, d.Platform.String())
		}
	}
	return nil, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// checkTarEnd tells a tar that ends with its two zero blocks from one cut at a block boundary,
// which archive/tar reads as a clean, shorter archive. end is where the reader stopped.
func checkTarEnd(f *os.File, end int64) error {
	if end < 1024 {
		return errors.New("is truncated: it ends before the tar end-of-archive blocks")
	}
	buf := make([]byte, 1024)
	if _, err := f.ReadAt(buf, end-1024); err != nil {
		return fmt.Errorf("reading the tar's end: %w", err)
	}
	for _, b := range buf {
		if b != 0 {
			return errors.New("is truncated: it ends without the tar end-of-archive blocks")
		}
	}
	return nil
}

// tarError says plainly that a tar reading error is a truncated file, when it is one.
func tarError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("is truncated: %w", err)
	}
	return fmt.Errorf("reading it as a tar archive: %w", err)
}
