package bootsrv

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/bootconfig"
)

// TestOverlays: a node's iPXE script loads its overlay initrd after the profile's; the overlay
// holds its rendered files, goes only to the node (address and token), and a node no overlay
// selects has none.
func TestOverlays(t *testing.T) {
	f := newFixture(t)
	generic := filepath.Join(f.dir, "overlays", "generic")
	os.MkdirAll(filepath.Join(generic, "etc"), 0o755)
	os.WriteFile(filepath.Join(generic, "etc", "hostname.tmpl"), []byte("{{.Name}}\n"), 0o644)
	os.WriteFile(filepath.Join(generic, "etc", "bootfabric-node.tmpl"), []byte("{{.Name}} {{.Position}} {{.IP}} {{.Profile}}\n"), 0o644)
	s := f.server(t, func(c *bootconfig.Config) {
		c.HTTP.URL = "http://10.9.9.9:8080"
		c.Overlays = []bootconfig.OverlayConfig{{Dir: generic, Nodes: "node[00-01]"}}
	})
	h := s.Handler()
	tok := attemptToken(t, s, "node00")
	w := do(t, h, "GET", "/ipxe/52:54:00:00:00:00", "", node00Addr)
	script := w.Body.String()
	overlayURL := "http://10.9.9.9:8080/overlay/node00/overlay.cpio.gz?token=" + tok
	if w.Code != 200 || !strings.Contains(script, " initrd=initrd.img initrd=overlay.cpio.gz ") || !strings.Contains(script, "\ninitrd "+overlayURL+" || goto failed") ||
		strings.Index(script, "initrd "+overlayURL) < strings.Index(script, "/boot/default/initrd.img") {
		t.Fatalf("script: %d\n%s", w.Code, script)
	}
	w = do(t, h, "GET", "/overlay/node00/overlay.cpio.gz?token="+tok, "", node00Addr)
	if w.Code != 200 {
		t.Fatalf("overlay: %d %s", w.Code, w.Body)
	}
	zr, err := gzip.NewReader(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	for _, want := range []string{"etc/hostname\x00", "node00\n", "node00 s0-b0-n0 127.0.0.1 default\n", "TRAILER!!!"} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("overlay archive lacks %q", want)
		}
	}
	for _, c := range []codeCase{
		{"no token", "GET", "/overlay/node00/overlay.cpio.gz", node00Addr, 401},
		{"another address", "GET", "/overlay/node00/overlay.cpio.gz?token=" + tok, "192.0.2.1:1", 403},
		{"unknown node", "GET", "/overlay/nodeXX/overlay.cpio.gz", node00Addr, 404},
	} {
		if w := do(t, h, c.method, c.target, "", c.remote); w.Code != c.code {
			t.Errorf("%s: %d, want %d", c.what, w.Code, c.code)
		}
	}
	// node02 is in no overlay: its script loads none.
	if s.overlayURL("node02", "default", "x") != "" || s.overlayURL("node01", "default", "") == "" {
		t.Error("overlay selection by nodes")
	}
}

// TestOverlayConfigErrors: a missing directory, a bad node set and an unknown node stop the
// server at start, naming the field.
func TestOverlayConfigErrors(t *testing.T) {
	f := newFixture(t)
	good := filepath.Join(f.dir, "ov")
	os.MkdirAll(good, 0o755)
	for _, tc := range []struct {
		ov   bootconfig.OverlayConfig
		want string
	}{
		{bootconfig.OverlayConfig{}, "overlays[0].dir"},
		{bootconfig.OverlayConfig{Dir: good, Nodes: "node[1-"}, "overlays[0].nodes"},
		{bootconfig.OverlayConfig{Dir: good, Nodes: "nodeZZ"}, "overlays[0].nodes: nodeZZ is not in the inventory"},
		{bootconfig.OverlayConfig{Dir: filepath.Join(f.dir, "missing")}, "overlays[0].dir: images: overlay"},
	} {
		cfg, err := bootconfig.LoadConfig(f.cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Overlays = []bootconfig.OverlayConfig{tc.ov}
		if _, err = New(cfg, Options{}); err == nil {
			t.Errorf("%+v: no error", tc.ov)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", tc.ov, err, tc.want)
		}
	}
}
