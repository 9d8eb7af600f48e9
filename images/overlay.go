package images

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
)

// MaxOverlayBytes caps an overlay's files together: overlays are host names, network settings
// and keys rendered on every boot request, not a second image.
const MaxOverlayBytes = 1 << 20

// TemplateSuffix marks an overlay file rendered as a text/template with the node's fields.
const TemplateSuffix = ".tmpl"

// OverlayNode is what an overlay template sees of the node: {{.Name}}, {{.IP}}, {{.MAC}},
// {{.Position}}, {{.Index}}, {{.Profile}}.
type OverlayNode struct {
	Name     string
	IP       string // empty when the inventory gives none
	MAC      string
	Position string // the node's name in the topology
	Index    int
	Profile  string
}

// Overlay is a directory of small files added to a node's boot as one more initrd (Warewulf's
// overlays): the kernel unpacks it over the image, so a node gets its own files without the image
// being rebuilt. A file named NAME.tmpl is rendered with the node's fields into NAME; the others
// are copied. Permission bits are kept, of directories too (the kernel sets them on the image's
// directory of the same name: keep /root 0700, /tmp 1777); everything belongs to root.
type Overlay struct {
	Dir   string
	files []overlayFile
	dirs  map[string]uint32 // permission bits of its directories: the kernel applies them to the image's
}

type overlayFile struct {
	name string // slash-separated, relative, without the template suffix
	mode uint32 // permission bits
	data []byte
	tmpl *template.Template // nil for a copied file
}

// LoadOverlay reads and parses the overlay in dir. Symbolic links and special files are refused,
// as is more than MaxOverlayBytes; template errors name the file and line.
func LoadOverlay(dir string) (*Overlay, error) {
	o := &Overlay{Dir: dir, dirs: map[string]uint32{}}
	total := int64(0)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return o.addDir(dir, p, d)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file (an overlay holds files and directories only)", p)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if total += fi.Size(); total > MaxOverlayBytes {
			return fmt.Errorf("%s: the overlay's files pass %d bytes; an overlay is for small per-node files", p, MaxOverlayBytes)
		}
		rel, _ := filepath.Rel(dir, p)
		f, err := overlayEntry(p, filepath.ToSlash(rel), unixPerm(fi.Mode()))
		if err == nil {
			o.files = append(o.files, f)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("images: overlay %s: %w", dir, err)
	}
	return o, nil
}

// addDir records a directory's permission bits under its relative name.
func (o *Overlay) addDir(root, p string, d fs.DirEntry) error {
	rel, _ := filepath.Rel(root, p)
	if rel == "." {
		return nil
	}
	fi, err := d.Info()
	if err != nil {
		return err
	}
	o.dirs[filepath.ToSlash(rel)] = unixPerm(fi.Mode())
	return nil
}

// unixPerm is the permission, set-id and sticky bits of m as a Unix mode has them.
func unixPerm(m fs.FileMode) uint32 {
	p := uint32(m.Perm())
	for _, b := range []struct {
		mode fs.FileMode
		unix uint32
	}{{fs.ModeSetuid, 0o4000}, {fs.ModeSetgid, 0o2000}, {fs.ModeSticky, 0o1000}} {
		if m&b.mode != 0 {
			p |= b.unix
		}
	}
	return p
}

// overlayEntry reads one overlay file and parses it when it is a template.
func overlayEntry(p, rel string, perm uint32) (overlayFile, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return overlayFile{}, err
	}
	f := overlayFile{name: rel, mode: perm, data: data}
	if name, ok := strings.CutSuffix(rel, TemplateSuffix); ok && path.Base(name) != "." && name != "" {
		f.name = name
		f.tmpl, err = template.New(rel).Option("missingkey=error").Parse(string(data))
		if err != nil {
			return overlayFile{}, err
		}
	}
	return f, nil
}

// RenderOverlays writes the overlays' files for node as a gzip-compressed newc cpio archive; a
// later overlay's file replaces an earlier one's of the same name. The same node gives the same
// bytes.
func RenderOverlays(w io.Writer, node OverlayNode, overlays ...*Overlay) error {
	files := map[string]cpioEntry{}
	modes := map[string]uint32{}
	for _, o := range overlays {
		for d, m := range o.dirs {
			modes[d] = m
		}
		for _, f := range o.files {
			data := f.data
			if f.tmpl != nil {
				var buf bytes.Buffer
				if err := f.tmpl.Execute(&buf, node); err != nil {
					return fmt.Errorf("images: overlay %s: node %s: %w", o.Dir, node.Name, err)
				}
				data = buf.Bytes()
			}
			files[f.name] = cpioEntry{Name: f.name, Mode: CpioRegular | f.mode, Data: data}
		}
	}
	return writeOverlayArchive(w, files, modes)
}

// writeOverlayArchive writes the files, each directory on their paths first, in name order.
func writeOverlayArchive(w io.Writer, files map[string]cpioEntry, modes map[string]uint32) error {
	dirs := map[string]bool{}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var entries []cpioEntry
	for d := range dirs {
		m, ok := modes[d]
		if !ok {
			m = 0o755
		}
		entries = append(entries, cpioEntry{Name: d, Mode: CpioDir | m})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	sort.Strings(names)
	for _, n := range names {
		entries = append(entries, files[n])
	}
	zw := gzip.NewWriter(w)
	bw := bufio.NewWriter(zw)
	c := newEntryWriter(bw)
	for _, e := range entries {
		if err := c.add(e); err != nil {
			return fmt.Errorf("images: overlay: %w", err)
		}
	}
	err := c.Close()
	if err == nil {
		err = bw.Flush()
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("images: overlay: %w", err)
	}
	return nil
}
