package ociimport

import (
	"fmt"
	"io"
)

// cpioWriter streams the "newc" cpio format the kernel unpacks as an initramfs. Unlike the
// test initramfs's writer it keeps owners, times and link counts, and copies file data from a
// reader, so a file is never held in memory.
type cpioWriter struct {
	w   io.Writer
	n   int64 // bytes written, for padding and the report
	err error
}

// Unix file type bits of the newc mode field.
const (
	sIFMT   = 0o170000
	sIFSOCK = 0o140000
	sIFLNK  = 0o120000
	sIFREG  = 0o100000
	sIFBLK  = 0o060000
	sIFDIR  = 0o040000
	sIFCHR  = 0o020000
	sIFIFO  = 0o010000
)

// cpioHeader is one archive entry's header fields.
type cpioHeader struct {
	Name         string // relative, no leading slash
	Ino          uint32
	Mode         uint32 // type bits | permission bits
	UID, GID     uint32
	Nlink        uint32
	Mtime        uint32
	Size         int64
	RMajor, RMin uint32
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	var n int
	n, c.err = c.w.Write(b)
	c.n += int64(n)
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// header writes h; the caller then writes exactly h.Size bytes of data with data.
func (c *cpioWriter) header(h cpioHeader) error {
	if h.Size > 0xFFFFFFFF {
		return fmt.Errorf("%s: %d bytes is more than a newc cpio entry can hold (4 GiB)", h.Name, h.Size)
	}
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor,
	// rdevminor, namesize (with NUL), check
	s := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		h.Ino, h.Mode, h.UID, h.GID, h.Nlink, h.Mtime, uint32(h.Size), 0, 0, h.RMajor, h.RMin, len(h.Name)+1, 0)
	c.write([]byte(s))
	c.write([]byte(h.Name + "\x00"))
	c.pad()
	return c.err
}

// data copies exactly size bytes from r and pads; a short r is an error.
func (c *cpioWriter) data(r io.Reader, size int64) error {
	if c.err != nil {
		return c.err
	}
	n, err := io.CopyN(c.w, r, size)
	c.n += n
	if err != nil {
		c.err = err
		return err
	}
	c.pad()
	return c.err
}

// bytes writes a small entry body (a symlink target).
func (c *cpioWriter) bytes(b []byte) error {
	c.write(b)
	c.pad()
	return c.err
}

// close writes the trailer.
func (c *cpioWriter) close() error {
	return c.header(cpioHeader{Name: "TRAILER!!!", Nlink: 1})
}
