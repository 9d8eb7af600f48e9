package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/internal/testfix"
)

// TestNodeCommandsFlatExample: the node commands on the README's own configuration, as shipped
// (examples/serve/flat.yaml: no mapping, no topology). Every one exited 2 with `mapping: unknown
// algorithm ""`, and with a mapping given, node add refused any new node with a message about a
// topology the file does not have (issue 38 item 1). The flat machine grows with its inventory.
func TestNodeCommandsFlatExample(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"flat.yaml", "nodes.csv"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "serve", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "flat.yaml" { // the image store the admin made in step 2 of the First hour
			b = []byte(strings.Replace(string(b), "/var/lib/bootfabric/images", filepath.Join(dir, "images"), 1))
		}
		testfix.WriteFile(t, filepath.Join(dir, f), b)
	}
	kernel := testfix.WriteFile(t, filepath.Join(dir, "vmlinuz"), []byte("kernel"))
	cfg := filepath.Join(dir, "flat.yaml")
	ctx := context.Background()
	for _, args := range [][]string{
		{"image", "add", "--store", filepath.Join(dir, "images"), "--name", "default", "--kernel", kernel},
		{"node", "list", "--config", cfg},
		{"node", "show", "--config", cfg, "node02"},
		{"node", "add", "--config", cfg, "node05", "--mac", "52:54:00:10:00:05"},
		{"node", "set", "--config", cfg, "node05", "--ip", "192.168.50.15"},
		{"node", "delete", "--config", cfg, "node01"},
	} {
		if code, out, errs := runBootctl(t, ctx, args...); code != 0 {
			t.Fatalf("%s: exit %d: %s%s", strings.Join(args, " "), code, out, errs)
		}
	}
	code, out, errs := runBootctl(t, ctx, "node", "list", "--config", cfg)
	if code != 0 || !strings.Contains(out, "node05") || strings.Contains(out, "node01 ") || !strings.Contains(out, "192.168.50.15") {
		t.Errorf("node list after the edits: exit %d\n%s%s", code, out, errs)
	}
}
