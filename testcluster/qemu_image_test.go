package testcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"go.uber.org/zap/zaptest"
)

// rootfsTarVar names a Debian root file system tar to use instead of building one with
// mmdebstrap (which downloads about 90 packages from the Debian mirror apt uses).
const rootfsTarVar = "BOOTFABRIC_ROOTFS_TAR"

// debianOCI is the Debian root file system (cachedDebianRootfs) as an OCI layout.
func debianOCI(t *testing.T) string {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	rootfs := cachedDebianRootfs(t, ctx)
	start := time.Now()
	oci := ociLayoutFromTar(t, rootfs)
	t.Logf("OCI layout of %s in %.1f s", rootfs, time.Since(start).Seconds())
	return oci
}

// bootImageVM boots one VM of c with the imported image and checks that its serial log shows
// what wants says for its node; it returns the boot and the serial log. opt gives the boot's
// timeout and how long the VM may run on after its health report.
func bootImageVM(t *testing.T, ctx context.Context, c *Cluster, accel string, opt QEMUOptions, wants func(node string) []string) (VMResult, string) {
	opt.Log, opt.MemoryMB = zaptest.NewLogger(t), 1024
	// The VM runs on after its health report until its serial console shows systemd and the
	// overlay's /etc/issue (at most opt.Linger).
	booted := func(node, serial string) bool {
		for _, want := range wants(node) {
			if !strings.Contains(serial, want) {
				return false
			}
		}
		return true
	}
	opt.LingerUntil = booted
	rs, err := BootVMs(ctx, c, 1, opt)
	var serial []byte
	if len(rs) == 1 {
		serial, _ = os.ReadFile(rs[0].SerialLog)
	}
	if err != nil {
		t.Fatalf("boot (%s): %v\nserial log:\n%s", accel, err, tail(string(serial), 60))
	}
	r := rs[0]
	t.Logf("%s (%s): health %q after %.2f s; events %v", r.Node, accel, r.Health, r.Seconds, r.Events)
	for _, s := range Breakdown(r) {
		t.Logf("    %-22s %6.2f s", s.Name, s.Seconds)
	}
	for _, want := range wants(r.Node) {
		if !strings.Contains(string(serial), want) {
			t.Errorf("serial log lacks %q:\n%s", want, tail(string(serial), 60))
		}
	}
	t.Logf("serial log:\n%s", tail(string(serial), 40))
	return r, string(serial)
}

// imageSerialWants is what the serial console of node must show when it booted the imported
// image: our initramfs's lines, then systemd, then the getty's /etc/issue from the overlay.
func imageSerialWants(node string) []string {
	return []string{"bootfabric: ", "exec /sbin/init", "Welcome to Debian", "bootfabric overlay for " + node + " at "}
}

// debianRootfsArgs are mmdebstrap's arguments for the Debian root file system the First hour
// imports; the README names the same command.
var debianRootfsArgs = []string{"--variant=minbase", "--include=systemd-sysv,udev", "bookworm"}

// cachedDebianRootfs returns a Debian root file system tar: $BOOTFABRIC_ROOTFS_TAR, else one that
// mmdebstrap built once (it downloads about 90 packages) and the user's cache directory keeps under
// bootfabric/; a build is written under a temporary name and renamed, so a cached file is whole.
func cachedDebianRootfs(t *testing.T, ctx context.Context) string {
	if p := os.Getenv(rootfsTarVar); p != "" {
		return p
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(strings.Join(debianRootfsArgs, " ")))
	path := filepath.Join(dir, "bootfabric", "debian-rootfs-"+hex.EncodeToString(sum[:6])+".tar")
	if _, err := os.Stat(path); err == nil {
		t.Logf("Debian root file system from the cache: %s", path)
		return path
	}
	testenv.NeedRoot(t, "mmdebstrap builds the root file system as root")
	mm := testenv.NeedTool(t, "mmdebstrap", "mmdebstrap")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// A name of its own: two tests of one process may make the file at once.
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	tmp := f.Name()
	defer os.Remove(tmp)
	start := time.Now()
	args := append(append([]string{"--format=tar"}, debianRootfsArgs...), tmp)
	if b, err := exec.CommandContext(ctx, mm, args...).CombinedOutput(); err != nil {
		t.Fatalf("mmdebstrap: %v\n%s", err, tail(string(b), 20))
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	t.Logf("mmdebstrap in %.1f s, kept in %s", time.Since(start).Seconds(), path)
	return path
}

// ociLayoutFromTar makes an OCI image layout of one layer, the root file system tar.
func ociLayoutFromTar(t *testing.T, tarPath string) string {
	t.Helper()
	// Cached: writing the layout asks for the compressed layer more than once (its digest, then
	// its bytes), and each would gzip the whole root file system again.
	l, err := tarball.LayerFromFile(tarPath, tarball.WithCompressedCaching)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(filepath.Join(t.TempDir(), "oci"), empty.Index)
	if err == nil {
		err = p.AppendImage(img)
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(p)
}

// qemuImageCluster is qemuCluster with the imported image img.Import as the VMs' profile; systemd
// shows its status on the console so that the test sees it start.
func qemuImageCluster(tb testing.TB, ctx context.Context, img VMImage) *Cluster {
	tb.Helper()
	needQEMUHost(tb)
	bin := buildBootctl(tb)
	c, err := Up(ctx, Spec{Name: "qi" + strconv.Itoa(os.Getpid()%100000), Machine: qemuMachine(), Scale: 1, StateDir: tb.TempDir()}, zaptest.NewLogger(tb))
	if err != nil {
		tb.Fatal(err)
	}
	downAtCleanup(tb, c)
	overlay := filepath.Join(tb.TempDir(), "overlay")
	if err := os.MkdirAll(filepath.Join(overlay, "etc"), 0o755); err != nil {
		tb.Fatal(err)
	}
	issue := "bootfabric overlay for {{.Name}} at {{.Position}}, {{.IP}}\n\n"
	if err := os.WriteFile(filepath.Join(overlay, "etc", "issue.tmpl"), []byte(issue), 0o644); err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	if img.Cmdline == "" {
		img.Cmdline = DefaultVMCmdline
	}
	img.Cmdline += " systemd.show_status=1"
	opt := ServerOptions{Bootctl: bin, Mapping: "ncda", Files: BootFiles{NBP: debianNBP}, Overlays: []string{overlay}}
	if err := c.StartQEMUServers(ctx, opt, img); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("image imported and servers started in %.1f s", time.Since(start).Seconds())
	return c
}
