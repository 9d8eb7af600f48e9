package images

import (
	"github.com/bootfabric/bootfabric/internal/testenv"

	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBuildInitramfsModules checks that modules land under lib/modules in the given order and
// that bad module files are refused.
func TestBuildInitramfsModules(t *testing.T) {
	bb := needBusybox(t)
	if err := checkStatic(bb); err != nil {
		testenv.Skip(t, "%v", err)
	}
	dir := t.TempDir()
	mod := func(name string, data string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(data), 0o644))
		return p
	}
	b, a := mod("b.ko", "\x7fELF-b"), mod("a.ko", "\x7fELF-a")
	var buf bytes.Buffer
	must(t, BuildInitramfs(&buf, InitramfsConfig{Busybox: bb, Modules: []string{b, a}}))
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var names []string
	for _, e := range parseNewc(t, raw) {
		got[e.name] = string(e.data)
		names = append(names, e.name)
	}
	if diff := cmp.Diff([]string{"lib", "lib/modules", "lib/modules/b.ko", "lib/modules/a.ko", "etc/modules.order"}, names[len(names)-5:]); diff != "" {
		t.Errorf("module entries (-want +got):\n%s", diff)
	}
	if got["etc/modules.order"] != "b.ko\na.ko\n" || got["lib/modules/a.ko"] != "\x7fELF-a" {
		t.Errorf("modules.order %q, a.ko %q", got["etc/modules.order"], got["lib/modules/a.ko"])
	}
	for _, tc := range []struct {
		name string
		mods []string
		want string
	}{
		{"missing", []string{filepath.Join(dir, "nope.ko")}, "no such file"},
		{"compressed", []string{mod("c.ko.xz", "x")}, "compressed"},
		{"not elf", []string{mod("d.ko", "text")}, "not an ELF"},
		{"duplicate", []string{a, a}, "already listed"},
	} {
		err := BuildInitramfs(io.Discard, InitramfsConfig{Busybox: bb, Modules: tc.mods})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want containing %q", tc.name, err, tc.want)
		}
	}
}
