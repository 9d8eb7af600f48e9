package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/images"
)

// TestImageProfilePlan: image list shows the kernel and initrd sizes, and plan, simulate and report
// with --profile predict what --image-size of the same total predicts.
func TestImageProfilePlan(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	randomFile(t, filepath.Join(dir, "vmlinuz"), 7_000_000, 1)
	randomFile(t, filepath.Join(dir, "initrd.img"), 33_000_000, 2)
	if code, _, errs := runBootctl(t, ctx, "image", "add", "--store", store, "--name", "deb", "--kernel", filepath.Join(dir, "vmlinuz"), "--initrd", filepath.Join(dir, "initrd.img")); code != 0 {
		t.Fatalf("add: %d %s", code, errs)
	}
	code, out, _ := runBootctl(t, ctx, "image", "list", "--store", store, "--output", "json")
	var list []images.Summary
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 1 || list[0].KernelBytes != 7_000_000 || list[0].InitrdBytes != 33_000_000 {
		t.Fatalf("list: %d %v %+v", code, err, list)
	}
	if code, out, _ := runBootctl(t, ctx, "image", "list", "--store", store); code != 0 || !strings.Contains(out, "7.0") || !strings.Contains(out, "33.0") {
		t.Errorf("list table: %d\n%s", code, out)
	}

	machine := []string{"--topology", "mini", "--algo", "bcda", "--output", "json"}
	for _, cmd := range []string{"plan", "simulate"} {
		_, bySize, _ := runBootctl(t, ctx, append([]string{cmd, "--image-size", "40MB"}, machine...)...)
		code, byProfile, errs := runBootctl(t, ctx, append([]string{cmd, "--profile", "deb", "--store", store}, machine...)...)
		if code != 0 {
			t.Fatalf("%s --profile: %d %s", cmd, code, errs)
		}
		if cmd == "plan" {
			bySize = strings.Replace(bySize, `"image_bytes": 40000000,`, `"image_bytes": 40000000,`+"\n  \"profile\": \"deb\",", 1)
		}
		if bySize != byProfile {
			t.Errorf("%s: --profile deb differs from --image-size 40MB:\n%s\n---\n%s", cmd, byProfile, bySize)
		}
	}
	// Peer delivery takes the profile's kernel from the servers and its initrd from peers.
	code, out, errs := runBootctl(t, ctx, "plan", "--profile", "deb", "--store", store, "--delivery", "p2p", "--topology", "mini", "--algo", "bcda", "--batch", "1", "-o", "json")
	if code != 0 || !strings.Contains(out, `"server_bytes": 7000000`) || !strings.Contains(out, `"root_bytes": 33000000`) {
		t.Errorf("plan --profile --delivery p2p: %d %s\n%s", code, errs, out)
	}
	t.Setenv("BOOTCTL_IMAGES", store)
	if code, out, errs := runBootctl(t, ctx, "report", "--topology", "mini", "--algo", "bcda", "--profile", "deb", "--out", "-", "--output", "markdown"); code != 0 || !strings.Contains(out, "image 40 MB") {
		t.Errorf("report --profile: %d %s\n%s", code, errs, out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--profile", "nope"}, `--profile: no profile "nope" in ` + store + " (profiles: deb)"},
		{[]string{"plan", "--profile", "deb", "--image-size", "3MB"}, "--profile deb and --image-size both give the image size"},
		{[]string{"simulate", "--profile", "deb", "--files", "a=1MB"}, "--profile deb and --files both give the files fetched"},
		{[]string{"plan", "--profile", "deb", "--store", filepath.Join(dir, "typo")}, "no image store at " + filepath.Join(dir, "typo")},
	} {
		code, _, errs := runBootctl(t, ctx, append(tc.args, "--topology", "mini")...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
	t.Setenv("BOOTCTL_IMAGES", "")
	if code, _, errs := runBootctl(t, ctx, "plan", "--profile", "deb", "--topology", "mini"); code != 2 || !strings.Contains(errs, "the image store is not given") {
		t.Errorf("plan --profile without a store: %d %q", code, errs)
	}
}
