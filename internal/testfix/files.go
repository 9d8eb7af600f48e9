package testfix

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/bootfabric/bootfabric/images"
)

// RandomBytes returns n bytes drawn from a generator seeded with seed: the same for the same
// seed, different for another, so that a file served twice cannot pass for another.
func RandomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// WriteFile writes data to path, creating its directory, and returns path.
func WriteFile(t testing.TB, path string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// RandomFile writes RandomBytes(n, seed) to path and returns them.
func RandomFile(t testing.TB, path string, n int, seed uint64) []byte {
	t.Helper()
	b := RandomBytes(n, seed)
	WriteFile(t, path, b)
	return b
}

// BootFiles are the files a boot server serves, as BootDir writes them.
type BootFiles struct {
	// Kernel and Initrd are profile "default"'s vmlinuz and initrd.img; NBP is both fake iPXE
	// binaries (undionly.kpxe, ipxe.efi).
	Kernel, Initrd, NBP []byte
}

// BootSizes are the sizes of the files BootDir writes. Odd sizes make an off-by-one in a block or
// range count show.
type BootSizes struct {
	Kernel, Initrd, NBP int
	// Seed draws the contents (RandomBytes with Seed, Seed+1 and Seed+2).
	Seed uint64
}

// BootDir writes, under dir, the image store "images" with profile "default" (vmlinuz and
// initrd.img of the given sizes, kernel command line cmdline; the source files stay in dir/src)
// and the iPXE directory "ipxe" holding undionly.kpxe and ipxe.efi, and returns their contents.
func BootDir(t testing.TB, dir string, sizes BootSizes, cmdline string) BootFiles {
	t.Helper()
	f := BootFiles{
		Kernel: RandomFile(t, filepath.Join(dir, "src", "vmlinuz"), sizes.Kernel, sizes.Seed),
		Initrd: RandomFile(t, filepath.Join(dir, "src", "initrd.img"), sizes.Initrd, sizes.Seed+1),
		NBP:    RandomFile(t, filepath.Join(dir, "ipxe", "undionly.kpxe"), sizes.NBP, sizes.Seed+2),
	}
	WriteFile(t, filepath.Join(dir, "ipxe", "ipxe.efi"), f.NBP)
	st, err := images.Create(filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Add(images.Profile{Name: "default", Kernel: "vmlinuz", Initrd: "initrd.img", Cmdline: cmdline},
		map[string]string{"vmlinuz": filepath.Join(dir, "src", "vmlinuz"), "initrd.img": filepath.Join(dir, "src", "initrd.img")})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// ServeYAML returns the configuration of one boot server, bs0 at 127.0.0.1, for the mini
// machine over the files BootDir writes, an inventory in inventory.csv and its state in
// state/, with HTTP and TFTP on ephemeral loopback ports. flush is state_flush; dhcp is the
// dhcp section's flow mapping, e.g. `{mode: "off"}`.
func ServeYAML(flush, dhcp string) string {
	return fmt.Sprintf(`servers:
  - {name: bs0, address: 127.0.0.1}
topology: mini
mapping: bcda
inventory: inventory.csv
images: images
ipxe_dir: ipxe
state_dir: state
state_flush: %s
http: {listen: "127.0.0.1:0"}
tftp: {listen: "127.0.0.1:0"}
dhcp: %s
`, flush, dhcp)
}
