package ociimport

import (
	"archive/tar"
	"path"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/images"
)

// FuzzTreeApply feeds entry names, link targets and types through the tree: it never panics,
// and what it accepts never names a path outside the root nor a symlink that climbs out of it.
func FuzzTreeApply(f *testing.F) {
	f.Add("etc/passwd", "", byte(tar.TypeReg), "etc/.wh.passwd", "")
	f.Add("a/b", "../../x", byte(tar.TypeSymlink), "a/.wh..wh..opq", "a/c")
	f.Add("./x", "x", byte(tar.TypeLink), "../y", "/z")
	f.Add("/", "/", byte(tar.TypeDir), ".wh.a", "a/./b/../c")
	f.Fuzz(func(t *testing.T, name, link string, typ byte, second, third string) {
		tr := newTree()
		for i, n := range []string{name, second, third} {
			h := &tar.Header{Name: n, Linkname: link, Typeflag: typ, Mode: 0o644}
			if i > 0 {
				h.Typeflag = tar.TypeReg
			}
			_ = tr.apply(h, src{i % 2, i})
		}
		tr.finish()
		tr.walk(func(p string, n *node) {
			if p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || path.Clean(p) != p {
				t.Fatalf("path %q in the tree", p)
			}
			if n.meta.mode&images.CpioTypeMask == images.CpioSymlink && checkSymlink(p, n.meta.link) != nil {
				t.Fatalf("symlink %q -> %q escapes", p, n.meta.link)
			}
		})
		findKernel(tr)
	})
}
