package bootsrv

import (
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/testfix"
)

// TestServeFollowsStore: a running server serves profile "default" v1; bootctl image add (another
// Store on the same directory) replaces it with v2, and the next request, over HTTP and over
// TFTP, gets v2 without a restart. A profile added while it runs is served too.
func TestServeFollowsStore(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, nil)
	testfix.Serve(t, s)
	tok := attemptToken(t, s, "node00")
	get := func(profile, file string) []byte {
		t.Helper()
		// From 127.0.0.1: node00's address in the fixture's inventory.
		resp, err := http.Get("http://" + s.HTTPAddr().String() + "/boot/" + profile + "/" + file + "?token=" + tok)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s/%s: %s, %v", profile, file, resp.Status, err)
		}
		return b
	}
	tftp := func(name string) []byte {
		t.Helper()
		b, err := tftpGet(s.TFTPAddr().String(), name)
		if err != nil {
			t.Fatalf("TFTP %s: %v", name, err)
		}
		return b
	}
	mustEqualBytes(t, "v1 initrd over HTTP", get("default", "initrd.img"), f.initrd)

	v2 := testfix.RandomFile(t, filepath.Join(f.dir, "v2", "initrd.img"), 70_000, 99)
	st, err := images.Open(filepath.Join(f.dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	prof := images.Profile{Name: "default", Kernel: "vmlinuz", Initrd: "initrd.img", Cmdline: "console=ttyS0"}
	files := map[string]string{"vmlinuz": filepath.Join(f.dir, "src", "vmlinuz"), "initrd.img": filepath.Join(f.dir, "v2", "initrd.img")}
	if _, err := st.Add(prof, files); err != nil {
		t.Fatal(err)
	}
	mustEqualBytes(t, "v2 initrd over HTTP", get("default", "initrd.img"), v2)
	mustEqualBytes(t, "v2 initrd over TFTP", tftp("boot/default/initrd.img"), v2)

	prof.Name = "rescue"
	if _, err := st.Add(prof, files); err != nil {
		t.Fatal(err)
	}
	mustEqualBytes(t, "added profile over HTTP", get("rescue", "initrd.img"), v2)
}
