package tftpd

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// TestOverlay: the first layer that has a name answers; a refusal that is
// not "does not exist" is final; the second layer is confined by os.Root.
func TestOverlay(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tftp")
	must(t, os.MkdirAll(filepath.Join(dir, "pxelinux.cfg"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "pxelinux.cfg", "default"), []byte("menu"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "undionly.kpxe"), []byte("shadowed"), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "secret"), []byte("outside"), 0o644))
	must(t, os.Symlink("../secret", filepath.Join(dir, "escape")))
	r, err := os.OpenRoot(dir)
	must(t, err)
	defer r.Close()
	store := fstest.MapFS{"undionly.kpxe": {Data: []byte("ipxe")}, "boot/default/vmlinuz": {Data: []byte("kernel")}}
	o := Overlay(store, r.FS())
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"undionly.kpxe", "ipxe", nil},
		{"boot/default/vmlinuz", "kernel", nil},
		{"pxelinux.cfg/default", "menu", nil},
		{"missing", "", fs.ErrNotExist},
		{"escape", "", nil}, // any error but a read of the outside file
	} {
		b, err := fs.ReadFile(o, tc.name)
		switch {
		case tc.want != "" && (err != nil || string(b) != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.name, b, err, tc.want)
		case tc.want == "" && err == nil:
			t.Errorf("%s: read %q, want an error", tc.name, b)
		case tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.err)
		}
		if _, serr := fs.Stat(o, tc.name); (serr == nil) != (err == nil) {
			t.Errorf("%s: Stat error %v disagrees with Open error %v", tc.name, serr, err)
		}
	}
	if _, err := o.Open("../x"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("Open(../x) = %v, want ErrInvalid", err)
	}
}
