package report

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes the report to path in format without ever leaving a partial file: it writes a
// temporary file in the same directory and renames it over path.
func (rep *Report) WriteFile(path, format string) error {
	f, err := CreateAtomic(path)
	if err != nil {
		return err
	}
	if err := rep.Write(f, format); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// AtomicFile is a temporary file that becomes path on Commit, or disappears on Abort.
type AtomicFile struct {
	*os.File
	path string
}

// CreateAtomic creates a temporary file beside path; it fails at once when the directory is not
// writable, so a caller can check the output path before the work.
func CreateAtomic(path string) (*AtomicFile, error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, err)
	}
	return &AtomicFile{File: f, path: path}, nil
}

// Commit closes the temporary file and renames it to the final path (mode 0644).
func (a *AtomicFile) Commit() error {
	if err := a.File.Chmod(0o644); err != nil {
		a.Abort()
		return fmt.Errorf("cannot write %s: %w", a.path, err)
	}
	if err := a.File.Close(); err != nil {
		os.Remove(a.File.Name())
		return fmt.Errorf("cannot write %s: %w", a.path, err)
	}
	if err := os.Rename(a.File.Name(), a.path); err != nil {
		os.Remove(a.File.Name())
		return fmt.Errorf("cannot write %s: %w", a.path, err)
	}
	return nil
}

// Abort closes and removes the temporary file.
func (a *AtomicFile) Abort() {
	a.File.Close()
	os.Remove(a.File.Name())
}
