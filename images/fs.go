package images

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"
)

// FS returns the tree that TFTP and HTTP serve:
//
//	{binary}               each iPXE binary of ipxe (undionly.kpxe, ipxe.efi, ...)
//	boot/{profile}/{file}  each file of each profile in the store
//
// It reads the store's current profiles at every Open, so profiles added
// later appear without a new FS. Paths are only ever mapped to blob paths
// and located binaries, never joined onto a directory, so no name can
// reach anything else.
func (s *Store) FS(ipxe IPXE) fs.FS { return s.FSOpening(ipxe, nil) }

// Opener opens the files of the served tree: an iPXE binary by its name, a profile's file by its
// blob's path in the store. A server passes one that confines both (an os.Root on ipxe_dir and on
// the store), so that TFTP and HTTP refuse the same symbolic links.
type Opener interface {
	Binary(name string) (*os.File, error)
	Blob(path string) (*os.File, error)
}

// FSOpening is FS with the files opened by open; nil opens the located paths as they are.
func (s *Store) FSOpening(ipxe IPXE, open Opener) fs.FS {
	bins := map[string]string{}
	for k, v := range ipxe.Files {
		bins[k] = v
	}
	return &serveFS{s: s, bins: bins, open: open}
}

type serveFS struct {
	s    *Store
	bins map[string]string
	open Opener // nil: os.Open of the located path
}

func (f *serveFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	notExist := &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	if name == "." {
		return f.rootDir(), nil
	}
	parts := strings.Split(name, "/")
	switch {
	case len(parts) == 1 && parts[0] != "boot":
		p, ok := f.bins[name]
		if !ok {
			return nil, notExist
		}
		if f.open != nil {
			return wrapNamed(f.open.Binary(name))(name)
		}
		return openNamed(p, name)
	case parts[0] != "boot":
		return nil, notExist
	case len(parts) == 1:
		return f.bootDir(), nil
	}
	return f.openProfile(parts[1:], notExist)
}

// rootDir lists the tree's top: the iPXE binaries found and the directory boot.
func (f *serveFS) rootDir() *dir {
	var ents []fs.DirEntry
	for n, p := range f.bins {
		if fi, err := os.Stat(p); err == nil {
			ents = append(ents, fs.FileInfoToDirEntry(namedInfo{fi, n}))
		}
	}
	ents = append(ents, fs.FileInfoToDirEntry(dirInfo("boot")))
	return newDir(".", ents)
}

// bootDir lists boot/: a directory per profile.
func (f *serveFS) bootDir() *dir {
	var ents []fs.DirEntry
	for _, p := range f.s.List() {
		ents = append(ents, fs.FileInfoToDirEntry(dirInfo(p.Name)))
	}
	return newDir("boot", ents)
}

// openProfile opens what is under boot/: parts is {profile} (the profile's directory) or
// {profile, file}; anything else, or a name the store lacks, is notExist.
func (f *serveFS) openProfile(parts []string, notExist error) (fs.File, error) {
	prof, err := f.s.Get(parts[0])
	if err != nil {
		return nil, notExist
	}
	switch len(parts) {
	case 1:
		var ents []fs.DirEntry
		for n, b := range prof.Files {
			// Stat the blob so that entries agree with Open(...).Stat().
			if fi, err := os.Stat(f.s.blobPath(b.SHA256)); err == nil {
				ents = append(ents, fs.FileInfoToDirEntry(namedInfo{fi, n}))
			}
		}
		return newDir(prof.Name, ents), nil
	case 2:
		b, ok := prof.Files[parts[1]]
		if !ok {
			return nil, notExist
		}
		if f.open != nil {
			return wrapNamed(f.open.Blob(f.s.blobPath(b.SHA256)))(parts[1])
		}
		return openNamed(f.s.blobPath(b.SHA256), parts[1])
	}
	return nil, notExist
}

var errIsDir = errors.New("is a directory")

// namedFile is an *os.File (so io.Seeker and io.ReaderAt for HTTP range
// requests and TFTP tsize) whose Stat reports the served name.
type namedFile struct {
	*os.File
	name string
}

func openNamed(path, name string) (fs.File, error) {
	return wrapNamed(os.Open(path))(name)
}

// wrapNamed turns an opened file (or the error opening it) into the served file of that name.
func wrapNamed(f *os.File, err error) func(name string) (fs.File, error) {
	return func(name string) (fs.File, error) {
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapPathErr(err)}
		}
		return namedFile{f, name}, nil
	}
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

func (f namedFile) Stat() (fs.FileInfo, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	return namedInfo{fi, f.name}, nil
}

type namedInfo struct {
	fs.FileInfo
	name string
}

func (i namedInfo) Name() string { return i.name }

type dirInfo string

func (d dirInfo) Name() string       { return string(d) }
func (d dirInfo) Size() int64        { return 0 }
func (d dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o555 }
func (d dirInfo) ModTime() time.Time { return time.Time{} }
func (d dirInfo) IsDir() bool        { return true }
func (d dirInfo) Sys() any           { return nil }

// dir is a synthetic directory listing.
type dir struct {
	name string
	ents []fs.DirEntry
	pos  int
}

func newDir(name string, ents []fs.DirEntry) *dir {
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return &dir{name: name, ents: ents}
}

func (d *dir) Stat() (fs.FileInfo, error) { return dirInfo(d.name), nil }
func (d *dir) Close() error               { return nil }
func (d *dir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errIsDir}
}

func (d *dir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.ents[d.pos:]
	if n <= 0 {
		d.pos = len(d.ents)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	d.pos += n
	return rest[:n], nil
}
