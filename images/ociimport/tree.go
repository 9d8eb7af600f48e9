package ociimport

import (
	"archive/tar"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/bootfabric/bootfabric/images"
)

// errBadPath is wrapped by errors about entry names and link targets.
var errBadPath = errors.New("refused")

// src names one tar entry: its layer and its position in that layer's tar.
type src struct{ layer, index int }

// meta is what the archive keeps of an entry: the newc header fields and a symlink's target.
type meta struct {
	mode         uint32 // type bits | permissions
	uid, gid     uint32
	mtime        uint32
	size         int64
	link         string // symlink target
	rmajor, rmin uint32
}

// node is one path of the final tree.
type node struct {
	from     src
	implicit bool // a parent directory no entry declared
	meta     meta
	children map[string]*node // directories only
	inode    *inode           // regular files, shared by hard links
}

// inode is a regular file's contents, shared by the paths hard-linked to it.
type inode struct {
	from    src      // the entry whose data this is
	members []string // surviving paths, the primary first; filled by tree.finish
	ino     uint32
}

// tree is the file system the layers build, headers only.
type tree struct {
	root   *node
	inodes map[src]*inode // by the entry that holds the data
}

func newTree() *tree {
	return &tree{root: &node{meta: meta{mode: images.CpioDir | 0o755}, children: map[string]*node{}}, inodes: map[src]*inode{}}
}

// cleanName turns a tar name into a path relative to the root ("" for the root itself) and
// refuses names that climb out of it.
func cleanName(name string) (string, error) {
	if strings.Contains(name, "\x00") {
		return "", fmt.Errorf("%w: %q has a NUL byte", errBadPath, name)
	}
	p := path.Clean(strings.TrimLeft(name, "/"))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("%w: %q leaves the image root", errBadPath, name)
	}
	if p == "." {
		return "", nil
	}
	return p, nil
}

// parent returns the directory node holding p, creating missing directories (from layer l).
func (t *tree) parent(p string, l int) (*node, error) {
	dir := t.root
	parts := strings.Split(p, "/")
	for i, name := range parts[:len(parts)-1] {
		n := dir.children[name]
		if n == nil {
			n = &node{from: src{l, -1}, implicit: true, meta: meta{mode: images.CpioDir | 0o755}, children: map[string]*node{}}
			dir.children[name] = n
		}
		if n.meta.mode&images.CpioTypeMask != images.CpioDir {
			return nil, fmt.Errorf("%w: %q: %s is not a directory", errBadPath, p, strings.Join(parts[:i+1], "/"))
		}
		dir = n
	}
	return dir, nil
}

// lookup returns the node at p, or nil.
func (t *tree) lookup(p string) *node {
	n := t.root
	if p == "" {
		return n
	}
	for _, name := range strings.Split(p, "/") {
		if n.children == nil {
			return nil
		}
		if n = n.children[name]; n == nil {
			return nil
		}
	}
	return n
}

// apply adds entry at (layer, index) to the tree.
func (t *tree) apply(h *tar.Header, at src) error {
	if h.Typeflag == tar.TypeXGlobalHeader {
		return nil // PAX defaults for the entries after it, which archive/tar applies; no file
	}
	p, err := cleanName(h.Name)
	if err != nil || p == "" {
		return err
	}
	base := path.Base(p)
	if strings.HasPrefix(base, ".wh.") {
		t.whiteout(p, at.layer)
		return nil
	}
	m, err := headerMeta(h, p)
	if err != nil {
		return err
	}
	dir, err := t.parent(p, at.layer)
	if err != nil {
		return err
	}
	n := &node{from: at, meta: m}
	switch {
	case h.Typeflag == tar.TypeLink:
		err = t.hardLink(n, h.Linkname)
	case m.mode&images.CpioTypeMask == images.CpioDir:
		n.children = map[string]*node{}
		if old := dir.children[base]; old != nil && old.children != nil {
			n.children = old.children // a directory declared again keeps its contents
		}
	case m.mode&images.CpioTypeMask == images.CpioRegular:
		n.inode = &inode{from: at}
		t.inodes[at] = n.inode
	}
	if err != nil {
		return err
	}
	dir.children[base] = n
	return nil
}

// hardLink makes n another name of the file at target: the same inode for a regular file, a
// copy of it for anything else (the initramfs unpacker links only regular files reliably).
func (t *tree) hardLink(n *node, target string) error {
	tp, err := cleanName(target)
	if err != nil {
		return fmt.Errorf("hard link target: %w", err)
	}
	tn := t.lookup(tp)
	if tn == nil || tp == "" {
		return fmt.Errorf("%w: hard link to %q: no such file in this or a lower layer", errBadPath, target)
	}
	if tn.meta.mode&images.CpioTypeMask == images.CpioDir {
		return fmt.Errorf("%w: hard link to directory %q", errBadPath, target)
	}
	n.meta = tn.meta
	n.inode = tn.inode
	return nil
}

// whiteout applies the whiteout file p of layer l: ".wh.NAME" removes NAME of the lower layers,
// ".wh..wh..opq" everything the lower layers put in its directory. Other ".wh..wh." names are
// AUFS bookkeeping, ignored.
func (t *tree) whiteout(p string, l int) {
	dir := t.lookup(path.Dir(p))
	if p == path.Base(p) {
		dir = t.root
	}
	if dir == nil || dir.children == nil {
		return
	}
	base := path.Base(p)
	switch {
	case base == ".wh..wh..opq":
		for name := range dir.children {
			removeLower(dir, name, l)
		}
	case strings.HasPrefix(base, ".wh..wh."):
	default:
		removeLower(dir, strings.TrimPrefix(base, ".wh."), l)
	}
}

// removeLower removes dir's child name if a lower layer than l made it; a directory layer l
// declared itself keeps only what layer l put in it.
func removeLower(dir *node, name string, l int) {
	n := dir.children[name]
	if n == nil {
		return
	}
	if n.from.layer < l {
		delete(dir.children, name)
		return
	}
	for c := range n.children {
		removeLower(n, c, l)
	}
}

// finish gives every surviving inode its paths (the primary, which carries the data, first)
// and a number, and drops the inodes no path reaches.
func (t *tree) finish() {
	sources := map[*inode][]memberAt{}
	t.walk(func(p string, n *node) {
		if n.inode != nil {
			sources[n.inode] = append(sources[n.inode], memberAt{p, n.from})
		}
	})
	ino := uint32(0)
	for at, in := range t.inodes {
		ms := sources[in]
		if len(ms) == 0 {
			delete(t.inodes, at)
			continue
		}
		sort.Slice(ms, func(i, j int) bool { return ms[i].before(ms[j], in.from) })
		for _, m := range ms {
			in.members = append(in.members, m.path)
		}
	}
	// Numbers in path order, so that the same image gives the same archive.
	t.walk(func(p string, n *node) {
		if n.inode != nil && n.inode.ino == 0 {
			ino++
			n.inode.ino = ino
		}
	})
}

// memberAt is a path of an inode and the entry that made it.
type memberAt struct {
	path string
	from src
}

// before orders an inode's paths: the entry that holds the data first, then by entry order.
func (m memberAt) before(o memberAt, data src) bool {
	if (m.from == data) != (o.from == data) {
		return m.from == data
	}
	if m.from.layer != o.from.layer {
		return m.from.layer < o.from.layer
	}
	return m.from.index < o.from.index
}

// walk calls f for every node but the root, parents before children, in name order.
func (t *tree) walk(f func(p string, n *node)) {
	var rec func(prefix string, dir *node)
	rec = func(prefix string, dir *node) {
		names := make([]string, 0, len(dir.children))
		for name := range dir.children {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			n := dir.children[name]
			p := prefix + name
			f(p, n)
			if n.children != nil {
				rec(p+"/", n)
			}
		}
	}
	rec("", t.root)
}

// headerMeta converts a tar header; p is its cleaned name, for messages and the symlink check.
func headerMeta(h *tar.Header, p string) (meta, error) {
	m := meta{uid: uint32(h.Uid), gid: uint32(h.Gid), mtime: clampTime(h.ModTime.Unix()),
		rmajor: uint32(h.Devmajor), rmin: uint32(h.Devminor)}
	perm := uint32(h.Mode) & 0o7777
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeLink: // archive/tar reads the old TypeRegA as TypeReg
		m.mode, m.size = images.CpioRegular|perm, h.Size
	case tar.TypeDir:
		m.mode = images.CpioDir | perm
	case tar.TypeSymlink:
		if err := checkSymlink(p, h.Linkname); err != nil {
			return m, err
		}
		m.mode, m.link = images.CpioSymlink|0o777, h.Linkname
	case tar.TypeChar:
		m.mode = images.CpioCharDev | perm
	case tar.TypeBlock:
		m.mode = images.CpioBlockDev | perm
	case tar.TypeFifo:
		m.mode = images.CpioFIFO | perm
	default:
		return m, fmt.Errorf("%w: %q: tar entry type %q is not a file, directory, link or device", errBadPath, h.Name, h.Typeflag)
	}
	if h.Uid < 0 || h.Gid < 0 || int64(h.Uid) > 0xFFFFFFFF || int64(h.Gid) > 0xFFFFFFFF {
		return m, fmt.Errorf("%w: %q: owner %d:%d out of range", errBadPath, h.Name, h.Uid, h.Gid)
	}
	return m, nil
}

// checkSymlink refuses a relative symlink target that climbs above the image root from the
// link's directory. Absolute targets stay inside the root on the node, where / is the image's.
func checkSymlink(p, target string) error {
	if target == "" || strings.Contains(target, "\x00") {
		return fmt.Errorf("%w: symlink %q has an empty or NUL target", errBadPath, p)
	}
	if strings.HasPrefix(target, "/") {
		return nil
	}
	if j := path.Join(path.Dir(p), target); j == ".." || strings.HasPrefix(j, "../") {
		return fmt.Errorf("%w: symlink %q -> %q points out of the image root", errBadPath, p, target)
	}
	return nil
}

// clampTime keeps a modification time within newc's unsigned 32-bit field.
func clampTime(t int64) uint32 {
	if t < 0 {
		return 0
	}
	if t > 0xFFFFFFFF {
		return 0xFFFFFFFF
	}
	return uint32(t)
}

// follow resolves p inside the tree as the kernel would at boot: a symbolic link met at any
// component (a merged /usr's /sbin -> usr/sbin, /sbin/init -> /lib/systemd/systemd) is followed,
// at most 40 in all. It returns the path reached and its node, nil when nothing is there.
func (t *tree) follow(p string) (string, *node) {
	parts := strings.Split(p, "/")
	cur := ""
	for links := 0; len(parts) > 0; {
		name := parts[0]
		parts = parts[1:]
		next := path.Join(cur, name)
		n := t.lookup(next)
		if n == nil {
			return next, nil
		}
		if n.meta.mode&images.CpioTypeMask != images.CpioSymlink {
			cur = next
			continue
		}
		if links++; links > 40 {
			return next, nil
		}
		target := n.meta.link
		if !strings.HasPrefix(target, "/") {
			target = path.Join(cur, target)
		}
		clean, err := cleanName(target)
		if err != nil {
			return next, nil
		}
		parts = append(strings.Split(clean, "/"), parts...)
		cur = ""
	}
	return cur, t.lookup(cur)
}
