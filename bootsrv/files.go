package bootsrv

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/images"
)

// confinedFiles opens what the HTTP endpoint serves through os.Root handles on ipxe_dir and on the
// image store, so that a symbolic link leading out of either (planted, or left by a package) is
// refused as tftpd-hpa's -s refuses it by chroot, instead of serving whatever it points at.
type confinedFiles struct {
	ipxe    *os.Root
	ipxeDir string
	bins    map[string]bool // the located binaries: the only names /ipxe/bin serves
	// linked are the located binaries that lead out of ipxe_dir to a file of the same name, as
	// Debian links /usr/lib/ipxe/ipxe.efi to /boot/ipxe.efi: each is opened through an os.Root on
	// its target's directory, so that it is still that one file.
	linked   map[string]*os.Root
	store    *os.Root
	storeDir string
	images   *images.Store
}

func openConfined(ipxe images.IPXE, st *images.Store) (*confinedFiles, error) {
	c := &confinedFiles{ipxeDir: ipxe.Dir, bins: map[string]bool{}, storeDir: st.Dir(), images: st}
	var err error
	if c.ipxe, err = os.OpenRoot(ipxe.Dir); err != nil {
		return nil, fmt.Errorf("ipxe_dir: %w", err)
	}
	if c.store, err = os.OpenRoot(st.Dir()); err != nil {
		c.ipxe.Close()
		return nil, fmt.Errorf("images: %w", err)
	}
	c.linked = map[string]*os.Root{}
	for n, target := range ipxe.Files {
		c.bins[n] = true
		if f, err := c.ipxe.Open(n); err == nil {
			f.Close()
			continue
		}
		if filepath.Base(target) != n {
			continue // a link to another name (undionly.kpxe -> /etc/shadow): refused
		}
		if r, err := os.OpenRoot(filepath.Dir(target)); err == nil {
			c.linked[n] = r
		}
	}
	return c, nil
}

// outside lists the located binaries the HTTP endpoint will not serve because they lead out of
// ipxe_dir to a file of another name, so that the server can say so at start.
func (c *confinedFiles) outside() []string {
	var out []string
	for n := range c.bins {
		if _, ok := c.linked[n]; ok {
			continue
		}
		if f, err := c.ipxe.Open(n); err != nil {
			out = append(out, n)
		} else {
			f.Close()
		}
	}
	slices.Sort(out)
	return out
}

func (c *confinedFiles) Close() error {
	errs := []error{c.ipxe.Close(), c.store.Close()}
	for _, r := range c.linked {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

// Binary opens an iPXE binary of ipxe_dir by its name (images.Opener: TFTP opens it this way too).
func (c *confinedFiles) Binary(name string) (*os.File, error) {
	if !c.bins[name] {
		return nil, fs.ErrNotExist
	}
	if r, ok := c.linked[name]; ok {
		return r.Open(name)
	}
	return c.ipxe.Open(name)
}

// bootFile opens a profile's file (its blob in the store).
func (c *confinedFiles) bootFile(profile, file string) (*os.File, error) {
	p, err := c.images.BlobPath(profile, file)
	if err != nil {
		return nil, fs.ErrNotExist
	}
	return c.Blob(p)
}

// Blob opens a path of the image store given in full (images.Opener).
func (c *confinedFiles) Blob(p string) (*os.File, error) {
	rel, err := filepath.Rel(c.storeDir, p)
	if err != nil || !filepath.IsLocal(rel) {
		return nil, fs.ErrNotExist
	}
	return c.store.Open(rel)
}

// byteRange is [start, end) of a file.
type byteRange struct{ start, end int64 }

// CoalesceRanges rewrites a Range header for a file of size bytes: overlapping and adjacent ranges
// are merged (as Apache does) and, when more than max remain, the header is dropped so that the
// whole file is sent once (Apache's MaxRanges) instead of a multipart answer many times larger than
// the file. It returns the header to use ("" for none); a header it cannot parse is returned as is
// for net/http to answer. It is pure.
func CoalesceRanges(h string, size int64, limit int) string {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok || size <= 0 {
		return h
	}
	var rs []byteRange
	for part := range strings.SplitSeq(spec, ",") {
		r, ok, valid := parseRange(strings.TrimSpace(part), size)
		if !valid {
			return h
		}
		if ok {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return h // nothing satisfiable: net/http answers 416
	}
	slices.SortFunc(rs, func(a, b byteRange) int { return cmp.Compare(a.start, b.start) })
	merged := rs[:1]
	for _, r := range rs[1:] {
		last := &merged[len(merged)-1]
		if r.start <= last.end {
			last.end = max(last.end, r.end)
			continue
		}
		merged = append(merged, r)
	}
	if len(merged) > limit {
		return ""
	}
	var b strings.Builder
	b.WriteString("bytes=")
	for i, r := range merged {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(r.start, 10) + "-" + strconv.FormatInt(r.end-1, 10))
	}
	return b.String()
}

// parseRange resolves one range spec against size: the range, whether it is satisfiable, and
// whether the spec is well formed.
func parseRange(s string, size int64) (byteRange, bool, bool) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return byteRange{}, false, false
	}
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == "" { // suffix: the last b bytes
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return byteRange{}, false, false
		}
		if n == 0 {
			return byteRange{}, false, true
		}
		return byteRange{max(size-n, 0), size}, true, true
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return byteRange{}, false, false
	}
	end := size
	if b != "" {
		e, err := strconv.ParseInt(b, 10, 64)
		if err != nil || e < start {
			return byteRange{}, false, false
		}
		end = min(e+1, size)
	}
	if start >= size {
		return byteRange{}, false, true
	}
	return byteRange{start, end}, true, true
}
