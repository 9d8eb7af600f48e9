package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ociLayout writes an OCI layout of one image whose single layer holds files (name -> contents).
func ociLayout(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))})
		tw.Write([]byte(data))
	}
	tw.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err == nil {
		err = p.AppendImage(img)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestImageImport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	src := ociLayout(t, filepath.Join(dir, "img"), map[string]string{"boot/vmlinuz-6.1.0-amd64": "KERNEL", "etc/hostname": "node\n"})
	code, out, errs := runBootctl(t, ctx, "image", "import", "--store", store, "--name", "deb", "--cmdline", "console=ttyS0",
		"--compress", "zstd", "--agent=false", "--output", "json", src)
	var res struct {
		Profile struct {
			Name, Kernel, Initrd string
			Files                map[string]struct{ Size int64 }
		}
		Format       string
		KernelSource string `json:"kernel_source"`
		Entries      int
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
		t.Fatalf("import: %d %v\n%s%s", code, err, out, errs)
	}
	if res.Profile.Name != "deb" || res.Profile.Initrd != "initramfs.cpio.zst" || res.Profile.Files["vmlinuz"].Size != 6 ||
		res.KernelSource != "/boot/vmlinuz-6.1.0-amd64" || res.Entries != 4 || res.Format != "oci-layout" {
		t.Errorf("import result: %+v", res)
	}
	if code, out, _ := runBootctl(t, ctx, "image", "import", "--store", store, "--name", "deb2", "--agent=false", src); code != 0 || !strings.Contains(out, "oci-layout") {
		t.Errorf("import table: %d\n%s", code, out)
	}
	if code, out, _ := runBootctl(t, ctx, "image", "list", "--store", store); code != 0 || !strings.Contains(out, "deb2") {
		t.Errorf("list: %d\n%s", code, out)
	}

	noKernel := ociLayout(t, filepath.Join(dir, "nokernel"), map[string]string{"etc/hostname": "node\n"})
	fresh := filepath.Join(dir, "fresh")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", fresh, "--name", "x", noKernel}, "bad image: " + noKernel + ": no kernel: the image has no /boot/vmlinuz* file; give one with --kernel"},
		{[]string{"--store", fresh, "--name", "x", filepath.Join(dir, "missing.tar")}, "missing.tar: no such file or directory"},
		{[]string{"--store", fresh, "--name", "x", "--compress", "xz", src}, `--compress: "xz" is not one of gzip, zstd`},
		{[]string{"--store", fresh, "--name", "x", "--kernel", filepath.Join(dir, "nope"), src}, "--kernel: stat"},
		{[]string{"--store", fresh, "--name", "Bad", src}, "invalid profile"},
		{[]string{"--store", fresh, "--name", "x"}, "missing argument: SOURCE"},
		{[]string{"--store", fresh, "--name", "x", "--platform", "linux/amd64/v2/extra", src}, `platform "linux/amd64/v2/extra"`},
		{[]string{"--store", fresh, "--name", "x", "--busybox", filepath.Join(dir, "nobusybox"), src}, "--busybox: " + filepath.Join(dir, "nobusybox") + ": not an ELF binary"},
		{[]string{"--store", fresh, "--name", "x", "--module", filepath.Join(dir, "virtio_net.ko"), src}, "--module: the agent loads modules, and --agent=false leaves it out"},
	} {
		// --agent=false unless the case is about the agent: these must not depend on busybox.
		args := append([]string{"image", "import"}, tc.args...)
		if !strings.Contains(strings.Join(tc.args, " "), "--busybox") {
			args = append(args, "--agent=false")
		}
		code, _, errs := runBootctl(t, ctx, args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want 2 and one line with %q", tc.args, code, errs, tc.want)
		}
		if _, err := os.Stat(fresh); err == nil {
			t.Errorf("%v: a failed import left the new store %s behind", tc.args, fresh)
		}
	}
	// With the agent (the default): its directory, busybox, DHCP script and /init are added, and
	// /dev with /dev/console, which this image lacks.
	testenv.NeedFile(t, images.DefaultBusybox, "busybox-static")
	code, out, errs = runBootctl(t, ctx, "image", "import", "--store", store, "--name", "agent", "--output", "json", src)
	var warned struct{ Warnings []string }
	json.Unmarshal([]byte(out), &warned)
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Entries != 10 {
		t.Errorf("import with the agent: %d %v %+v\n%s", code, err, res, errs)
	}
	// The image has no /sbin/init: a warning on stderr and in the result, the profile stored.
	if len(warned.Warnings) != 1 || !strings.Contains(errs, "warning: the image has no /sbin/init") {
		t.Errorf("import of an image without init: warnings %q, stderr %q", warned.Warnings, errs)
	}
	notELF := filepath.Join(dir, "virtio_net.ko.xz")
	os.WriteFile(notELF, []byte{0xfd, '7', 'z', 'X', 'Z', 0}, 0o644)
	if code, _, errs := runBootctl(t, ctx, "image", "import", "--store", store, "--name", "m", "--module", notELF, src); code != 2 || !strings.Contains(errs, "virtio_net.ko.xz: xz:") {
		t.Errorf("broken compressed module: %d %q", code, errs)
	}
	if code, _, errs := runBootctl(t, ctx, "image", "import", "--store", store, "--name", "m", "--module", "virtio_net", src); code != 2 || !strings.Contains(errs, "no modules.dep for kernel 6.1.0-amd64") {
		t.Errorf("module name without modules.dep: %d %q", code, errs)
	}
}

// TestImageImportP2P: --delivery p2p stores two stages (the agent's initrd, the root image), says
// so in the table and the JSON, and its bad flags are exit status 2 naming the flag.
func TestImageImportP2P(t *testing.T) {
	testenv.NeedFile(t, images.DefaultBusybox, "busybox-static")
	ctx := context.Background()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	src := ociLayout(t, filepath.Join(dir, "img"), map[string]string{"boot/vmlinuz-6.1.0-amd64": "KERNEL", "sbin/init": "#!/bin/sh\n"})
	// busybox stands in for bootfetch: a static binary.
	fetcher := images.DefaultBusybox
	code, out, errs := runBootctl(t, ctx, "image", "import", "--store", store, "--name", "p2p", "--delivery", "p2p", "--fetcher", fetcher,
		"--seed-for", "90s", "--output", "json", src)
	var res struct {
		Delivery string
		Profile  images.Profile
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
		t.Fatalf("import: %d %v\n%s%s", code, err, out, errs)
	}
	if res.Delivery != "p2p" || res.Profile.Initrd != "agent.cpio.gz" || res.Profile.Root != "root.cpio.gz" || res.Profile.Files["root.cpio.gz"].Size == 0 {
		t.Errorf("result: %+v", res)
	}
	if code, out, _ := runBootctl(t, ctx, "image", "import", "--store", store, "--name", "p2p2", "--delivery", "p2p", "--fetcher", fetcher, src); code != 0 ||
		!strings.Contains(out, "delivery p2p: the initrd is the agent") || !strings.Contains(out, "root image root.cpio.gz") {
		t.Errorf("table: %d\n%s", code, out)
	}
	// The planner takes the kernel and the agent's initrd from the servers, the root image from peers.
	f := res.Profile.Files
	code, out, errs = runBootctl(t, ctx, "plan", "--profile", "p2p", "--store", store, "--delivery", "p2p", "--topology", "mini", "--algo", "bcda", "--batch", "1", "-o", "json")
	if wantServer, wantRoot := f["vmlinuz"].Size+f["agent.cpio.gz"].Size, f["root.cpio.gz"].Size; code != 0 ||
		!strings.Contains(out, fmt.Sprintf(`"server_bytes": %d`, wantServer)) || !strings.Contains(out, fmt.Sprintf(`"root_bytes": %d`, wantRoot)) {
		t.Errorf("plan --delivery p2p of a two-stage profile: %d %s; want %d bytes from the servers and %d by peers\n%s", code, errs, wantServer, wantRoot, out)
	}
	script := filepath.Join(dir, "script")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--delivery", "torrent"}, "--delivery"},
		{[]string{"--fetcher", fetcher}, "--fetcher and --seed-for: only with --delivery p2p"},
		{[]string{"--seed-for", "1m"}, "only with --delivery p2p"},
		{[]string{"--delivery", "p2p", "--fetcher", script}, "--fetcher"},
		{[]string{"--delivery", "p2p", "--fetcher", filepath.Join(dir, "none")}, "--fetcher"},
		{[]string{"--delivery", "p2p", "--fetcher", fetcher, "--compress", "zstd"}, "--compress must be gzip"},
		{[]string{"--delivery", "p2p", "--fetcher", fetcher, "--agent=false"}, "--agent=false"},
		{[]string{"--delivery", "p2p", "--fetcher", fetcher, "--seed-for", "-1s"}, "--seed-for"},
	} {
		args := append(append([]string{"image", "import", "--store", store, "--name", "bad"}, tc.args...), src)
		code, _, errs := runBootctl(t, ctx, args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want 2 and one line with %q", tc.args, code, errs, tc.want)
		}
	}
}
