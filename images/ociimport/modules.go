package ociimport

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// DefaultHostModules is where this host keeps the modules of its kernels (modules.dep per
// version), searched for --module NAME when the image has no modules for the kernel.
const DefaultHostModules = "/lib/modules"

// maxModuleBytes bounds one module, held whole to be decompressed: the largest in-tree modules
// (amdgpu) are about 20 MB uncompressed.
const maxModuleBytes = 256 << 20

// depPath matches the modules.dep files of an image, whose contents the first pass keeps.
var depPath = regexp.MustCompile(`^(usr/)?lib/modules/[^/]+/modules\.dep$`)

// isModulePath tells a --module given as a file (a path, or a name ending in .ko, compressed or
// not) from a module name resolved with modules.dep.
func isModulePath(s string) bool {
	return strings.ContainsRune(s, '/') || moduleStem(s) != s
}

// moduleStem is a module file's name without .ko and a compression suffix; module names use
// '_' and '-' interchangeably, as modprobe does.
func moduleStem(file string) string {
	base := path.Base(file)
	for _, suf := range []string{".ko.xz", ".ko.zst", ".ko.gz", ".ko"} {
		if s, ok := strings.CutSuffix(base, suf); ok {
			return strings.ReplaceAll(s, "-", "_")
		}
	}
	return base
}

// agentModule is one module the agent loads: where its bytes come from (a file of the host, or
// a file of the image, captured in the second pass) and its name in the agent's directory.
type agentModule struct {
	name  string // uncompressed file name, e.g. virtio_net.ko
	path  string // host file; "" when in the image
	image string // path in the image, for messages
	in    *inode // the image's file
	data  *bytes.Buffer
}

// modulesDep is a parsed modules.dep: each module's file (relative to its directory) and its
// dependencies' files, in the file's order (modprobe loads them last first).
type modulesDep struct {
	where string // the directory, for messages ("image /usr/lib/modules/6.1.0" or "host ...")
	files map[string]string
	deps  map[string][]string
}

func parseModulesDep(r io.Reader, where string) (*modulesDep, error) {
	d := &modulesDep{where: where, files: map[string]string{}, deps: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		mod, deps, ok := strings.Cut(text, ":")
		if !ok {
			return nil, fmt.Errorf("%s/modules.dep:%d: no ':' in %q", where, line, text)
		}
		stem := moduleStem(mod)
		d.files[stem] = mod
		d.deps[stem] = strings.Fields(deps)
	}
	return d, sc.Err()
}

// resolve returns name's module files in load order, dependencies first, skipping those in
// done (and adding what it returns to done).
func (d *modulesDep) resolve(name string, done map[string]bool) ([]string, error) {
	stem := strings.ReplaceAll(name, "-", "_")
	if _, ok := d.files[stem]; !ok {
		return nil, fmt.Errorf("module %q is not in %s/modules.dep (built into the kernel, or misspelt?)", name, d.where)
	}
	var out []string
	var visit func(stem string, depth int) error
	visit = func(stem string, depth int) error {
		if done[stem] {
			return nil
		}
		if depth > 64 {
			return fmt.Errorf("%s/modules.dep: dependencies of %s loop", d.where, name)
		}
		done[stem] = true
		deps := d.deps[stem]
		for i := len(deps) - 1; i >= 0; i-- { // modprobe's order: the last listed first
			if err := visit(moduleStem(deps[i]), depth+1); err != nil {
				return err
			}
		}
		if f, ok := d.files[stem]; ok {
			out = append(out, f)
		}
		return nil
	}
	return out, visit(stem, 0)
}

// companions are modules loaded before a module whose dependencies include the key, though no
// symbol links them: a virtio driver sees no device of a PCI machine (QEMU, KVM) until the
// virtio PCI transport is loaded.
var companions = map[string]string{"virtio": "virtio_pci"}

// resolveWith resolves name as resolve does, its companions first.
func (d *modulesDep) resolveWith(name string, done map[string]bool) ([]string, error) {
	trial, err := d.resolve(name, maps.Clone(done))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range trial {
		if c, ok := companions[moduleStem(f)]; ok && !done[c] && d.files[c] != "" {
			more, err := d.resolve(c, done)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
	}
	rest, err := d.resolve(name, done)
	return append(out, rest...), err
}

// kernelVersion is the version of the kernel the profile boots: from its file name
// (vmlinuz-VERSION), or from a bzImage's header; "" when neither tells.
func kernelVersion(file string, open func() (io.ReaderAt, func(), error)) string {
	if v, ok := strings.CutPrefix(path.Base(file), "vmlinuz-"); ok && v != "" {
		return v
	}
	if open == nil {
		return ""
	}
	r, done, err := open()
	if err != nil {
		return ""
	}
	defer done()
	return bzImageVersion(r)
}

// bzImageVersion reads the version string an x86 bzImage points at from its setup header
// ("HdrS" at 0x202, the string's offset minus 0x200 at 0x20e).
func bzImageVersion(r io.ReaderAt) string {
	var hdr [0x210]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil || string(hdr[0x202:0x206]) != "HdrS" {
		return ""
	}
	off := int64(binary.LittleEndian.Uint16(hdr[0x20e:])) + 0x200
	var s [256]byte
	n, _ := r.ReadAt(s[:], off)
	v, _, _ := strings.Cut(string(s[:n]), " ")
	if i := strings.IndexByte(v, 0); i >= 0 {
		v = v[:i]
	}
	return v
}

// imageModulesDirs lists the image's module directories that have a modules.dep, as paths in
// the image (usr/lib/modules/VERSION), sorted.
func (b *build) imageModulesDirs() []string {
	var out []string
	for p := range b.deps {
		out = append(out, path.Dir(p))
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// moduleSource finds the modules.dep of the kernel version: the image's own, else the host's.
func (b *build) moduleSource(version string) (*modulesDep, string, error) {
	dirs := b.imageModulesDirs()
	if version == "" {
		if len(dirs) == 1 {
			version = path.Base(dirs[0])
		} else {
			return nil, "", fmt.Errorf("--module by name: cannot tell the kernel's version (name it vmlinuz-VERSION), and the image has %d module directories; give the modules as .ko files", len(dirs))
		}
	}
	for _, dir := range []string{"usr/lib/modules/" + version, "lib/modules/" + version} {
		data, ok := b.deps[dir+"/modules.dep"]
		if !ok {
			continue
		}
		d, err := parseModulesDep(bytes.NewReader(data), "/"+dir)
		return d, dir, err
	}
	hostDir := filepath.Join(b.opt.HostModules, version)
	f, err := os.Open(filepath.Join(hostDir, "modules.dep"))
	if err != nil {
		return nil, "", fmt.Errorf("--module by name: no modules.dep for kernel %s in the image (/usr/lib/modules/%s) or on this host (%s): %w", version, version, hostDir, err)
	}
	defer f.Close()
	d, err := parseModulesDep(f, hostDir)
	return d, "", err
}

// resolveModules turns opt.Modules into the agent's modules in load order: files as given, and
// names resolved with their dependencies (and companions) from the modules.dep of the kernel the
// profile boots, each module once.
func (b *build) resolveModules(kernelFile string) error {
	var d *modulesDep
	imageDir := ""
	if slices.ContainsFunc(b.opt.Modules, func(m string) bool { return !isModulePath(m) }) {
		var err error
		if d, imageDir, err = b.moduleSource(kernelVersion(kernelFile, b.kernelOpener())); err != nil {
			return err
		}
		b.modulesFrom = d.where
	}
	done := map[string]bool{}
	for _, spec := range b.opt.Modules {
		if isModulePath(spec) {
			if err := b.addModule(agentModule{name: moduleStem(spec) + ".ko", path: spec}, done); err != nil {
				return err
			}
			continue
		}
		files, err := d.resolveWith(spec, done)
		if err != nil {
			return fmt.Errorf("--module: %w", err)
		}
		for _, f := range files {
			m, err := b.locateModule(d, imageDir, f)
			if err != nil {
				return err
			}
			b.modules = append(b.modules, m)
		}
	}
	return nil
}

// addModule adds a module given as a file, once.
func (b *build) addModule(m agentModule, done map[string]bool) error {
	stem := moduleStem(m.name)
	for _, o := range b.modules {
		if o.name == m.name {
			return fmt.Errorf("--module %s: a module named %s is already given", m.path, m.name)
		}
	}
	done[stem] = true
	b.modules = append(b.modules, m)
	return nil
}

// locateModule finds the file f of modules.dep d: in the image (imageDir) or on the host.
func (b *build) locateModule(d *modulesDep, imageDir, f string) (agentModule, error) {
	m := agentModule{name: moduleStem(f) + ".ko"}
	if imageDir == "" {
		m.path = filepath.Join(d.where, filepath.FromSlash(f))
		return m, nil
	}
	p, n := b.t.follow(path.Join(imageDir, f))
	if n == nil || n.inode == nil {
		return m, fmt.Errorf("--module: %s/modules.dep names %s, which the image does not have as a file", d.where, f)
	}
	m.image, m.in, m.data = "/"+p, n.inode, &bytes.Buffer{}
	return m, nil
}

// moduleBytes returns the module's contents, uncompressed: busybox insmod reads plain ELF only.
func (m agentModule) moduleBytes() ([]byte, error) {
	where := m.path
	var raw []byte
	if m.path != "" {
		f, err := os.Open(m.path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if raw, err = io.ReadAll(io.LimitReader(f, maxModuleBytes+1)); err != nil {
			return nil, fmt.Errorf("module %s: %w", m.path, err)
		}
	} else {
		where, raw = m.image, m.data.Bytes()
	}
	out, err := decompressModule(raw)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", where, err)
	}
	return out, nil
}

// decompressModule returns a module's ELF bytes from a plain, xz, zstd or gzip module file.
func decompressModule(raw []byte) ([]byte, error) {
	var r io.Reader
	switch {
	case bytes.HasPrefix(raw, []byte("\x7fELF")):
		if len(raw) > maxModuleBytes {
			return nil, fmt.Errorf("over %d bytes", maxModuleBytes)
		}
		return raw, nil
	case bytes.HasPrefix(raw, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		xr, err := xz.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("xz: %w", err)
		}
		r = xr
	case bytes.HasPrefix(raw, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(bytes.NewReader(raw), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer zr.Close()
		r = zr
	case bytes.HasPrefix(raw, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		r = zr
	default:
		return nil, errors.New("is neither a kernel module (ELF) nor an xz, zstd or gzip compressed one")
	}
	out, err := io.ReadAll(io.LimitReader(r, maxModuleBytes+1))
	if err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	if len(out) > maxModuleBytes || !bytes.HasPrefix(out, []byte("\x7fELF")) {
		return nil, errors.New("decompressed, is not a kernel module (ELF) of a sane size")
	}
	return out, nil
}

// checkModuleFile checks that a module given as a file exists and is a module, compressed or not.
func checkModuleFile(p string) error {
	_, err := (agentModule{path: p}).moduleBytes()
	return err
}

// maxDepBytes bounds a modules.dep kept from the first pass (a full distribution kernel's is
// under 1 MB).
const maxDepBytes = 16 << 20

// keepModulesDep keeps the data of a modules.dep entry of the first pass, to resolve module names
// before the second.
func (b *build) keepModulesDep(h *tar.Header, r io.Reader, at src) error {
	if h.Typeflag != tar.TypeReg || h.Size > maxDepBytes {
		return nil
	}
	if p, err := cleanName(h.Name); err != nil || !depPath.MatchString(p) {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(r, h.Size))
	if err != nil {
		return err
	}
	b.depData[at] = data
	return nil
}

// kernelOpener opens the kernel given as a file, to read its version from its header; nil for
// the image's own kernel (its file name gives the version).
func (b *build) kernelOpener() func() (io.ReaderAt, func(), error) {
	if b.opt.Kernel == "" {
		return nil
	}
	return func() (io.ReaderAt, func(), error) {
		f, err := os.Open(b.opt.Kernel)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { f.Close() }, nil
	}
}
