package tftpd

import (
	"errors"
	"io/fs"
)

// Overlay serves several file systems as one: a name is looked up in each
// in order, and the first that has it answers. Only "does not exist" moves
// on to the next; any other error (permission, a symbolic link leading out
// of an os.Root) is the answer, so that a later layer cannot serve what an
// earlier one refused. Directories are not merged: Overlay is for reading
// files by name, which is all a TFTP server does.
func Overlay(layers ...fs.FS) fs.FS { return overlay(layers) }

type overlay []fs.FS

// Open implements fs.FS.
func (o overlay) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	err := error(&fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist})
	for _, l := range o {
		var f fs.File
		if f, err = l.Open(name); !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
	}
	return nil, err
}

// Stat implements fs.StatFS, so that the server's stat before open does
// not open the file twice.
func (o overlay) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	err := error(&fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist})
	for _, l := range o {
		var fi fs.FileInfo
		if fi, err = fs.Stat(l, name); !errors.Is(err, fs.ErrNotExist) {
			return fi, err
		}
	}
	return nil, err
}
