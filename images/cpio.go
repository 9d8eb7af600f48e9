package images

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// Unix file type bits of a cpio entry's mode.
const (
	CpioTypeMask = 0o170000
	CpioSocket   = 0o140000
	CpioSymlink  = 0o120000
	CpioRegular  = 0o100000
	CpioBlockDev = 0o060000
	CpioDir      = 0o040000
	CpioCharDev  = 0o020000
	CpioFIFO     = 0o010000
)

// CpioHeader is one entry of a newc cpio archive.
type CpioHeader struct {
	Name         string // relative, no leading slash
	Ino          uint32
	Mode         uint32 // type bits | permission bits
	UID, GID     uint32
	Nlink        uint32
	Mtime        uint32 // seconds since the epoch
	Size         int64  // the data that follows: a file's contents or a symlink's target
	RMajor, RMin uint32 // a device node's numbers
}

// CpioWriter writes the "newc" (SVR4, no CRC) cpio format that the Linux kernel unpacks as an
// initramfs, as a stream, the way archive/tar's Writer does: WriteHeader, then exactly Size bytes
// of data through Write, then the next entry; Close writes the trailer. It holds no file in
// memory, and the same entries give the same bytes.
type CpioWriter struct {
	w    io.Writer
	n    int64 // bytes written, for padding
	left int64 // data bytes the current entry still expects
	err  error
}

// NewCpioWriter returns a CpioWriter writing to w.
func NewCpioWriter(w io.Writer) *CpioWriter { return &CpioWriter{w: w} }

// Len returns how many bytes the archive has so far.
func (c *CpioWriter) Len() int64 { return c.n }

func (c *CpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	var n int
	n, c.err = c.w.Write(b)
	c.n += int64(n)
}

func (c *CpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

var errCpioShort = errors.New("cpio: the previous entry's data is short of its size")

// WriteHeader starts entry h; its Size bytes of data follow through Write.
func (c *CpioWriter) WriteHeader(h *CpioHeader) error {
	if c.err != nil {
		return c.err
	}
	if c.left != 0 {
		return errCpioShort
	}
	if h.Name == "" || strings.Contains(h.Name, "\x00") {
		return fmt.Errorf("cpio: bad entry name %q", h.Name)
	}
	if h.Size < 0 || h.Size > 0xFFFFFFFF {
		return fmt.Errorf("%s: %d bytes is more than a newc cpio entry can hold (4 GiB)", h.Name, h.Size)
	}
	c.pad()
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor,
	// rdevminor, namesize (with NUL), check
	s := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		h.Ino, h.Mode, h.UID, h.GID, h.Nlink, h.Mtime, uint32(h.Size), 0, 0, h.RMajor, h.RMin, len(h.Name)+1, 0)
	c.write([]byte(s))
	c.write([]byte(h.Name + "\x00"))
	c.pad()
	c.left = h.Size
	return c.err
}

// Write writes data of the current entry, at most what its header announced.
func (c *CpioWriter) Write(b []byte) (int, error) {
	if int64(len(b)) > c.left {
		return 0, fmt.Errorf("cpio: %d bytes written past the entry's size", int64(len(b))-c.left)
	}
	n0 := c.n
	c.write(b)
	n := int(c.n - n0)
	c.left -= int64(n)
	return n, c.err
}

// ReadFrom copies the rest of the current entry's data from r, through the underlying writer's
// ReadFrom when it has one (a bufio.Writer: no buffer per file). io.CopyN uses it.
func (c *CpioWriter) ReadFrom(r io.Reader) (int64, error) {
	if c.err != nil {
		return 0, c.err
	}
	lr := io.LimitReader(r, c.left)
	var n int64
	if rf, ok := c.w.(io.ReaderFrom); ok {
		n, c.err = rf.ReadFrom(lr)
	} else {
		n, c.err = io.Copy(c.w, lr)
	}
	c.n += n
	c.left -= n
	return n, c.err
}

// Close writes the trailer; it does not close the underlying writer.
func (c *CpioWriter) Close() error {
	if c.err == nil && c.left != 0 {
		return errCpioShort
	}
	return c.WriteHeader(&CpioHeader{Name: "TRAILER!!!", Nlink: 1})
}

// cpioEntry is a small entry held whole, as the test initramfs and overlays make them.
type cpioEntry struct {
	Name         string // without leading slash
	Mode         uint32 // type bits | permissions
	Data         []byte // file contents or symlink target
	RMajor, RMin uint32 // device numbers for device nodes
}

// entryWriter writes cpioEntries with every field fixed (mtime 0, uid and gid 0, inode numbers in
// order), so that the same entries give the same bytes.
type entryWriter struct {
	*CpioWriter
	ino uint32
}

func newEntryWriter(w io.Writer) *entryWriter { return &entryWriter{CpioWriter: NewCpioWriter(w)} }

func (c *entryWriter) add(e cpioEntry) error {
	if e.Name == "" || strings.HasPrefix(e.Name, "/") || strings.Contains(e.Name, "\x00") || !fs.ValidPath(e.Name) {
		return fmt.Errorf("cpio: bad entry name %q", e.Name)
	}
	c.ino++
	nlink := uint32(1)
	if e.Mode&CpioTypeMask == CpioDir {
		nlink = 2
	}
	h := CpioHeader{Name: e.Name, Ino: c.ino, Mode: e.Mode, Nlink: nlink, Size: int64(len(e.Data)), RMajor: e.RMajor, RMin: e.RMin}
	if err := c.WriteHeader(&h); err != nil {
		return err
	}
	_, err := c.Write(e.Data)
	return err
}
