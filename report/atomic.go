package report

import (
	"fmt"

	"github.com/bootfabric/bootfabric/internal/atomicfile"
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
	*atomicfile.File
	path string
}

// CreateAtomic creates a temporary file beside path; it fails at once when the directory is not
// writable, so a caller can check the output path before the work.
func CreateAtomic(path string) (*AtomicFile, error) {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, err)
	}
	return &AtomicFile{File: f, path: path}, nil
}

// Commit makes the temporary file the final path (mode 0644).
func (a *AtomicFile) Commit() error {
	if err := a.File.Commit(); err != nil {
		return fmt.Errorf("cannot write %s: %w", a.path, err)
	}
	return nil
}
