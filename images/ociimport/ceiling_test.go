package ociimport

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestImportCeilings: an image whose files hold more than MaxBytes, or whose layers hold more
// entries than MaxEntries, is refused before anything is written, naming the ceiling; one within
// both imports.
func TestImportCeilings(t *testing.T) {
	var layer []te
	for i := range 50 {
		layer = append(layer, file(fmt.Sprintf("data/f%02d", i), strings.Repeat("x", 1024)))
	}
	layer = append(layer, file("boot/vmlinuz-6.1.0", "kernel"))
	for _, tc := range []struct {
		name string
		opt  Options
		want string // "" = imports
	}{
		{"within both", Options{MaxBytes: 1 << 20, MaxEntries: 100}, ""},
		{"too many bytes", Options{MaxBytes: 10 << 10}, "over the ceiling of 10240 (--max-size)"},
		{"too many entries", Options{MaxEntries: 20}, "over 20 entries (--max-entries)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.opt.Source = writeLayout(t, dir, testImage(t, layer))
			st, _, err := importInto(t, dir, tc.opt)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("import: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrBadImage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want ErrBadImage with %q", err, tc.want)
			}
			assertEmptyStore(t, st.Dir())
		})
	}
}
