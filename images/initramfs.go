package images

import (
	"bufio"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bootfabric/bootfabric/internal/atomicfile"
)

// DefaultBusybox is where Debian's busybox-static package puts its binary.
const DefaultBusybox = "/bin/busybox"

// InitramfsConfig configures BuildInitramfs; zero values take defaults.
type InitramfsConfig struct {
	Busybox string // static busybox binary; DefaultBusybox when empty
	Init    string // /init script; AgentInit(InitramfsLayout()) when empty
	// Modules are kernel module files (uncompressed .ko) copied into
	// /lib/modules/ under their base names and listed, in the given order,
	// in /etc/modules.order; the default /init insmods them in that order before
	// it brings the network up, so list dependencies first.
	Modules []string
}

// BuildInitramfs writes a gzip-compressed newc cpio archive holding a
// static busybox (/bin/busybox, /bin/sh), /init, /etc/udhcpc.script, the
// mount points and /dev/console. The same inputs give the same bytes.
func BuildInitramfs(w io.Writer, cfg InitramfsConfig) error {
	if cfg.Busybox == "" {
		cfg.Busybox = DefaultBusybox
	}
	if cfg.Init == "" {
		cfg.Init = AgentInit(InitramfsLayout())
	}
	bb, err := os.ReadFile(cfg.Busybox)
	if err != nil {
		return fmt.Errorf("images: initramfs: %w (install the Debian package busybox-static)", err)
	}
	if err := checkStatic(cfg.Busybox); err != nil {
		return fmt.Errorf("images: initramfs: %w", err)
	}
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(zw)
	c := newEntryWriter(bw)
	entries := []cpioEntry{}
	for _, d := range []string{"bin", "dev", "etc", "proc", "run", "sbin", "sys", "tmp", "usr", "usr/bin", "usr/sbin"} {
		entries = append(entries, cpioEntry{Name: d, Mode: CpioDir | 0o755})
	}
	entries = append(entries,
		cpioEntry{Name: "dev/console", Mode: CpioCharDev | 0o600, RMajor: 5, RMin: 1},
		cpioEntry{Name: "bin/busybox", Mode: CpioRegular | 0o755, Data: bb},
		cpioEntry{Name: "bin/sh", Mode: CpioSymlink | 0o777, Data: []byte("busybox")},
		cpioEntry{Name: "etc/udhcpc.script", Mode: CpioRegular | 0o755, Data: []byte(AgentDHCPScript(InitramfsLayout()))},
		cpioEntry{Name: "init", Mode: CpioRegular | 0o755, Data: []byte(cfg.Init)},
	)
	if len(cfg.Modules) > 0 {
		mods, err := moduleEntries(cfg.Modules)
		if err != nil {
			return fmt.Errorf("images: initramfs: %w", err)
		}
		entries = append(entries, mods...)
	}
	for _, e := range entries {
		if err := c.add(e); err != nil {
			return fmt.Errorf("images: initramfs: %w", err)
		}
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("images: initramfs: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("images: initramfs: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("images: initramfs: %w", err)
	}
	return nil
}

// WriteInitramfs builds the initramfs into path (atomically: temporary
// file, then rename).
func WriteInitramfs(path string, cfg InitramfsConfig) error {
	err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return BuildInitramfs(w, cfg) })
	if err != nil {
		return fmt.Errorf("images: writing initramfs %s: %w", path, err)
	}
	return nil
}

// CheckStatic refuses a file that is not a statically linked ELF binary, naming it: an
// initramfs has no libc for a dynamic one.
func CheckStatic(path string) error { return checkStatic(path) }

// checkStatic refuses a dynamically linked binary: the initramfs has no
// libc for it.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: not an ELF binary: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; use a static busybox (Debian package busybox-static)", path)
		}
	}
	return nil
}

// moduleEntries returns the archive entries of kernel modules: the
// directories, each module under lib/modules/ and etc/modules.order.
func moduleEntries(paths []string) ([]cpioEntry, error) {
	out := []cpioEntry{{Name: "lib", Mode: CpioDir | 0o755}, {Name: "lib/modules", Mode: CpioDir | 0o755}}
	var order strings.Builder
	seen := map[string]bool{}
	for _, p := range paths {
		base := filepath.Base(p)
		if seen[base] {
			return nil, fmt.Errorf("module %s: a module named %s is already listed", p, base)
		}
		seen[base] = true
		if strings.HasSuffix(base, ".xz") || strings.HasSuffix(base, ".zst") || strings.HasSuffix(base, ".gz") {
			return nil, fmt.Errorf("module %s is compressed; busybox insmod needs an uncompressed .ko", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("module: %w", err)
		}
		if len(data) < 4 || string(data[:4]) != "\x7fELF" {
			return nil, fmt.Errorf("module %s is not an ELF object", p)
		}
		out = append(out, cpioEntry{Name: "lib/modules/" + base, Mode: CpioRegular | 0o644, Data: data})
		order.WriteString(base + "\n")
	}
	return append(out, cpioEntry{Name: "etc/modules.order", Mode: CpioRegular | 0o644, Data: []byte(order.String())}), nil
}
