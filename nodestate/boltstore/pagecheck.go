package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
)

// walkPages checks a bbolt file's bytes before bbolt maps them: a sound meta page, and a page tree
// whose every page lies inside the file and the meta's high-water mark, has the type its parent
// expects, is reached once, and holds elements that fit in it. bbolt trusts its pages: opening a
// file whose free list it must rebuild walks the tree in a goroutine of its own, where a corrupt
// page is a panic no recover reaches, or a fault beyond the map. Only a tree that passes this walk
// is handed to bbolt.
func walkPages(data []byte) error {
	m, err := soundMeta(data)
	if err != nil {
		return err
	}
	w := &pageWalk{data: data, psize: m.psize, high: m.high, seen: map[uint64]bool{}}
	return w.bucket(m.root, nil, 0)
}

// bboltMeta is what walkPages needs of a meta page.
type bboltMeta struct {
	psize      int
	root, high uint64
	txid       uint64
}

// bbolt's page flags and format version.
const (
	branchPageFlag = 0x01
	metaPageFlag   = 0x04
	bboltVersion   = 2
	branchElemLen  = 16
	bucketHdrLen   = 16
	maxTreeDepth   = 64
)

// soundMeta returns the newer of the two meta pages whose magic, version and checksum hold, as
// bbolt picks it.
func soundMeta(data []byte) (bboltMeta, error) {
	var best bboltMeta
	found := false
	psize := bboltPageSize(data)
	for _, off := range []int{0, psize} {
		m, ok := readMeta(data, off)
		if ok && (!found || m.txid > best.txid) {
			best, found = m, true
		}
	}
	if !found {
		return bboltMeta{}, errors.New("no sound meta page (not a bbolt file, or both meta pages damaged)")
	}
	return best, nil
}

// readMeta reads the meta page at off: page header, then magic, version, page size, flags, root
// bucket (root pgid, sequence), free list pgid, high-water pgid, txid and an FNV-64a checksum of
// the fields before it.
func readMeta(data []byte, off int) (bboltMeta, bool) {
	const metaLen = 64
	ne := binary.NativeEndian
	if off+pageHeaderLen+metaLen > len(data) || ne.Uint16(data[off+8:])&metaPageFlag == 0 {
		return bboltMeta{}, false
	}
	b := data[off+pageHeaderLen : off+pageHeaderLen+metaLen]
	h := fnv.New64a()
	h.Write(b[:56])
	if ne.Uint32(b) != metaMagic || ne.Uint32(b[4:]) != bboltVersion || h.Sum64() != ne.Uint64(b[56:]) {
		return bboltMeta{}, false
	}
	m := bboltMeta{psize: int(ne.Uint32(b[8:])), root: ne.Uint64(b[16:]), high: ne.Uint64(b[40:]), txid: ne.Uint64(b[48:])}
	if m.psize < 512 || m.psize > 1<<16 || m.psize&(m.psize-1) != 0 {
		return bboltMeta{}, false
	}
	return m, true
}

type pageWalk struct {
	data  []byte
	psize int
	high  uint64
	seen  map[uint64]bool
}

// page returns page id with its overflow pages, checked against the file and the high-water mark.
func (w *pageWalk) page(id uint64) ([]byte, error) {
	if id < 2 || id >= w.high || id >= uint64(len(w.data)/w.psize) {
		return nil, fmt.Errorf("page %d: outside the file's %d pages", id, min(w.high, uint64(len(w.data)/w.psize)))
	}
	if w.seen[id] {
		return nil, fmt.Errorf("page %d: reached twice", id)
	}
	w.seen[id] = true
	off := int(id) * w.psize
	if got := binary.NativeEndian.Uint64(w.data[off:]); got != id {
		return nil, fmt.Errorf("page %d: header says page %d", id, got)
	}
	over := uint64(binary.NativeEndian.Uint32(w.data[off+12:]))
	if id+over >= w.high || off+(int(over)+1)*w.psize > len(w.data) {
		return nil, fmt.Errorf("page %d: %d overflow pages run past the file", id, over)
	}
	for i := id + 1; i <= id+over; i++ {
		w.seen[i] = true
	}
	return w.data[off : off+(int(over)+1)*w.psize], nil
}

// bucket walks a bucket's tree from its root page (or its inline page when root is 0).
func (w *pageWalk) bucket(root uint64, inline []byte, depth int) error {
	if depth > maxTreeDepth {
		return errors.New("buckets nested too deep")
	}
	if root == 0 {
		return w.node(inline, -1, depth)
	}
	return w.tree(root, depth)
}

// tree walks the pages under page id.
func (w *pageWalk) tree(id uint64, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("page %d: tree deeper than %d", id, maxTreeDepth)
	}
	p, err := w.page(id)
	if err != nil {
		return err
	}
	return w.node(p, int64(id), depth)
}

// node checks one branch or leaf page p (id -1: inline) and walks what it points to.
func (w *pageWalk) node(p []byte, id int64, depth int) error {
	ne := binary.NativeEndian
	if len(p) < pageHeaderLen {
		return fmt.Errorf("page %d: truncated", id)
	}
	flags, count := ne.Uint16(p[8:]), int(ne.Uint16(p[10:]))
	branch := flags == branchPageFlag
	elem := leafElemLen
	if branch {
		elem = branchElemLen
	} else if flags != leafPageFlag {
		return fmt.Errorf("page %d: type %#x is neither branch nor leaf", id, flags)
	}
	if pageHeaderLen+count*elem > len(p) || (branch && count == 0) {
		return fmt.Errorf("page %d: %d elements do not fit", id, count)
	}
	for i := range count {
		e := pageHeaderLen + i*elem
		var err error
		if branch {
			err = w.branchElem(p, id, i, e, depth)
		} else {
			err = w.leafElem(p, id, i, e, depth)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// branchElem checks element i of branch page p (id), at offset e, and walks the page it points to.
func (w *pageWalk) branchElem(p []byte, id int64, i, e, depth int) error {
	ne := binary.NativeEndian
	pos, ksize := int(ne.Uint32(p[e:])), int(ne.Uint32(p[e+4:]))
	if e+pos+ksize > len(p) {
		return fmt.Errorf("page %d: element %d runs past the page", id, i)
	}
	return w.tree(ne.Uint64(p[e+8:]), depth+1)
}

// leafElem checks element i of leaf page p (id), at offset e, and walks the bucket it holds if
// it is one.
func (w *pageWalk) leafElem(p []byte, id int64, i, e, depth int) error {
	ne := binary.NativeEndian
	eflags, pos := ne.Uint32(p[e:]), int(ne.Uint32(p[e+4:]))
	ksize, vsize := int(ne.Uint32(p[e+8:])), int(ne.Uint32(p[e+12:]))
	end := e + pos + ksize + vsize
	if end > len(p) || end < e {
		return fmt.Errorf("page %d: element %d runs past the page", id, i)
	}
	if eflags&bucketLeafFlag == 0 {
		return nil
	}
	v := p[e+pos+ksize : end]
	if len(v) < bucketHdrLen {
		return fmt.Errorf("page %d: element %d: bucket header truncated", id, i)
	}
	return w.bucket(ne.Uint64(v), v[bucketHdrLen:], depth+1)
}
