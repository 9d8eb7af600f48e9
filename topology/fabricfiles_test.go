package topology

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFabricFiles: the net file is written whole at its path, a directory that is not there is
// the create's error, and a missing identities file is the open's.
func TestFabricFiles(t *testing.T) {
	f, err := OpenFabric("pgft:2;4,4;1,4;1,1")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fab.net")
	if err := WriteIBSimNetFile(path, f); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	if err := WriteIBSimNet(&want, f); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != want.String() {
		t.Errorf("net file: %v\n%s", err, got)
	}
	if err := WriteIBSimNetFile(filepath.Join(t.TempDir(), "no", "fab.net"), f); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("net file in a missing directory: %v", err)
	}
	if _, err := f.WithLIDsFile(filepath.Join(t.TempDir(), "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing identities file: %v", err)
	}
}
