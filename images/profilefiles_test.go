package images

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestProfileFromFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"vmlinuz", "initrd.img", "a/extra.cfg", "b/extra.cfg"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := func(f string) string { return filepath.Join(dir, f) }
	for _, tc := range []struct {
		name           string
		kernel, initrd string
		boot           []string
		want           Profile
		err            string
		notExist       bool
	}{
		{"kernel alone", at("vmlinuz"), "", nil, Profile{Name: "p", Cmdline: "c", Kernel: "vmlinuz"}, "", false},
		{"all three", at("vmlinuz"), at("initrd.img"), []string{at("a/extra.cfg")},
			Profile{Name: "p", Cmdline: "c", Kernel: "vmlinuz", Initrd: "initrd.img", BootFiles: []string{"extra.cfg"}}, "", false},
		{"the same file twice", at("vmlinuz"), "", []string{at("a/extra.cfg"), at("a/extra.cfg")},
			Profile{Name: "p", Cmdline: "c", Kernel: "vmlinuz", BootFiles: []string{"extra.cfg", "extra.cfg"}}, "", false},
		{"missing kernel", at("nope"), "", nil, Profile{}, "kernel: stat " + at("nope"), true},
		{"a directory", at("vmlinuz"), at("a"), nil, Profile{}, "initrd: " + at("a") + " is not a regular file", false},
		{"two files of one name", at("vmlinuz"), "", []string{at("a/extra.cfg"), at("b/extra.cfg")}, Profile{},
			"boot-file " + at("b/extra.cfg") + ": a file named extra.cfg is already given (" + at("a/extra.cfg") + "); names must differ", false},
	} {
		p, files, err := ProfileFromFiles("p", "c", tc.kernel, tc.initrd, tc.boot)
		var fe *FileArgError
		if tc.err != "" {
			if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), tc.err) || errors.Is(err, fs.ErrNotExist) != tc.notExist {
				t.Errorf("%s: %v, want a FileArgError %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || p.Name != tc.want.Name || p.Cmdline != tc.want.Cmdline || p.Kernel != tc.want.Kernel ||
			p.Initrd != tc.want.Initrd || !slices.Equal(p.BootFiles, tc.want.BootFiles) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, p, err, tc.want)
		}
		for _, n := range p.FileNames() {
			if filepath.Base(files[n]) != n {
				t.Errorf("%s: file %s maps to %q", tc.name, n, files[n])
			}
		}
	}
}

func TestSummarize(t *testing.T) {
	p := Profile{Name: "p", Kernel: "k", Initrd: "i", BootFiles: []string{"b"},
		Files: map[string]Blob{"k": {SHA256: "1", Size: 10}, "i": {SHA256: "2", Size: 200}, "b": {SHA256: "3", Size: 3000}}}
	s := p.Summarize()
	if s.Bytes != 3210 || s.KernelBytes != 10 || s.InitrdBytes != 200 || s.Name != "p" || len(s.Files) != 3 {
		t.Errorf("summary %+v", s)
	}
	if s := (Profile{Name: "q", Kernel: "k", Files: map[string]Blob{"k": {Size: 5}}}).Summarize(); s.InitrdBytes != 0 || s.Bytes != 5 {
		t.Errorf("without an initrd: %+v", s)
	}
}
