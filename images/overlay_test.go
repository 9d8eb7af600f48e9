package images

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// overlayDir writes files (name -> contents, a trailing / for a directory) under a new directory.
func overlayDir(t *testing.T, files map[string]string, modes map[string]os.FileMode) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, m := range modes {
		if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(name)), m); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type overlayGot struct {
	Name string
	Mode uint32
	Data string
}

func renderOverlay(t *testing.T, node OverlayNode, overlays ...*Overlay) []overlayGot {
	t.Helper()
	var buf bytes.Buffer
	if err := RenderOverlays(&buf, node, overlays...); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var out []overlayGot
	for _, e := range parseNewc(t, raw) {
		out = append(out, overlayGot{e.name, e.mode, string(e.data)})
	}
	return out
}

func TestRenderOverlays(t *testing.T) {
	generic := overlayDir(t, map[string]string{
		"etc/hostname.tmpl":           "{{.Name}}\n",
		"etc/hosts":                   "127.0.0.1 localhost\n",
		"etc/motd.tmpl":               "{{.Name}} at {{.Position}} ({{.Index}}), profile {{.Profile}}, {{.MAC}} {{.IP}}\n",
		"root/.ssh/authorized_keys":   "ssh-ed25519 AAAA generic\n",
		"etc/network/interfaces.tmpl": "{{if .IP}}address {{.IP}}{{else}}dhcp{{end}}\n",
	}, map[string]os.FileMode{"root": 0o700, "root/.ssh": 0o700, "root/.ssh/authorized_keys": 0o600})
	// A later overlay's directories set the modes too: this one keeps /root closed.
	group := overlayDir(t, map[string]string{"root/.ssh/authorized_keys": "ssh-ed25519 BBBB group\n"},
		map[string]os.FileMode{"root": 0o700, "root/.ssh": 0o700 | os.ModeSetgid})
	a, err := LoadOverlay(generic)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOverlay(group)
	if err != nil {
		t.Fatal(err)
	}
	node := OverlayNode{Name: "node07", IP: "10.0.0.17", MAC: "52:54:00:00:00:07", Position: "s0-b1-n3", Index: 7, Profile: "deb"}
	got := renderOverlay(t, node, a, b)
	want := []overlayGot{
		{"etc", 0o40755, ""},
		{"etc/network", 0o40755, ""},
		{"root", 0o40700, ""},
		{"root/.ssh", 0o42700, ""},
		{"etc/hostname", 0o100644, "node07\n"},
		{"etc/hosts", 0o100644, "127.0.0.1 localhost\n"},
		{"etc/motd", 0o100644, "node07 at s0-b1-n3 (7), profile deb, 52:54:00:00:00:07 10.0.0.17\n"},
		{"etc/network/interfaces", 0o100644, "address 10.0.0.17\n"},
		{"root/.ssh/authorized_keys", 0o100644, "ssh-ed25519 BBBB group\n"}, // the later overlay's
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("overlay (-want +got):\n%s", diff)
	}
	// The same node gives the same bytes.
	var x, y bytes.Buffer
	RenderOverlays(&x, node, a, b)
	RenderOverlays(&y, node, a, b)
	if !bytes.Equal(x.Bytes(), y.Bytes()) {
		t.Error("two renderings differ")
	}
}

func TestOverlayErrors(t *testing.T) {
	bad := overlayDir(t, map[string]string{"etc/hostname.tmpl": "{{.Name"}, nil)
	if _, err := LoadOverlay(bad); err == nil || !strings.Contains(err.Error(), "etc/hostname.tmpl:1") {
		t.Errorf("template error: %v", err)
	}
	link := overlayDir(t, map[string]string{"etc/x": "x"}, nil)
	os.Symlink("/etc/shadow", filepath.Join(link, "etc/shadow"))
	if _, err := LoadOverlay(link); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("symlink: %v", err)
	}
	big := overlayDir(t, map[string]string{"big": strings.Repeat("x", MaxOverlayBytes+1)}, nil)
	if _, err := LoadOverlay(big); err == nil || !strings.Contains(err.Error(), "small per-node files") {
		t.Errorf("size: %v", err)
	}
	if _, err := LoadOverlay(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing: %v", err)
	}
	unknown := overlayDir(t, map[string]string{"x.tmpl": "{{.Rack}}"}, nil)
	o, err := LoadOverlay(unknown)
	if err != nil {
		t.Fatal(err)
	}
	if err := RenderOverlays(io.Discard, OverlayNode{Name: "n1"}, o); err == nil || !strings.Contains(err.Error(), "Rack") || !strings.Contains(err.Error(), "node n1") {
		t.Errorf("unknown field: %v", err)
	}
}
