package images

import (
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// cpioWriter writes the "newc" (SVR4, no CRC) cpio format that the Linux
// kernel unpacks as an initramfs. Every field is fixed (mtime 0, uid and
// gid 0, inode numbers in order), so the same entries give the same bytes.
type cpioWriter struct {
	w   io.Writer
	n   int64 // bytes written, for padding
	ino uint32
	err error
}

// Unix file type bits of the mode field.
const (
	cpioDir     = 0o040000
	cpioRegular = 0o100000
	cpioSymlink = 0o120000
	cpioCharDev = 0o020000
)

type cpioEntry struct {
	Name         string // without leading slash
	Mode         uint32 // type bits | permissions
	Data         []byte // file contents or symlink target
	RMajor, RMin uint32 // device numbers for device nodes
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

func (c *cpioWriter) add(e cpioEntry) error {
	if e.Name == "" || strings.HasPrefix(e.Name, "/") || strings.Contains(e.Name, "\x00") || !fs.ValidPath(e.Name) {
		return fmt.Errorf("cpio: bad entry name %q", e.Name)
	}
	c.ino++
	nlink := 1
	if e.Mode&0o170000 == cpioDir {
		nlink = 2
	}
	c.header(e.Name, c.ino, e.Mode, uint32(nlink), uint32(len(e.Data)), e.RMajor, e.RMin)
	c.write(e.Data)
	c.pad()
	return c.err
}

func (c *cpioWriter) header(name string, ino, mode, nlink, size, rmaj, rmin uint32) {
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
	// devminor, rdevmajor, rdevminor, namesize (with NUL), check
	h := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, size, 0, 0, rmaj, rmin, len(name)+1, 0)
	c.write([]byte(h))
	c.write([]byte(name + "\x00"))
	c.pad()
}

// close writes the trailer entry.
func (c *cpioWriter) close() error {
	c.header("TRAILER!!!", 0, 0, 1, 0, 0, 0)
	return c.err
}
