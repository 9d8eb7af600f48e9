package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	var list []imageSummary
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
