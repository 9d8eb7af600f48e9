package bootsrv

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/images"
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
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	f.kernel, f.initrd, f.nbp = random(3<<20+17), random(1<<20+5), random(70_001)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	st, err := images.Create(filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Add(images.Profile{Name: "default", Kernel: "vmlinuz", Initrd: "initrd.img", Cmdline: "console=ttyS0"},
		map[string]string{"vmlinuz": write("src/vmlinuz", f.kernel), "initrd.img": write("src/initrd.img", f.initrd)})
	if err != nil {
		t.Fatal(err)
	}
	write("ipxe/undionly.kpxe", f.nbp)
	write("ipxe/ipxe.efi", f.nbp)
	inv := strings.Replace(miniInventoryCSV(t), "10.0.0.10,", "127.0.0.1,", 1)
	write("inventory.csv", []byte(inv))
	write("serve.yaml", []byte(`# test boot server
servers:
  - {name: bs0, address: 127.0.0.1}
topology: mini
mapping: bcda
inventory: inventory.csv
images: images
ipxe_dir: ipxe
state_dir: state
state_flush: 0s
http: {listen: "127.0.0.1:0"}
tftp: {listen: "127.0.0.1:0"}
dhcp: {mode: "off"}
`))
	return f
}

func (f *fixture) config(t testing.TB, edit func(*Config)) *Config {
	t.Helper()
	c, err := LoadConfig(f.cfgPath)
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

func (f *fixture) server(t testing.TB, edit func(*Config)) *Server {
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
