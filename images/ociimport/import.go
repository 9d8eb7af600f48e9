package ociimport

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/images"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Compression names of the initramfs.
const (
	Gzip = "gzip" // read by every kernel
	Zstd = "zstd" // smaller and faster to unpack; kernels 5.9 and later (CONFIG_RD_ZSTD)
)

// Options says what to import and how.
type Options struct {
	Source      string // OCI layout directory, OCI archive or docker save tarball
	Name        string // profile name
	Kernel      string // kernel file; empty: the image's /boot/vmlinuz*
	Cmdline     string // the profile's kernel command line
	Compression string // Gzip (default) or Zstd
	Platform    string // os/arch[/variant] picked from a multi-platform index; default linux/GOARCH
	TempDir     string // where an OCI archive is unpacked; default os.TempDir()
	// Busybox, when set, is a static busybox binary: Import adds the agent (images.AgentInit as /init,
	// busybox under AgentDir) that reports the node's health and then runs the image's init.
	// Empty: the image's files only (boot it with rdinit=/sbin/init on the command line).
	Busybox string
	// Modules are kernel modules the agent loads, in this order, before it brings the network up:
	// the NIC's driver when the kernel has it as a module. Each is a file (a path, or a name ending
	// in .ko, .ko.xz, .ko.zst or .ko.gz; compressed ones are decompressed, since busybox insmod
	// reads plain ELF) or a module name (virtio_net), resolved with its dependencies, loaded first,
	// from the modules.dep of the profile's kernel version in the image, else on the host
	// (HostModules).
	Modules []string
	// Fetcher, when set (with Busybox), makes a two-stage profile for peer delivery: the image's
	// files become the root image (RootName, gzip, which busybox unpacks), fetched by the node
	// through the fabric; the initrd (StageOneName) is only the agent, its modules and this static
	// bootfetch, which the agent runs and leaves seeding for SeedFor (0: not at all;
	// images.DefaultSeedFor is what bootctl gives).
	Fetcher string
	SeedFor time.Duration
	// MaxBytes bounds the files of the final tree, uncompressed (the initramfs a node unpacks in
	// RAM), and MaxEntries the tar entries read from all layers (what the index holds in memory,
	// about 800 bytes each): a small compressed layer can hold gigabytes of zeros or millions of
	// empty files. Zero: DefaultMaxBytes, DefaultMaxEntries.
	MaxBytes   int64
	MaxEntries int
	// HostModules is where the host's module directories are (DefaultHostModules), searched for a
	// module name when the image has no modules.dep for the kernel.
	HostModules string
}

// The import's default ceilings: a full Debian system with its documentation is about 60,000
// entries and 1 GiB; an initramfs over 8 GiB would not fit the RAM of most nodes next to its
// unpacked copy.
const (
	DefaultMaxBytes   int64 = 8 << 30
	DefaultMaxEntries       = 1_000_000
)

// Result describes an import.
type Result struct {
	Profile      images.Profile `json:"profile"`
	Source       string         `json:"source"`
	Format       string         `json:"format"` // oci-layout, oci-archive or docker-archive
	Digest       string         `json:"digest"` // the image manifest's
	Layers       int            `json:"layers"`
	Entries      int            `json:"entries"`       // archive entries written
	CpioBytes    int64          `json:"cpio_bytes"`    // uncompressed archive size
	KernelSource string         `json:"kernel_source"` // path in the image, or the file given
	Compression  string         `json:"compression"`
	Agent        bool           `json:"agent"` // the health-reporting /init was added
	// Delivery is "server" (one initramfs, from the boot server) or "p2p" (two stages: the agent's
	// initrd from the server, the root image through the fabric).
	Delivery string `json:"delivery"`
	// Modules are the module files the agent loads, in order; ModulesFrom the modules.dep the
	// names were resolved with.
	Modules     []string `json:"modules"`
	ModulesFrom string   `json:"modules_from,omitempty"`
	// Warnings are what the import noticed that may keep the image from booting (no init the
	// agent can start); the profile is stored all the same.
	Warnings []string `json:"warnings"`
}

// Import reads the image opt.Source, builds its initramfs and kernel and stores them in st as
// the profile opt.Name. Errors caused by the image wrap ErrBadImage and name the source.
func Import(ctx context.Context, st *images.Store, opt Options) (Result, error) {
	opt, want, err := opt.withDefaults()
	if err != nil {
		return Result{}, err
	}
	src, err := openSource(ctx, opt.Source, want, opt.TempDir)
	if err != nil {
		return Result{}, opt.bad(err)
	}
	defer src.cleanup()
	res := Result{Source: opt.Source, Format: src.format, Compression: opt.Compression, Agent: opt.Busybox != "",
		Modules: []string{}, Warnings: []string{}, Delivery: "server"}
	if opt.Fetcher != "" {
		res.Delivery = "p2p"
	}
	lr, err := src.reader(&res)
	if err != nil {
		return Result{}, opt.bad(err)
	}
	b := &build{ctx: ctx, st: st, opt: opt, lr: lr, t: newTree()}
	defer b.removeStaged()
	if err := b.index(); err != nil {
		return Result{}, err
	}
	if err := b.prepare(&res); err != nil {
		return Result{}, opt.bad(err)
	}
	if err := b.write(&res); err != nil {
		return Result{}, err
	}
	p, err := st.AddStaged(b.profile(), b.files)
	if err != nil {
		return Result{}, err
	}
	res.Profile = p
	return res, nil
}

// prepare settles, between the passes, what the second needs: the agent's modules, and the
// warning when the image has no init to start.
func (b *build) prepare(res *Result) error {
	kernel := b.opt.Kernel
	if kernel == "" {
		p, _, err := findKernel(b.t)
		if err != nil {
			return err
		}
		kernel = p
	}
	if err := b.resolveModules(kernel); err != nil {
		return err
	}
	for _, m := range b.modules {
		res.Modules = append(res.Modules, m.name)
	}
	res.ModulesFrom = b.modulesFrom
	if w := b.initWarning(); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
	return nil
}

// ErrOptions is wrapped by errors about the Options themselves (not the image).
var ErrOptions = errors.New("bad import options")

// withDefaults checks the options and fills in defaults.
func (opt Options) withDefaults() (Options, v1.Platform, error) {
	if opt.Compression == "" {
		opt.Compression = Gzip
	}
	if opt.Compression != Gzip && opt.Compression != Zstd {
		return opt, v1.Platform{}, fmt.Errorf("ociimport: %w: compression %q is not gzip or zstd", ErrOptions, opt.Compression)
	}
	if opt.Platform == "" {
		opt.Platform = "linux/" + runtime.GOARCH
	}
	pl, err := v1.ParsePlatform(opt.Platform)
	if err != nil {
		return opt, v1.Platform{}, fmt.Errorf("ociimport: %w: platform %q: %w", ErrOptions, opt.Platform, err)
	}
	if opt.TempDir == "" {
		opt.TempDir = os.TempDir()
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultMaxBytes
	}
	if opt.MaxEntries <= 0 {
		opt.MaxEntries = DefaultMaxEntries
	}
	if opt.HostModules == "" {
		opt.HostModules = DefaultHostModules
	}
	if err := opt.checkAgent(); err != nil {
		return opt, v1.Platform{}, err
	}
	if err := (images.Profile{Name: opt.Name, Kernel: "vmlinuz", Cmdline: opt.Cmdline}).Validate(); err != nil {
		return opt, v1.Platform{}, fmt.Errorf("ociimport: %w: %w", ErrOptions, err)
	}
	return opt, *pl, nil
}

// checkAgent checks the agent's busybox, its fetcher and the modules given as files.
func (opt Options) checkAgent() error {
	if err := opt.checkFetcher(); err != nil {
		return err
	}
	if opt.Busybox == "" {
		if len(opt.Modules) > 0 {
			return fmt.Errorf("ociimport: %w: modules are loaded by the agent, and there is no agent (no busybox)", ErrOptions)
		}
		return nil
	}
	if err := images.CheckStatic(opt.Busybox); err != nil {
		return fmt.Errorf("ociimport: %w: agent: %w", ErrOptions, err)
	}
	for _, m := range opt.Modules {
		if isModulePath(m) {
			if err := checkModuleFile(m); err != nil {
				return fmt.Errorf("ociimport: %w: --module: %w", ErrOptions, err)
			}
		}
	}
	return nil
}

// checkFetcher checks what a two-stage profile needs: the agent, a static fetcher, gzip.
func (opt Options) checkFetcher() error {
	if opt.Fetcher == "" {
		return nil
	}
	if opt.Busybox == "" {
		return fmt.Errorf("ociimport: %w: peer delivery: the agent fetches the root image, and there is no agent (no busybox)", ErrOptions)
	}
	if err := images.CheckStatic(opt.Fetcher); err != nil {
		return fmt.Errorf("ociimport: %w: fetcher: %w", ErrOptions, err)
	}
	if opt.Compression != Gzip {
		return fmt.Errorf("ociimport: %w: peer delivery: the root image is gzip, which the agent's busybox unpacks (not %s)", ErrOptions, opt.Compression)
	}
	if opt.SeedFor < 0 {
		return fmt.Errorf("ociimport: %w: seed time %s is negative", ErrOptions, opt.SeedFor)
	}
	return nil
}

// bad marks err as the image's fault and names the source.
func (opt Options) bad(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrBadImage, opt.Source, err)
}

// build is one import under way.
type build struct {
	ctx    context.Context
	st     *images.Store
	opt    Options
	lr     layerReader
	t      *tree
	kernel string            // the kernel's path in the image, if taken from it
	staged []string          // files to remove unless the store took them
	files  map[string]string // profile file name -> path, for AddStaged
	// depData holds the data of each modules.dep entry the first pass met, deps those that
	// survive, by path in the image; modules are the agent's, in load order.
	depData     map[src][]byte
	deps        map[string][]byte
	modules     []agentModule
	modulesFrom string
}

// index is the first pass: the tree from the layers' headers, within the options' ceilings.
func (b *build) index() error {
	entries := 0
	b.depData, b.deps = map[src][]byte{}, map[string][]byte{}
	for i := range b.lr.count() {
		err := b.lr.read(b.ctx, i, func(h *tar.Header, r io.Reader, at src) error {
			if entries++; entries > b.opt.MaxEntries {
				return fmt.Errorf("over %d entries (--max-entries)", b.opt.MaxEntries)
			}
			if err := b.t.apply(h, at); err != nil {
				return err
			}
			return b.keepModulesDep(h, r, at)
		})
		if err != nil {
			return b.opt.bad(err)
		}
	}
	b.t.finish()
	for at, data := range b.depData {
		if in := b.t.inodes[at]; in != nil {
			b.deps[in.members[0]] = data
		}
	}
	var size int64
	b.t.walk(func(_ string, n *node) { size += n.meta.size })
	if size > b.opt.MaxBytes {
		return b.opt.bad(fmt.Errorf("its files hold %d bytes, over the ceiling of %d (--max-size)", size, b.opt.MaxBytes))
	}
	return nil
}

// write is the second pass: the compressed archive and the kernel, staged in the store.
func (b *build) write(res *Result) error {
	b.files = map[string]string{}
	name := initrdName(b.opt.Compression)
	if b.opt.Fetcher != "" {
		name = RootName
	}
	out, err := b.stage(name)
	if err != nil {
		return err
	}
	e := newEmitter(b.t)
	for _, m := range b.modules {
		if m.in != nil {
			e.capture[m.in] = m.data
		}
	}
	if err := b.kernelFile(e, res); err != nil {
		out.Close()
		return err
	}
	n, err := b.archive(out, e)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if kf, ok := e.kernelOut.(*os.File); ok {
		if serr := kf.Sync(); err == nil {
			err = serr
		}
		if cerr := kf.Close(); err == nil {
			err = cerr
		}
	}
	res.Entries, res.CpioBytes = e.entries, n
	if err == nil && b.opt.Fetcher != "" {
		err = b.stageOne()
	}
	return err
}

// archive writes the compressed archive to out.
func (b *build) archive(out *os.File, e *emitter) (int64, error) {
	zw, err := compressor(out, b.opt.Compression)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(zw, 1<<20)
	e.cw = images.NewCpioWriter(bw)
	if err := e.dirs(); err != nil {
		return 0, b.opt.bad(err)
	}
	for i := range b.lr.count() {
		if err := b.lr.read(b.ctx, i, e.entry); err != nil {
			return 0, b.opt.bad(err)
		}
	}
	if b.opt.Busybox != "" && b.opt.Fetcher == "" {
		err = e.writeAgent(b.opt.Busybox, b.modules, agentLayout(), "")
	}
	if err := endArchive(e.cw, bw, zw, out, err); err != nil {
		return 0, fmt.Errorf("ociimport: writing the initramfs: %w", err)
	}
	return e.cw.Len(), nil
}

// endArchive ends an archive written through bw and zw into out, unless err: the trailer, the
// buffer, the compressor, then out is synced. It returns the first error.
func endArchive(cw *images.CpioWriter, bw *bufio.Writer, zw io.WriteCloser, out *os.File, err error) error {
	if err == nil {
		err = cw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = out.Sync()
	}
	return err
}

// kernelFile arranges for the kernel: the file given, or the image's, copied out during the
// second pass.
func (b *build) kernelFile(e *emitter, res *Result) error {
	if b.opt.Kernel != "" {
		b.files["vmlinuz"] = b.opt.Kernel
		res.KernelSource = b.opt.Kernel
		return nil
	}
	p, in, err := findKernel(b.t)
	if err != nil {
		return b.opt.bad(err)
	}
	kf, err := b.stage("vmlinuz")
	if err != nil {
		return err
	}
	b.kernel, e.kernel, e.kernelOut = p, in, kf
	res.KernelSource = "/" + p
	return nil
}

// stage creates a staged file in the store for the profile file name.
func (b *build) stage(name string) (*os.File, error) {
	f, err := b.st.StageFile()
	if err != nil {
		return nil, err
	}
	b.staged = append(b.staged, f.Name())
	b.files[name] = f.Name()
	return f, nil
}

func (b *build) removeStaged() {
	for _, p := range b.staged {
		os.Remove(p) // fails harmlessly once the store moved it
	}
}

func (b *build) profile() images.Profile {
	if b.opt.Fetcher != "" {
		return images.Profile{Name: b.opt.Name, Kernel: "vmlinuz", Initrd: StageOneName, Root: RootName, Cmdline: b.opt.Cmdline}
	}
	return images.Profile{Name: b.opt.Name, Kernel: "vmlinuz", Initrd: initrdName(b.opt.Compression), Cmdline: b.opt.Cmdline}
}

func initrdName(compression string) string {
	if compression == Zstd {
		return "initramfs.cpio.zst"
	}
	return "initramfs.cpio.gz"
}

// compressor wraps w in the chosen compression. zstd runs on one goroutine: the machines that
// import share their cores, and the memory stays one window.
func compressor(w io.Writer, compression string) (io.WriteCloser, error) {
	if compression == Zstd {
		return zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
	}
	return gzip.NewWriterLevel(w, gzip.DefaultCompression)
}

// findKernel returns the image's boot kernel: the /boot/vmlinuz* with the highest version,
// following symlinks inside the image.
func findKernel(t *tree) (string, *inode, error) {
	boot := t.lookup("boot")
	var names []string
	if boot != nil {
		for name := range boot.children {
			if strings.HasPrefix(name, "vmlinuz") {
				names = append(names, name)
			}
		}
	}
	sort.Slice(names, func(i, j int) bool { return versionLess(names[j], names[i]) })
	for _, name := range names {
		if p, n := t.resolve("boot/"+name, 0); n != nil && n.inode != nil {
			return p, n.inode, nil
		}
	}
	return "", nil, errors.New("no kernel: the image has no /boot/vmlinuz* file; give one with --kernel")
}

// resolve follows symlinks from p inside the tree, at most 40 deep as the kernel does.
func (t *tree) resolve(p string, depth int) (string, *node) {
	n := t.lookup(p)
	if n == nil || n.meta.mode&images.CpioTypeMask != images.CpioSymlink {
		return p, n
	}
	if depth >= 40 {
		return p, nil
	}
	target := n.meta.link
	if !strings.HasPrefix(target, "/") {
		target = path.Join(path.Dir(p), target)
	}
	next, err := cleanName(target)
	if err != nil {
		return p, nil
	}
	return t.resolve(next, depth+1)
}

// versionLess compares names with their digit runs as numbers, so vmlinuz-6.10 > vmlinuz-6.9.
func versionLess(a, b string) bool {
	for a != "" && b != "" {
		da, ra := digitRun(a)
		db, rb := digitRun(b)
		switch {
		case da != "" && db != "":
			if len(da) != len(db) {
				return len(da) < len(db)
			}
			if da != db {
				return da < db
			}
			a, b = ra, rb
		case a[0] != b[0]:
			return a[0] < b[0]
		default:
			a, b = a[1:], b[1:]
		}
	}
	return len(a) < len(b)
}

// digitRun splits s into its leading digits (leading zeros dropped) and the rest.
func digitRun(s string) (string, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return strings.TrimLeft(s[:i], "0"), s[i:]
}
