package tftpd

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"
)

// MaxFilenameLen bounds a requested file name. An RRQ must fit in one
// 512-byte datagram in practice; anything longer is a probe, not a boot.
const MaxFilenameLen = 255

// maxElemLen is NAME_MAX on Linux: longer elements can never name a file.
const maxElemLen = 255

// ErrBadPath is wrapped by every refusal of Resolve.
var ErrBadPath = errors.New("tftpd: path refused")

// Resolve maps a file name from a TFTP read request to a path inside the
// served root, in io/fs form (slash-separated, unrooted, no "." or ".."),
// or refuses it with an error wrapping ErrBadPath.
//
// Rules, chosen so that the same name always gives the same answer:
//   - backslashes are separators ("boot\x64\wdsnbp.com" as sent by Windows
//     PXE clients is "boot/x64/wdsnbp.com");
//   - leading separators are dropped: absolute names are relative to the root
//     ("/pxelinux.0" is "pxelinux.0"), as tftpd-hpa does with --secure;
//   - empty and "." elements are dropped;
//   - any ".." element is refused rather than cleaned away, since no boot
//     loader needs one and cleaning would make "a/../../b" look harmless;
//   - NUL, other control characters, invalid UTF-8, names longer than
//     MaxFilenameLen and elements longer than 255 bytes are refused;
//   - the root itself (a name with no elements) is refused.
//
// Resolve is pure; symbolic links are a matter for the fs.FS (use
// (*os.Root).FS, which refuses links leading out of the root).
func Resolve(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty file name", ErrBadPath)
	}
	if len(name) > MaxFilenameLen {
		return "", fmt.Errorf("%w: file name is %d bytes, limit %d", ErrBadPath, len(name), MaxFilenameLen)
	}
	if !utf8.ValidString(name) {
		return "", fmt.Errorf("%w: file name %q is not valid UTF-8", ErrBadPath, name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f {
			return "", fmt.Errorf("%w: file name %q has control character 0x%02x at byte %d", ErrBadPath, name, c, i)
		}
	}
	elems := strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' })
	kept := elems[:0]
	for _, e := range elems {
		switch {
		case e == ".":
			continue
		case e == "..":
			return "", fmt.Errorf("%w: file name %q has a \"..\" element", ErrBadPath, name)
		case len(e) > maxElemLen:
			return "", fmt.Errorf("%w: file name %q has an element of %d bytes, limit %d", ErrBadPath, name, len(e), maxElemLen)
		}
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		return "", fmt.Errorf("%w: file name %q names the root, not a file", ErrBadPath, name)
	}
	p := strings.Join(kept, "/")
	if !fs.ValidPath(p) {
		// Unreachable by construction; kept as a last line of defence.
		return "", fmt.Errorf("%w: file name %q resolves to invalid path %q", ErrBadPath, name, p)
	}
	return p, nil
}
