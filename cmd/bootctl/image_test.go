package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/images"
)

func TestImageCommands(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	randomFile(t, filepath.Join(dir, "vmlinuz"), 4096, 7)
	randomFile(t, filepath.Join(dir, "initrd.img"), 1000, 8)
	randomFile(t, filepath.Join(dir, "extra", "grub.cfg"), 10, 9)
	randomFile(t, filepath.Join(dir, "extra", "vmlinuz"), 10, 10)
	ctx := context.Background()
	code, out, errs := runBootctl(t, ctx, "image", "add", "--store", store, "--name", "rescue", "--kernel", filepath.Join(dir, "vmlinuz"),
		"--initrd", filepath.Join(dir, "initrd.img"), "--boot-file", filepath.Join(dir, "extra", "grub.cfg"), "--cmdline", "console=ttyS0")
	if code != 0 || !strings.Contains(out, "rescue") {
		t.Fatalf("add: %d\n%s%s", code, out, errs)
	}
	t.Setenv("BOOTCTL_IMAGES", store)
	code, out, _ = runBootctl(t, ctx, "image", "list", "--output", "json")
	var list []images.Summary
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("list: %d %v\n%s", code, err, out)
	}
	if len(list) != 1 || list[0].Name != "rescue" || list[0].Bytes != 4096+1000+10 || len(list[0].Files) != 3 || list[0].Files["vmlinuz"].Size != 4096 {
		t.Errorf("list: %+v", list)
	}
	if code, out, _ := runBootctl(t, ctx, "image", "list"); code != 0 || !strings.Contains(out, "console=ttyS0") {
		t.Errorf("list table: %d\n%s", code, out)
	}
	if code, out, _ := runBootctl(t, ctx, "image", "verify"); code != 0 || !strings.Contains(out, "3 files checked, 0 problems") {
		t.Errorf("verify: %d\n%s", code, out)
	}
	// Corrupt the kernel's blob: verify reports it and exits 1.
	blob := filepath.Join(store, "blobs", "sha256", list[0].Files["vmlinuz"].SHA256)
	os.Chmod(blob, 0o644)
	if err := os.WriteFile(blob, []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runBootctl(t, ctx, "image", "verify", "--output", "json")
	var v struct {
		OK       bool
		Problems []struct{ File, Kind string }
	}
	json.Unmarshal([]byte(out), &v)
	if code != 1 || v.OK || len(v.Problems) != 1 || v.Problems[0].File != "vmlinuz" || v.Problems[0].Kind != "changed" || !strings.Contains(errs, "1 of 3 files") {
		t.Errorf("verify after corruption: %d %+v\n%s", code, v, errs)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"image", "add", "--name", "x", "--kernel", filepath.Join(dir, "missing")}, "--kernel: stat"},
		{[]string{"image", "add", "--name", "x", "--kernel", dir}, "is not a regular file"},
		{[]string{"image", "add", "--name", "Bad Name", "--kernel", filepath.Join(dir, "vmlinuz")}, "invalid profile"},
		{[]string{"image", "add", "--name", "x", "--kernel", filepath.Join(dir, "vmlinuz"), "--boot-file", filepath.Join(dir, "extra", "vmlinuz")}, "names must differ"},
		{[]string{"image", "list", "--output", "xml"}, `--output: "xml" is not one of table, json, yaml, csv`},
		{[]string{"image", "add", "--kernel", filepath.Join(dir, "vmlinuz")}, "bootctl image add: --name is required"},
	} {
		code, _, errs := runBootctl(t, ctx, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestImageNoSilentStore: reading commands never create a store, and an add that fails leaves
// none behind; both exit 2 naming the path.
func TestImageNoSilentStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo-store")
	for _, args := range [][]string{
		{"image", "verify", "--store", typo},
		{"image", "list", "--store", typo},
		{"image", "add", "--store", typo, "--name", "x", "--kernel", filepath.Join(dir, "no-such-vmlinuz")},
	} {
		code, _, errs := runBootctl(t, ctx, args...)
		if code != 2 || !strings.Contains(errs, typo[len(dir):]) && !strings.Contains(errs, "no-such-vmlinuz") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming the path", args, code, errs)
		}
		if _, err := os.Stat(typo); err == nil {
			t.Fatalf("%v created %s", args, typo)
		}
	}
}

// TestImageDeleteGC: image delete removes a profile (an unknown name is exit 2 with the nearest
// one), image gc --dry-run lists the unreferenced blobs and removes nothing, image gc removes
// them and says how many bytes, and never a blob a profile still references.
func TestImageDeleteGC(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	t.Setenv("BOOTCTL_IMAGES", store)
	randomFile(t, filepath.Join(dir, "vmlinuz"), 4096, 7)
	randomFile(t, filepath.Join(dir, "v1", "initrd.img"), 1000, 8)
	randomFile(t, filepath.Join(dir, "v2", "initrd.img"), 2000, 9)
	ctx := context.Background()
	add := func(name, initrd string) {
		t.Helper()
		if code, out, errs := runBootctl(t, ctx, "image", "add", "--name", name, "--kernel", filepath.Join(dir, "vmlinuz"), "--initrd", initrd); code != 0 {
			t.Fatalf("add %s: %d\n%s%s", name, code, out, errs)
		}
	}
	add("default", filepath.Join(dir, "v1", "initrd.img"))
	add("rescue", filepath.Join(dir, "v1", "initrd.img"))
	add("default", filepath.Join(dir, "v2", "initrd.img")) // v1's initrd still rescue's

	gc := func(args ...string) (int, images.GCResult, string) {
		t.Helper()
		code, out, errs := runBootctl(t, ctx, append([]string{"image", "gc", "-o", "json"}, args...)...)
		var res images.GCResult
		if err := json.Unmarshal([]byte(out), &res); code == 0 && err != nil {
			t.Fatalf("gc output: %v\n%s", err, out)
		}
		return code, res, errs
	}
	if _, res, _ := gc(); len(res.Removed) != 0 || res.Kept != 3 {
		t.Fatalf("gc with every blob referenced: %+v", res)
	}
	if code, out, errs := runBootctl(t, ctx, "image", "delete", "rescue"); code != 0 || !strings.Contains(out, "deleted profile rescue") {
		t.Fatalf("delete: %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runBootctl(t, ctx, "image", "delete", "defualt"); code != 2 || !strings.Contains(errs, `no profile "defualt"`) || !strings.Contains(errs, `did you mean "default"`) {
		t.Errorf("delete of a typo: %d %q", code, errs)
	}
	for _, tc := range []struct {
		args    []string
		removed int
		bytes   int64
	}{
		{[]string{"--dry-run"}, 1, 1000},
		{nil, 1, 1000},
		{nil, 0, 0},
	} {
		code, res, errs := gc(tc.args...)
		if code != 0 || len(res.Removed) != tc.removed || res.Bytes != tc.bytes || res.Kept != 2 {
			t.Errorf("gc %v: %d %+v %s; want %d removed, %d bytes, 2 kept", tc.args, code, res, errs, tc.removed, tc.bytes)
		}
	}
	if code, out, _ := runBootctl(t, ctx, "image", "verify"); code != 0 || !strings.Contains(out, "2 files checked, 0 problems") {
		t.Errorf("verify after gc: %d\n%s", code, out)
	}
	if code, out, _ := runBootctl(t, ctx, "image", "gc", "--dry-run"); code != 0 || !strings.Contains(out, "would remove 0 blobs, 0.0 MB; 2 blobs referenced by profiles kept") {
		t.Errorf("gc table: %d\n%s", code, out)
	}
}
