// Package atomicfile writes files that a reader sees whole or not at all: the data goes to a
// temporary file beside the target, is synced and given its mode, and is renamed over the target.
// A crash or an error leaves the old file, never half a new one.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// File is a temporary file that becomes its target on Commit, or disappears on Abort.
type File struct {
	*os.File
	path string
	mode os.FileMode
}

// Create makes the temporary file beside path (so that the rename stays in one file system); it
// fails at once when the directory is not writable.
func Create(path string, mode os.FileMode) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	return &File{File: f, path: path, mode: mode}, nil
}

// Commit syncs and closes the temporary file, gives it its mode and renames it over the target.
// On an error the temporary file is removed and the target left as it was.
func (f *File) Commit() error {
	err := f.File.Sync()
	if err == nil {
		err = f.File.Chmod(f.mode)
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.File.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.File.Name())
	}
	return err
}

// Abort closes and removes the temporary file.
func (f *File) Abort() {
	f.File.Close()
	os.Remove(f.File.Name())
}

// Write makes path hold what write writes, with mode, atomically.
func Write(path string, mode os.FileMode, write func(io.Writer) error) error {
	f, err := Create(path, mode)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// WriteFile makes path hold data, with mode, atomically.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	return Write(path, mode, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
