package ociimport

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/testenv"
)

// TestImportTwoStages: with a fetcher the profile is two stages: the initrd holds the agent alone
// (busybox, the fetcher, the DHCP script, the first stage's /init with the seed time), and the
// root image holds the image's files and nothing of the agent.
func TestImportTwoStages(t *testing.T) {
	testenv.NeedFile(t, images.DefaultBusybox, "busybox-static")
	dir := t.TempDir()
	src := writeLayout(t, dir, testImage(t, bootLayer, []te{file("etc/os-release", "ID=test\n"), te{name: "init", data: "#!/bin/sh\n# the image's own\n", mode: 0o755}}))
	// busybox stands in for bootfetch: what matters is a static binary, copied as it is.
	st, res, err := importInto(t, dir, Options{Source: src, Busybox: images.DefaultBusybox, Fetcher: images.DefaultBusybox, SeedFor: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Profile
	if p.Initrd != StageOneName || p.Root != RootName || res.Delivery != "p2p" || !res.Agent {
		t.Fatalf("profile %+v, delivery %q", p, res.Delivery)
	}
	stage, _ := st.BlobPath("test", p.Initrd)
	bb, _ := os.ReadFile(images.DefaultBusybox)
	var names []string
	for _, e := range readCpio(t, stage) {
		names = append(names, e.Name)
		if e.Name == ".bootfabric/bootfetch" && (e.Data != string(bb) || e.Mode != "100755") {
			t.Errorf("the fetcher: %d bytes, mode %s", len(e.Data), e.Mode)
		}
		if e.Name == "init" && e.Data != images.AgentInit(stageOneLayout(90*time.Second)) {
			t.Errorf("stage one's /init is not the first stage's agent:\n%s", e.Data)
		}
	}
	want := ".bootfabric .bootfabric/busybox .bootfabric/bootfetch dev dev/console .bootfabric/udhcpc.script init"
	if strings.Join(names, " ") != want {
		t.Errorf("stage one holds %v, want %s", names, want)
	}
	if s := images.AgentInit(stageOneLayout(90 * time.Second)); !strings.Contains(s, `seed="1m30s"`) || !strings.Contains(s, "/.bootfabric/bootfetch --server") {
		t.Errorf("stage one's /init does not seed for 1m30s with the fetcher:\n%s", s)
	}
	root, _ := st.BlobPath("test", p.Root)
	for _, e := range readCpio(t, root) {
		if strings.HasPrefix(e.Name, ".bootfabric") || e.Name == "init" && e.Data != "#!/bin/sh\n# the image's own\n" {
			t.Errorf("the root image holds the agent's %s", e.Name)
		}
	}
}

// TestImportTwoStagesOptions: what a two-stage import refuses, each naming why.
func TestImportTwoStagesOptions(t *testing.T) {
	testenv.NeedFile(t, images.DefaultBusybox, "busybox-static")
	dir := t.TempDir()
	src := writeLayout(t, dir, testImage(t, bootLayer))
	dynamic := filepath.Join(dir, "dynamic")
	if err := os.WriteFile(dynamic, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{Fetcher: images.DefaultBusybox}, "no agent"},
		{Options{Busybox: images.DefaultBusybox, Fetcher: dynamic}, "fetcher"},
		{Options{Busybox: images.DefaultBusybox, Fetcher: images.DefaultBusybox, Compression: Zstd}, "gzip"},
		{Options{Busybox: images.DefaultBusybox, Fetcher: images.DefaultBusybox, SeedFor: -time.Second}, "negative"},
	} {
		tc.opt.Source = src
		_, _, err := importInto(t, filepath.Join(dir, tc.want), tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.opt, err, tc.want)
		}
	}
}

// TestRootImageBusyboxCpio unpacks a root image as the first stage does, with busybox zcat and
// cpio, and finds the image's files as they were: modes, symbolic and hard links, directories.
func TestRootImageBusyboxCpio(t *testing.T) {
	testenv.NeedFile(t, images.DefaultBusybox, "busybox-static")
	bb := images.DefaultBusybox
	tmp := t.TempDir()
	layer := append(append([]te{}, bootLayer...), dir("etc/"), file("etc/hostname", "img\n"), symlink("sbin", "usr/sbin"), dir("usr/"), dir("usr/sbin/"),
		te{name: "usr/sbin/init", data: "#!/bin/sh\n", mode: 0o4755}, hardlink("etc/hostname2", "etc/hostname"))
	src := writeLayout(t, tmp, testImage(t, layer))
	st, res, err := importInto(t, tmp, Options{Source: src, Busybox: images.DefaultBusybox, Fetcher: images.DefaultBusybox})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := st.BlobPath("test", res.Profile.Root)
	out := filepath.Join(tmp, "newroot")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bb, "sh", "-c", `set -o pipefail; "$0" zcat "$1" | "$0" cpio -i -d -m -u`, bb, root)
	cmd.Dir = out
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("busybox zcat | cpio: %v\n%s", err, b)
	}
	if b, err := os.ReadFile(filepath.Join(out, "sbin", "init")); err != nil || string(b) != "#!/bin/sh\n" {
		t.Errorf("/sbin/init through the symbolic link: %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(out, "usr/sbin/init")); err != nil || fi.Mode()&os.ModeSetuid == 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("usr/sbin/init: %v, %v; want setuid 0755", fi.Mode(), err)
	}
	a, errA := os.Stat(filepath.Join(out, "etc/hostname"))
	b, errB := os.Stat(filepath.Join(out, "etc/hostname2"))
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		t.Errorf("etc/hostname2 is no hard link of etc/hostname (%v, %v)", errA, errB)
	}
}
