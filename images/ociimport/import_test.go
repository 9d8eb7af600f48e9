package ociimport

import (
	"archive/tar"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The kernel every image of the table carries, unless the case says otherwise.
var bootLayer = []te{dir("boot/"), file("boot/vmlinuz-6.1.0", "KERNEL")}

func wantDir(n string) entry { return entry{Name: n, Mode: "40755", Owner: "0:0", Nlink: 2} }
func wantFile(n, data string) entry {
	return entry{Name: n, Mode: "100644", Owner: "0:0", Nlink: 1, Data: data}
}

var wantBoot = []entry{wantDir("boot")}
var wantKernel = wantFile("boot/vmlinuz-6.1.0", "KERNEL")

func TestImportTree(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layers [][]te
		want   []entry // after the boot directory; the kernel file is expected last
	}{
		{
			name: "whiteouts and opaque directories across layers",
			layers: [][]te{
				{dir("etc/"), file("etc/a", "a1"), file("etc/b", "b1"), dir("usr/"), dir("usr/lib/"), file("usr/lib/x", "x"), dir("var/"), dir("var/cache/"), file("var/cache/c", "c")},
				{whiteout("etc/.wh.a"), file("etc/b", "b2"), whiteout("usr/.wh..wh..opq"), file("usr/y", "y"), whiteout("var/.wh.cache")},
				{file("etc/a", "a3")},
			},
			want: []entry{wantDir("etc"), wantDir("usr"), wantDir("var"),
				wantFile("etc/b", "b2"), wantFile("usr/y", "y"), wantFile("etc/a", "a3")},
		},
		{
			name: "an opaque directory declared again keeps only its own layer's files",
			layers: [][]te{
				{dir("opt/"), dir("opt/app/"), file("opt/app/old", "o"), file("opt/keep", "k")},
				{dir("opt/"), dir("opt/app/"), file("opt/app/new", "n"), whiteout("opt/app/.wh..wh..opq")},
			},
			want: []entry{wantDir("opt"), wantDir("opt/app"), wantFile("opt/keep", "k"), wantFile("opt/app/new", "n")},
		},
		{
			name:   "a PAX global header is no file",
			layers: [][]te{{te{name: "pax_global_header", typ: tar.TypeXGlobalHeader, data: "made by git archive"}, file("etc/issue", "Debian")}},
			want:   []entry{wantDir("etc"), wantFile("etc/issue", "Debian")},
		},
		{
			name: "a file replaces a directory and its contents",
			layers: [][]te{
				{dir("srv/"), dir("srv/d/"), file("srv/d/f", "f")},
				{file("srv/d", "now a file")},
			},
			want: []entry{wantDir("srv"), wantFile("srv/d", "now a file")},
		},
		{
			name: "hard links share an inode, across layers and after the first name is whited out",
			layers: [][]te{
				{dir("bin/"), te{name: "bin/busybox", data: "BB", mode: 0o755}, hardlink("bin/sh", "bin/busybox")},
				{hardlink("bin/ls", "bin/sh"), whiteout("bin/.wh.busybox")},
			},
			want: []entry{wantDir("bin"),
				{Name: "bin/sh", Mode: "100755", Owner: "0:0", Nlink: 2, Data: "BB"},
				{Name: "bin/ls", Mode: "100755", Owner: "0:0", Nlink: 2, LinkOf: "bin/sh"}},
		},
		{
			name: "a hard link keeps the old contents when its target is replaced",
			layers: [][]te{
				{file("a", "old"), hardlink("b", "a")},
				{file("a", "new")},
			},
			want: []entry{wantFile("b", "old"), wantFile("a", "new")},
		},
		{
			name: "device nodes, fifos, owners, modes and symlinks are kept",
			layers: [][]te{{
				dir("dev/"), chardev("dev/null", 1, 3), te{name: "dev/sda", typ: tar.TypeBlock, mode: 0o660, gid: 6, maj: 8},
				te{name: "run/fifo", typ: tar.TypeFifo, mode: 0o600},
				te{name: "usr/bin/su", data: "SU", mode: 0o4755, uid: 0, gid: 0},
				te{name: "home/u/f", data: "F", mode: 0o600, uid: 1000, gid: 100},
				symlink("lib", "usr/lib"), symlink("etc/mtab", "/proc/self/mounts"), symlink("usr/lib/up", "../../lib"),
			}},
			want: []entry{wantDir("dev"), wantDir("etc"), wantDir("home"), wantDir("home/u"), wantDir("run"), wantDir("usr"), wantDir("usr/bin"), wantDir("usr/lib"),
				{Name: "dev/null", Mode: "20666", Owner: "0:0", Nlink: 1, Dev: "1:3"},
				{Name: "dev/sda", Mode: "60660", Owner: "0:6", Nlink: 1, Dev: "8:0"},
				{Name: "run/fifo", Mode: "10600", Owner: "0:0", Nlink: 1},
				{Name: "usr/bin/su", Mode: "104755", Owner: "0:0", Nlink: 1, Data: "SU"},
				{Name: "home/u/f", Mode: "100600", Owner: "1000:100", Nlink: 1, Data: "F"},
				{Name: "lib", Mode: "120777", Owner: "0:0", Nlink: 1, Data: "usr/lib"},
				{Name: "etc/mtab", Mode: "120777", Owner: "0:0", Nlink: 1, Data: "/proc/self/mounts"},
				{Name: "usr/lib/up", Mode: "120777", Owner: "0:0", Nlink: 1, Data: "../../lib"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := writeLayout(t, dir, testImage(t, append([][]te{bootLayer}, tc.layers...)...))
			st, res, err := importInto(t, dir, Options{Source: src})
			if err != nil {
				t.Fatal(err)
			}
			initrd, _ := st.BlobPath("test", res.Profile.Initrd)
			// Directories first, in path order; then the files, layer by layer.
			want := append(append([]entry{}, wantBoot...), tc.want[:countDirs(tc.want)]...)
			sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
			want = append(append(want, wantKernel), tc.want[countDirs(tc.want):]...)
			if diff := cmp.Diff(want, readCpio(t, initrd)); diff != "" {
				t.Errorf("archive (-want +got):\n%s", diff)
			}
		})
	}
}

func countDirs(es []entry) int {
	n := 0
	for n < len(es) && es[n].Mode == "40755" {
		n++
	}
	return n
}

// TestImportRefused: bad layers give one error naming the source, and nothing in the store.
func TestImportRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layers [][]te
		want   string
	}{
		{"symlink out of the root", [][]te{{symlink("etc/shadow", "../../etc/shadow")}}, `symlink "etc/shadow" -> "../../etc/shadow" points out of the image root`},
		{"name out of the root", [][]te{{file("../escape", "x")}}, `"../escape" leaves the image root`},
		{"hard link out of the root", [][]te{{hardlink("x", "../../etc/passwd")}}, `"../../etc/passwd" leaves the image root`},
		{"hard link to nothing", [][]te{{hardlink("x", "missing")}}, `hard link to "missing": no such file`},
		{"path through a symlink", [][]te{{symlink("lib", "/etc"), file("lib/x", "x")}}, `"lib/x": lib is not a directory`},
		{"no kernel", [][]te{{file("etc/hostname", "h")}}, "no kernel: the image has no /boot/vmlinuz* file; give one with --kernel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := writeLayout(t, dir, testImage(t, tc.layers...))
			st, _, err := importInto(t, dir, Options{Source: src})
			if err == nil || !errors.Is(err, ErrBadImage) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), src) {
				t.Fatalf("error %v; want ErrBadImage naming %s and %q", err, src, tc.want)
			}
			assertEmptyStore(t, st.Dir())
		})
	}
}

// assertEmptyStore fails when the store holds a manifest or any file in its blob directory.
func assertEmptyStore(t *testing.T, dir string) {
	t.Helper()
	var left []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("the store keeps %v after a failed import", left)
	}
}
