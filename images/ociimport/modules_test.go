package ociimport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// debianDep is the virtio part of Debian bookworm's modules.dep (6.1.0-amd64), file names
// compressed or not as each test case says.
func debianDep(suffix string) string {
	return strings.NewReplacer(".ko", ".ko"+suffix).Replace(`kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/net/core/failover.ko:
kernel/drivers/net/net_failover.ko: kernel/net/core/failover.ko
kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/net/e1000/e1000.ko:
`)
}

// debianLoadOrder is what the agent must load for virtio_net: dependencies first, and the PCI
// transport without which a virtio NIC never appears.
var debianLoadOrder = []string{"virtio_ring.ko", "virtio.ko", "virtio_pci_modern_dev.ko", "virtio_pci_legacy_dev.ko",
	"virtio_pci.ko", "failover.ko", "net_failover.ko", "virtio_net.ko"}

// moduleFiles are the module files of debianDep, each "\x7fELF <name>" compressed by comp.
func moduleFiles(t testing.TB, comp, suffix string) map[string][]byte {
	out := map[string][]byte{}
	for line := range strings.SplitSeq(debianDep(suffix), "\n") {
		if f, _, ok := strings.Cut(line, ":"); ok {
			out[f] = compress(t, comp, []byte("\x7fELF "+moduleStem(f)))
		}
	}
	return out
}

// TestImportModuleByName: --module virtio_net is resolved with its dependencies (and the virtio
// PCI transport) from the modules.dep of the kernel's version, in the image or else on the host,
// modules compressed with xz or zstd are decompressed for busybox insmod, a .ko path still works,
// and an unknown name is one error naming the modules.dep.
func TestImportModuleByName(t *testing.T) {
	testenv.NeedFile(t, images.DefaultBusybox, "busybox-static")
	imageWith := func(comp, suffix string) []te {
		es := append([]te{}, bootLayer...)
		es = append(es, symlink("lib", "usr/lib"), file("usr/lib/modules/6.1.0/modules.dep", debianDep(suffix)))
		for f, b := range moduleFiles(t, comp, suffix) {
			es = append(es, file("usr/lib/modules/6.1.0/"+f, string(b)))
		}
		return es
	}
	host := t.TempDir()
	hostKernel := filepath.Join(host, "vmlinuz-6.1.0-host")
	os.WriteFile(hostKernel, []byte("KERNEL"), 0o644)
	os.MkdirAll(filepath.Join(host, "modules", "6.1.0-host"), 0o755)
	os.WriteFile(filepath.Join(host, "modules", "6.1.0-host", "modules.dep"), []byte(debianDep("")), 0o644)
	for f, b := range moduleFiles(t, "", "") {
		p := filepath.Join(host, "modules", "6.1.0-host", f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, b, 0o644)
	}
	ko := filepath.Join(host, "e1000e.ko")
	os.WriteFile(ko, []byte("\x7fELF e1000e"), 0o644)

	for _, tc := range []struct {
		name    string
		layer   []te
		kernel  string
		modules []string
		want    []string
		from    string
	}{
		{"image, plain", imageWith("", ""), "", []string{"virtio_net"}, debianLoadOrder, "/usr/lib/modules/6.1.0"},
		{"image, xz", imageWith("xz", ".xz"), "", []string{"virtio-net"}, debianLoadOrder, "/usr/lib/modules/6.1.0"},
		{"image, zstd, a path first", imageWith("zstd", ".zst"), "", []string{ko, "virtio_net", "failover"}, append([]string{"e1000e.ko"}, debianLoadOrder...), "/usr/lib/modules/6.1.0"},
		{"host kernel's modules", bootLayer, hostKernel, []string{"virtio_net"}, debianLoadOrder, filepath.Join(host, "modules", "6.1.0-host")},
		{"no dependencies", imageWith("", ""), "", []string{"e1000"}, []string{"e1000.ko"}, "/usr/lib/modules/6.1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := writeLayout(t, dir, testImage(t, tc.layer, []te{file("sbin/init", "")}))
			st, res, err := importInto(t, dir, Options{Source: src, Busybox: images.DefaultBusybox, Kernel: tc.kernel,
				Modules: tc.modules, HostModules: filepath.Join(host, "modules")})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, res.Modules); diff != "" || res.ModulesFrom != tc.from {
				t.Errorf("modules from %s (-want +got):\n%s", res.ModulesFrom, diff)
			}
			initrd, _ := st.BlobPath("test", res.Profile.Initrd)
			files := map[string]string{}
			for _, e := range readCpio(t, initrd) {
				files[e.Name] = e.Data
			}
			if got := files[".bootfabric/modules.order"]; got != strings.Join(tc.want, "\n")+"\n" {
				t.Errorf("modules.order:\n%s", got)
			}
			for _, m := range tc.want {
				if got, want := files[".bootfabric/modules/"+m], "\x7fELF "+strings.TrimSuffix(m, ".ko"); got != want {
					t.Errorf("%s: %q, want %q (decompressed)", m, got, want)
				}
			}
		})
	}

	for _, tc := range []struct {
		name    string
		layer   []te
		modules []string
		want    string
	}{
		{"unknown name", imageWith("", ""), []string{"virtio_nte"}, `module "virtio_nte" is not in /usr/lib/modules/6.1.0/modules.dep`},
		{"no modules.dep", bootLayer, []string{"virtio_net"}, "no modules.dep for kernel 6.1.0 in the image"},
		{"not a module", bootLayer, []string{filepath.Join(host, "modules", "6.1.0-host", "modules.dep")}, "neither a kernel module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := writeLayout(t, dir, testImage(t, tc.layer))
			_, _, err := importInto(t, dir, Options{Source: src, Busybox: images.DefaultBusybox, Modules: tc.modules, HostModules: filepath.Join(host, "modules")})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestImportInitWarning: an image without the init the agent starts (symbolic links followed as
// at boot, bootfabric.init= honoured) is imported with a warning saying so; one with it, none.
func TestImportInitWarning(t *testing.T) {
	testenv.NeedFile(t, images.DefaultBusybox, "busybox-static")
	systemd := []te{symlink("sbin", "usr/sbin"), dir("usr/"), dir("usr/sbin/"), symlink("usr/sbin/init", "../lib/systemd/systemd"),
		te{name: "usr/lib/systemd/systemd", data: "ELF", mode: 0o755}}
	for _, tc := range []struct {
		name    string
		layer   []te
		cmdline string
		agent   bool
		want    string
	}{
		{"systemd through links", systemd, "", true, ""},
		{"no init", nil, "", true, "the image has no /sbin/init (what the agent starts)"},
		{"bootfabric.init names a missing one", systemd, "console=ttyS0 bootfabric.init=/bin/sh", true, "no /bin/sh (bootfabric.init= on --cmdline)"},
		{"not executable", []te{file("sbin/init", "")}, "", true, "no executable /sbin/init"},
		{"without the agent, rdinit", systemd, "rdinit=/sbin/init", false, ""},
		{"without the agent, no /init", systemd, "", false, "no /init (the kernel's default)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			src := writeLayout(t, tmp, testImage(t, bootLayer, append([]te{dir("etc/")}, tc.layer...)))
			opt := Options{Source: src, Cmdline: tc.cmdline}
			if tc.agent {
				opt.Busybox = images.DefaultBusybox
			}
			_, res, err := importInto(t, tmp, opt)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && len(res.Warnings) != 0:
				t.Errorf("warnings %q, want none", res.Warnings)
			case tc.want != "" && (len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], tc.want)):
				t.Errorf("warnings %q, want one with %q", res.Warnings, tc.want)
			}
		})
	}
}
