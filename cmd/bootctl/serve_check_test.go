package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeCheck: serve --check prints one line and exits 0 for a configuration that would serve
// (hierarchical or flat), and starts nothing (no state directory appears).
func TestServeCheck(t *testing.T) {
	f := newServeFiles(t, "reservation")
	code, out, errs := runBootctl(t, context.Background(), "serve", "--check", "--config", f.config)
	want := f.config + ": ok: server bs0 (0 of 1), mini machine, 4 inventory nodes, 4 owned (bcda), profiles [default], dhcp reservation\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errs, want)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "state")); !os.IsNotExist(err) {
		t.Errorf("--check made the state directory (%v)", err)
	}
	// The flat machine: no topology, no mapping, names of the admin's choosing.
	flatCfg := strings.NewReplacer("topology: mini\n", "", "mapping: bcda\n", "", "inventory.csv", "flat.csv").Replace(readText(t, f.config))
	writeText(t, f.config, flatCfg)
	writeText(t, filepath.Join(f.dir, "flat.csv"), "name,mac,ip\nnode01,52:54:00:00:01:01,127.0.0.21\nnode02,52:54:00:00:01:02,127.0.0.22\n")
	code, out, errs = runBootctl(t, context.Background(), "serve", "--check", "--config", f.config)
	if want := ": ok: server bs0 (0 of 1), flat machine, 2 inventory nodes, 2 owned (ncda)"; code != 0 || !strings.Contains(out, want) {
		t.Fatalf("flat: exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errs, want)
	}
}

// TestServeCheckBad: each problem is the server's own error, one line naming the file, line and
// field, exit 2.
func TestServeCheckBad(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(f *serveFiles)
		want string // after the directory
	}{
		{"bad MAC", func(f *serveFiles) {
			writeText(t, filepath.Join(f.dir, "inventory.csv"), "name,mac,ip,node\nnode00,52:54:00:00:00:00,127.0.0.1,s0-b0-n0\nnode01,zz,127.0.0.11,s0-b0-n1\n")
		}, `inventory.csv:3: mac: "zz" is not a MAC address`},
		{"missing profile", func(f *serveFiles) {
			writeText(t, filepath.Join(f.dir, "inventory.csv"), "name,mac,ip,node,profile\nnode00,52:54:00:00:00:00,127.0.0.1,s0-b0-n0,rescue\n")
		}, `inventory.csv:2: profile: node node00: profile "rescue" is not in the image store`},
		{"unknown field", func(f *serveFiles) {
			writeText(t, f.config, readText(t, f.config)+"inventroy: x.csv\n")
		}, `serve.yaml:13: unknown field "inventroy" (did you mean inventory?)`},
		{"no such interface", func(f *serveFiles) {
			writeText(t, f.config, strings.Replace(readText(t, f.config), "{mode: reservation,", "{mode: reservation, interfaces: [lo, bf-nosuch0],", 1))
		}, `serve.yaml:12: dhcp.interfaces[1]: this host has no interface "bf-nosuch0" (it has: lo`},
		{"no image store", func(f *serveFiles) {
			if err := os.RemoveAll(filepath.Join(f.dir, "images")); err != nil {
				t.Fatal(err)
			}
		}, `serve.yaml: images:`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newServeFiles(t, "reservation")
			tc.edit(f)
			code, out, errs := runBootctl(t, context.Background(), "serve", "--check", "--config", f.config)
			if code != 2 || out != "" || !strings.Contains(errs, f.dir+"/"+tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errs, tc.want)
			}
		})
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeText(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestServeCheckExamples: the README's quick-start configuration checks out, given a store and
// iPXE binaries where the example's paths are.
func TestServeCheckExamples(t *testing.T) {
	f := newServeFiles(t, "off")
	code, out, errs := runBootctl(t, context.Background(), "serve", "--check", "--config", "../../examples/serve/flat.yaml",
		"--images", filepath.Join(f.dir, "images"), "--ipxe-dir", filepath.Join(f.dir, "ipxe"),
		"--interface", "lo") // the example's eth1 is the admin's; --check refuses an interface this host lacks
	want := "../../examples/serve/flat.yaml: ok: server bs0 (0 of 1), flat machine, 4 inventory nodes, 4 owned (ncda), profiles [default], dhcp reservation\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errs, want)
	}
}

// TestServeChecksBeforeState: serve itself refuses a configuration --check refuses (here an
// interface the host lacks) with the same one line and exit 2, before it writes any state file.
func TestServeChecksBeforeState(t *testing.T) {
	f := newServeFiles(t, "reservation")
	writeText(t, f.config, strings.Replace(readText(t, f.config), "{mode: reservation,", "{mode: reservation, interfaces: [bf-nosuch0],", 1))
	code, out, errs := runBootctl(t, context.Background(), "serve", "--config", f.config)
	if code != 2 || out != "" || !strings.Contains(errs, `dhcp.interfaces[0]: this host has no interface "bf-nosuch0"`) || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line naming dhcp.interfaces", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "state")); !os.IsNotExist(err) {
		t.Errorf("serve wrote its state directory before refusing the configuration (%v)", err)
	}
}
