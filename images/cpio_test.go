package images

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestCpioWriterRefuses: a writer that would make an archive the kernel misreads says so: data
// past an entry's size, an entry closed short of it, names it cannot hold, sizes past 4 GiB.
func TestCpioWriterRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(c *CpioWriter) error
		want string
	}{
		{"data past the size", func(c *CpioWriter) error {
			c.WriteHeader(&CpioHeader{Name: "f", Mode: CpioRegular | 0o644, Size: 2})
			_, err := c.Write([]byte("abc"))
			return err
		}, "past the entry's size"},
		{"next entry before the data", func(c *CpioWriter) error {
			c.WriteHeader(&CpioHeader{Name: "f", Mode: CpioRegular | 0o644, Size: 2})
			return c.WriteHeader(&CpioHeader{Name: "g", Mode: CpioRegular | 0o644})
		}, "short of its size"},
		{"closed before the data", func(c *CpioWriter) error {
			c.WriteHeader(&CpioHeader{Name: "f", Mode: CpioRegular | 0o644, Size: 2})
			return c.Close()
		}, "short of its size"},
		{"copied short", func(c *CpioWriter) error {
			c.WriteHeader(&CpioHeader{Name: "f", Mode: CpioRegular | 0o644, Size: 4})
			_, err := io.CopyN(c, strings.NewReader("ab"), 4)
			return err
		}, "EOF"},
		{"empty name", func(c *CpioWriter) error { return c.WriteHeader(&CpioHeader{Mode: CpioDir | 0o755}) }, "bad entry name"},
		{"NUL in the name", func(c *CpioWriter) error { return c.WriteHeader(&CpioHeader{Name: "a\x00b"}) }, "bad entry name"},
		{"over 4 GiB", func(c *CpioWriter) error { return c.WriteHeader(&CpioHeader{Name: "big", Size: 1 << 32}) }, "4 GiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do(NewCpioWriter(&bytes.Buffer{}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestCpioWriterStream: data written in pieces and copied from a reader makes the same archive as
// data written whole, and entries are padded to 4 bytes.
func TestCpioWriterStream(t *testing.T) {
	write := func(pieces func(c *CpioWriter)) []byte {
		var b bytes.Buffer
		c := NewCpioWriter(&b)
		c.WriteHeader(&CpioHeader{Name: "a", Ino: 1, Mode: CpioRegular | 0o644, Nlink: 1, Size: 5})
		pieces(c)
		c.WriteHeader(&CpioHeader{Name: "dir", Ino: 2, Mode: CpioDir | 0o755, Nlink: 2})
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if c.Len() != int64(b.Len()) || b.Len()%4 != 0 {
			t.Errorf("Len %d, archive %d bytes", c.Len(), b.Len())
		}
		return b.Bytes()
	}
	whole := write(func(c *CpioWriter) { c.Write([]byte("hello")) })
	split := write(func(c *CpioWriter) { c.Write([]byte("he")); c.Write([]byte("llo")) })
	copied := write(func(c *CpioWriter) { io.CopyN(c, strings.NewReader("hello, more"), 5) })
	if !bytes.Equal(whole, split) || !bytes.Equal(whole, copied) {
		t.Errorf("archives differ:\n%q\n%q\n%q", whole, split, copied)
	}
	if !bytes.Contains(whole, []byte("a\x00hello")) || !bytes.HasSuffix(whole, []byte("TRAILER!!!\x00\x00\x00\x00")) {
		t.Errorf("archive %q", whole)
	}
}
