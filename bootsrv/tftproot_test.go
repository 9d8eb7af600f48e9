package bootsrv

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/pin/tftp/v3"
	"go.uber.org/zap/zaptest"
)

// tftpGet fetches name from addr with the pin/tftp client (lock-step, blksize 1468).
func tftpGet(addr, name string) ([]byte, error) {
	c, err := tftp.NewClient(addr)
	if err != nil {
		return nil, err
	}
	c.SetTimeout(time.Second)
	c.SetRetries(2)
	c.SetBlockSize(1468)
	wt, err := c.Receive(name, "octet")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	_, err = wt.WriteTo(&b)
	return b.Bytes(), err
}

// TestTFTPRoot: tftp.root serves a plain tree besides the profile store and the iPXE binaries,
// which keep their names; links out of the tree are refused.
func TestTFTPRoot(t *testing.T) {
	f := newFixture(t)
	tree := filepath.Join(f.dir, "tftproot")
	for name, data := range map[string]string{
		"pxelinux.cfg/default": "DEFAULT linux\n",
		"firmware/bmc.bin":     "fw",
		"undionly.kpxe":        "shadowed by ipxe_dir",
		"boot/default/vmlinuz": "shadowed by the store",
		"boot/other/file":      "tree",
	} {
		p := filepath.Join(tree, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.dir, "secret"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret", filepath.Join(tree, "escape")); err != nil {
		t.Fatal(err)
	}
	// A relative tftp.root is relative to the configuration file, like the other paths.
	yml, err := os.ReadFile(f.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	yml = bytes.Replace(yml, []byte(`tftp: {listen: "127.0.0.1:0"}`), []byte(`tftp: {listen: "127.0.0.1:0", root: tftproot}`), 1)
	if err := os.WriteFile(f.cfgPath, yml, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(f.config(t, nil), Options{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	addr := s.TFTPAddr().String()

	for _, tc := range []struct{ name, want string }{
		{"pxelinux.cfg/default", "DEFAULT linux\n"},
		{"/firmware/bmc.bin", "fw"},
		{"boot/other/file", "tree"},
		{"undionly.kpxe", string(f.nbp)},
		{"boot/default/vmlinuz", string(f.kernel)},
	} {
		got, err := tftpGet(addr, tc.name)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %d bytes, %v; want %d bytes", tc.name, len(got), err, len(tc.want))
		}
	}
	for _, name := range []string{"escape", "missing", "pxelinux.cfg"} {
		if got, err := tftpGet(addr, name); err == nil {
			t.Errorf("%s: served %q, want refusal", name, got)
		}
	}
}

func TestTFTPRootErrors(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.dir, "plain"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ root, want string }{
		{"missing", "tftp.root: open " + filepath.Join(f.dir, "missing") + ": no such file or directory"},
		{"plain", "tftp.root: open " + filepath.Join(f.dir, "plain") + ": not a directory"},
	} {
		c := f.config(t, func(c *bootconfig.Config) { c.TFTP.Root = filepath.Join(f.dir, tc.root) })
		_, err := New(c, Options{Logger: zaptest.NewLogger(t)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("tftp.root %s: %v, want error containing %q", tc.root, err, tc.want)
		}
	}
}
