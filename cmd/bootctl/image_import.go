package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/images/ociimport"
	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/bootfabric/bootfabric/units"
	"github.com/urfave/cli/v2"
)

func imageImportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "import a container image (OCI layout directory, OCI archive, docker save tarball) or a root file system tarball (.tar, .tar.gz, .tar.zst, .tar.xz) as a profile booted from RAM",
		ArgsUsage: "SOURCE",
		Flags: []cli.Flag{
			storeFlag(),
			&cli.StringFlag{Name: "name", Required: true, Usage: "profile name ([a-z0-9][a-z0-9._-]*)"},
			&cli.StringFlag{Name: "kernel", Usage: "kernel file (default: the image's /boot/vmlinuz*, the newest)"},
			&cli.StringFlag{Name: "cmdline", Usage: "kernel command line"},
			&cli.StringFlag{Name: "compress", Value: ociimport.Gzip, Usage: "initramfs compression: gzip (every kernel) or zstd (Linux 5.9 and later)"},
			&cli.StringFlag{Name: "platform", Usage: "os/arch[/variant] to take from a multi-platform image (default linux/ and this machine's architecture)"},
			&cli.BoolFlag{Name: "agent", Value: true, Usage: "add the bootfabric agent as /init: DHCP, the health report with the node's token, then the image's /sbin/init (--agent=false: the image alone; boot it with rdinit=/sbin/init)"},
			&cli.StringFlag{Name: "busybox", Value: images.DefaultBusybox, Usage: "static busybox the agent runs on (Debian package busybox-static)"},
			&cli.StringSliceFlag{Name: "module", Usage: "kernel module the agent loads before DHCP: a NAME (virtio_net: with its dependencies, from the modules.dep of the kernel's version in the image, else in /lib/modules) or a .ko file (.ko.xz and .ko.zst are decompressed); repeatable, in load order"},
			withChoices(cli.StringFlag{Name: "delivery", Value: "server", Usage: "server (one initramfs from the boot server) or p2p (two stages: a small agent initrd from the server, which fetches the root image from its peers and the server, every piece checked)"}, "server", "p2p"),
			&cli.StringFlag{Name: "fetcher", Usage: "--delivery p2p: the static bootfetch the agent runs (default: bootfetch beside bootctl, else on $PATH)"},
			&cli.DurationFlag{Name: "seed-for", Value: images.DefaultSeedFor, Usage: "--delivery p2p: how long a node serves its root image to peers once booted (0s: not at all)"},
			&cli.StringFlag{Name: "max-size", Value: "8GiB", Usage: "refuse an image whose files hold more than this, uncompressed (the initramfs a node unpacks in RAM)"},
			&cli.IntFlag{Name: "max-entries", Value: ociimport.DefaultMaxEntries, Usage: "refuse an image with more tar entries than this in all its layers"},
			outputFlag("table", "json", "yaml"),
		},
		Action: func(c *cli.Context) error { return imageImport(e, c) },
	}
}

// imageImport checks the flags, imports the image and shows the profile it made.
func imageImport(e *env, c *cli.Context) error {
	format := c.String("output")
	opt := ociimport.Options{Source: c.Args().First(), Name: c.String("name"), Kernel: c.String("kernel"),
		Cmdline: c.String("cmdline"), Compression: c.String("compress"), Platform: c.String("platform")}
	if opt.Compression != ociimport.Gzip && opt.Compression != ociimport.Zstd {
		return badInput("--compress: %q is not one of gzip, zstd", opt.Compression)
	}
	if err := importAgentFlags(c, &opt); err != nil {
		return err
	}
	if err := importDeliveryFlags(c, &opt); err != nil {
		return err
	}
	maxSize, err := units.ParseSize(c.String("max-size"))
	if err != nil {
		return badInput("--max-size: %w", err)
	}
	opt.MaxBytes = int64(maxSize)
	if opt.MaxEntries = c.Int("max-entries"); opt.MaxEntries <= 0 {
		return badInput("--max-entries: %d is not a positive count", opt.MaxEntries)
	}
	if opt.Kernel != "" {
		if fi, err := os.Stat(opt.Kernel); err != nil {
			return badInput("--kernel: %w", err)
		} else if !fi.Mode().IsRegular() {
			return badInput("--kernel: %s is not a regular file", opt.Kernel)
		}
	}
	res, err := importIntoStore(c, opt)
	if err != nil {
		return err
	}
	// On stderr in every format (and in the result's warnings): the profile is stored, but the
	// admin should know before a node tries it.
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stderr, "bootctl image import: warning: %s\n", w)
	}
	return writeResult(e.stdout, format, res, func(io.Writer) error { return writeImportTable(e, res) })
}

// importAgentFlags checks --agent, --busybox and --module into opt.
func importAgentFlags(c *cli.Context, opt *ociimport.Options) error {
	mods := c.StringSlice("module")
	if !c.Bool("agent") {
		if len(mods) > 0 {
			return badInput("--module: the agent loads modules, and --agent=false leaves it out")
		}
		return nil
	}
	opt.Busybox = c.String("busybox")
	if err := images.CheckStatic(opt.Busybox); err != nil {
		return badInput("--busybox: %w (install busybox-static, or --agent=false)", err)
	}
	opt.Modules = mods
	return nil
}

// importDeliveryFlags checks --delivery, --fetcher and --seed-for into opt.
func importDeliveryFlags(c *cli.Context, opt *ociimport.Options) error {
	switch d := c.String("delivery"); {
	case d == "server":
		if c.IsSet("fetcher") || c.IsSet("seed-for") {
			return badInput("--fetcher and --seed-for: only with --delivery p2p")
		}
		return nil
	case d != "p2p":
		return badInput("--delivery: %q is not one of server, p2p", d)
	case opt.Busybox == "":
		return badInput("--delivery p2p: the agent fetches the root image, and --agent=false leaves it out")
	case opt.Compression != ociimport.Gzip:
		return badInput("--delivery p2p: --compress must be gzip (the agent's busybox unpacks the root image), not %s", opt.Compression)
	case c.Duration("seed-for") < 0:
		return badInput("--seed-for: %s is negative (0s: no seeding)", c.Duration("seed-for"))
	}
	fetcher, err := findFetcher(c.String("fetcher"))
	if err != nil {
		return badInput("--fetcher: %w", err)
	}
	if err := images.CheckStatic(fetcher); err != nil {
		return badInput("--fetcher: %w (build it with CGO_ENABLED=0 go build ./cmd/bootfetch)", err)
	}
	opt.Fetcher, opt.SeedFor = fetcher, c.Duration("seed-for")
	return nil
}

// findFetcher is the fetcher given, or bootfetch beside this bootctl, or on $PATH.
func findFetcher(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "bootfetch")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("bootfetch")
	if err != nil {
		return "", fmt.Errorf("no bootfetch beside bootctl or on $PATH: give one (CGO_ENABLED=0 go build ./cmd/bootfetch)")
	}
	return p, nil
}

// importIntoStore runs the import; a store it had to create is removed again when the import
// fails, so that a failed first import leaves nothing behind.
func importIntoStore(c *cli.Context, opt ociimport.Options) (ociimport.Result, error) {
	dir := c.String("store")
	_, statErr := os.Stat(dir)
	created := errors.Is(statErr, fs.ErrNotExist)
	st, err := images.Create(dir)
	if err != nil {
		return ociimport.Result{}, err
	}
	res, err := ociimport.Import(c.Context, st, opt)
	if err == nil {
		return res, nil
	}
	if created {
		// Only empty directories go: whatever else appeared meanwhile stays.
		os.Remove(filepath.Join(dir, "blobs", "sha256"))
		os.Remove(filepath.Join(dir, "blobs"))
		os.Remove(dir)
	}
	if errors.Is(err, ociimport.ErrBadImage) || errors.Is(err, ociimport.ErrOptions) || errors.Is(err, images.ErrInvalid) {
		return res, asBadInput(err)
	}
	return res, err
}

func writeImportTable(e *env, res ociimport.Result) error {
	p := res.Profile
	t := texttable.New(e.stdout)
	t.Row("profile", "format", "layers", "entries", "cpio MB", "initrd MB", "kernel MB", "kernel from")
	t.Row(p.Name, res.Format, res.Layers, res.Entries, texttable.Float(float64(res.CpioBytes)/1e6, 1),
		texttable.Float(float64(p.Files[p.Initrd].Size)/1e6, 1), texttable.Float(float64(p.Files[p.Kernel].Size)/1e6, 1), res.KernelSource)
	if err := t.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(e.stdout, "image %s, initrd %s (%s) sha256 %s\n", texttable.OrDash(res.Digest), p.Initrd, res.Compression, p.Files[p.Initrd].SHA256); err != nil {
		return err
	}
	if p.Root != "" {
		if _, err := fmt.Fprintf(e.stdout, "delivery p2p: the initrd is the agent (%s MB); root image %s (%s MB), fetched through the fabric, sha256 %s\n",
			texttable.Float(float64(p.Files[p.Initrd].Size)/1e6, 1), p.Root, texttable.Float(float64(p.Files[p.Root].Size)/1e6, 1), p.Files[p.Root].SHA256); err != nil {
			return err
		}
	}
	if len(res.Modules) > 0 {
		_, err := fmt.Fprintf(e.stdout, "modules, in load order: %s\n", strings.Join(res.Modules, " "))
		return err
	}
	return nil
}
