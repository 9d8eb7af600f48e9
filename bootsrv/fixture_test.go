package bootsrv

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"go.uber.org/zap/zaptest"
)

// fixture is a boot server's files in a temporary directory: an image store with profile
// "default" (vmlinuz, initrd.img), fake iPXE binaries, an inventory of the whole mini machine
// (node00 has address 127.0.0.1, so loopback requests are node00's) and a configuration with DHCP
// off and HTTP and TFTP on ephemeral loopback ports.
type fixture struct {
	dir     string
	cfgPath string
	kernel  []byte
	initrd  []byte
	nbp     []byte
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, cfgPath: filepath.Join(dir, "serve.yaml")}
	b := testfix.BootDir(t, dir, testfix.BootSizes{Kernel: 3<<20 + 17, Initrd: 1<<20 + 5, NBP: 70_001, Seed: 1}, "console=ttyS0")
	f.kernel, f.initrd, f.nbp = b.Kernel, b.Initrd, b.NBP
	inv := strings.Replace(testfix.MiniInventoryCSV(t), "10.0.0.10,", "127.0.0.1,", 1)
	testfix.WriteFile(t, filepath.Join(dir, "inventory.csv"), []byte(inv))
	testfix.WriteFile(t, f.cfgPath, []byte("# test boot server\n"+testfix.ServeYAML("0s", `{mode: "off"}`)))
	return f
}

func (f *fixture) config(t testing.TB, edit func(*bootconfig.Config)) *bootconfig.Config {
	t.Helper()
	c, err := bootconfig.LoadConfig(f.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) server(t testing.TB, edit func(*bootconfig.Config)) *Server {
	t.Helper()
	s, err := New(f.config(t, edit), Options{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustEqualBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: got %d bytes, want %d (contents differ)", what, len(got), len(want))
	}
}
