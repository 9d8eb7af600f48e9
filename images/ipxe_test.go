package images

import (
	"github.com/bootfabric/bootfabric/internal/testenv"

	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

func TestRenderScriptGolden(t *testing.T) {
	tests := []struct {
		golden string
		p      Profile
		sp     ScriptParams
	}{
		{"full.ipxe",
			Profile{Name: "default", Kernel: "vmlinuz", Initrd: "initrd.gz", Cmdline: "console=ttyS0,115200 quiet"},
			ScriptParams{Server: "10.0.0.1", Port: 8080, Node: "cn-0001", HealthURL: "http://10.0.0.1:8080/api/v1/nodes/cn-0001/health"}},
		{"kernel-only.ipxe",
			Profile{Name: "rescue", Kernel: "bzImage"},
			ScriptParams{Server: "boot1.example", Port: 80, Node: "n7"}},
		{"ipv6.ipxe",
			Profile{Name: "v6", Kernel: "vmlinuz", Initrd: "initrd", Cmdline: "ip=dhcp"},
			ScriptParams{Server: "fd00::1", Port: 8080, Node: "n1", HealthURL: "http://[fd00::1]:8080/api/v1/nodes/n1/health"}},
		{"p2p-root.ipxe",
			Profile{Name: "bookworm", Kernel: "vmlinuz", Initrd: "agent.cpio.gz", Root: "root.cpio.gz", Cmdline: "console=ttyS0 bootfabric.seed=3m0s"},
			ScriptParams{Server: "10.0.0.1", Port: 8080, Node: "cn-0001", HealthURL: "http://10.0.0.1:8080/api/v1/nodes/cn-0001/health?token=abc123", Token: "abc123"}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			got, err := RenderScript(tc.p, tc.sp)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", tc.golden)
			if *update {
				must(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update once to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Fatalf("%s (-want +got):\n%s", path, diff)
			}
		})
	}
}

func TestRenderScriptErrors(t *testing.T) {
	p := Profile{Name: "default", Kernel: "vmlinuz"}
	ok := ScriptParams{Server: "10.0.0.1", Port: 8080, Node: "n1", HealthURL: "http://10.0.0.1:8080/h"}
	tests := []struct {
		name string
		p    Profile
		mod  func(*ScriptParams)
		want string
	}{
		{"bad profile", Profile{Name: "x", Kernel: "a b"}, nil, "invalid profile"},
		{"cmdline injection", Profile{Name: "x", Kernel: "k", Cmdline: "quiet\nshell"}, nil, "control character"},
		{"no node", p, func(s *ScriptParams) { s.Node = "" }, "node is empty"},
		{"node with space", p, func(s *ScriptParams) { s.Node = "n 1" }, "not allowed"},
		{"no server", p, func(s *ScriptParams) { s.Server = "" }, "bad server"},
		{"server with newline", p, func(s *ScriptParams) { s.Server = "a\nchain x" }, "bad server"},
		{"bad port", p, func(s *ScriptParams) { s.Port = 0 }, "bad port"},
		{"health not http", p, func(s *ScriptParams) { s.HealthURL = "file:///etc/passwd" }, "bad health URL"},
		{"health with space", p, func(s *ScriptParams) { s.HealthURL = "http://a/ b" }, "bad health URL"},
		{"root with space", Profile{Name: "x", Kernel: "k", Initrd: "i", Root: "r 1"}, nil, "root"},
		{"root without initrd", Profile{Name: "x", Kernel: "k", Root: "r"}, nil, "needs an initrd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp := ok
			if tc.mod != nil {
				tc.mod(&sp)
			}
			_, err := RenderScript(tc.p, sp)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want containing %q", err, tc.want)
			}
		})
	}
}

func fakeIPXE(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	elsewhere := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "undionly.kpxe"), []byte("bios nbp"), 0o644))
	must(t, os.WriteFile(filepath.Join(elsewhere, "ipxe.efi"), []byte("efi nbp"), 0o644))
	must(t, os.Symlink(filepath.Join(elsewhere, "ipxe.efi"), filepath.Join(dir, "ipxe.efi"))) // as Debian does
	must(t, os.Mkdir(filepath.Join(dir, "snponly.efi"), 0o755))                               // not a file: skipped
	must(t, os.WriteFile(filepath.Join(dir, "ipxe.iso"), []byte("iso"), 0o644))               // not an NBP: ignored
	return dir
}

func TestLocateIPXE(t *testing.T) {
	dir := fakeIPXE(t)
	x, err := LocateIPXE(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range x.Files {
		names = append(names, n)
	}
	if diff := cmp.Diff([]string{"ipxe.efi", "undionly.kpxe"}, names, cmpSorted); diff != "" {
		t.Fatalf("found (-want +got):\n%s", diff)
	}
	if _, err := LocateIPXE(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no iPXE binary") {
		t.Fatalf("empty dir: error = %v", err)
	}
}

var cmpSorted = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

// TestLocateDebianIPXE runs where the Debian package ipxe is installed.
func TestLocateDebianIPXE(t *testing.T) {
	if _, err := os.Stat(DebianIPXEDir); err != nil {
		testenv.Skip(t, "%s absent (Debian package ipxe)", DebianIPXEDir)
	}
	x, err := LocateIPXE("")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"undionly.kpxe", "ipxe.efi", "snponly.efi"} {
		if x.Files[n] == "" {
			t.Errorf("%s not found in %s", n, DebianIPXEDir)
		}
	}
}

func TestServeFS(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := writeFiles(t, map[string]string{"vmlinuz": "kernel bytes", "initrd.gz": "initrd bytes", "grubx64.efi": "grub"})
	if _, err := s.Add(Profile{Name: "default", Kernel: "vmlinuz", Initrd: "initrd.gz", BootFiles: []string{"grubx64.efi"}}, files); err != nil {
		t.Fatal(err)
	}
	x, err := LocateIPXE(fakeIPXE(t))
	if err != nil {
		t.Fatal(err)
	}
	fsys := s.FS(x)
	if err := fstest.TestFS(fsys, "undionly.kpxe", "ipxe.efi", "boot/default/vmlinuz", "boot/default/initrd.gz", "boot/default/grubx64.efi"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"boot/default/vmlinuz": "kernel bytes", "ipxe.efi": "efi nbp"} {
		got, err := fs.ReadFile(fsys, name)
		if err != nil || string(got) != want {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"boot/default/missing", "boot/nope/vmlinuz", "ipxe.iso", "blobs", "manifest.json", "boot/default/vmlinuz/x", "../manifest.json", "/ipxe.efi"} {
		if _, err := fsys.Open(name); err == nil {
			t.Errorf("Open(%q) succeeded; want an error", name)
		}
	}
	// Profiles added later are served by the same FS.
	if _, err := s.Add(Profile{Name: "later", Kernel: "vmlinuz"}, map[string]string{"vmlinuz": files["vmlinuz"]}); err != nil {
		t.Fatal(err)
	}
	if got, err := fs.ReadFile(fsys, "boot/later/vmlinuz"); err != nil || string(got) != "kernel bytes" {
		t.Fatalf("later profile: %q, %v", got, err)
	}
}
