package tftpd

import (
	"context"
	"crypto/sha256"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
)

// Tests with TFTP clients nobody here wrote: curl (tftp://) and atftp,
// from the Debian packages curl and atftp (listed in scripts/apt-packages.txt).

func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.Skip(t, "%s not installed (Debian package %s; scripts/test installs it when root)", name, pkg)
	}
	return p
}

func runTool(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func externalFixture(t *testing.T) (*testServer, map[string][32]byte) {
	// A kernel's size in the main run; a tenth of it under -short, which the race run uses: there,
	// beside the namespace tests on 2 cores, 512-byte lock-step blocks came at 30 kB/s and 4 MB
	// outlasted curl's 30 s (ci16).
	kernel := 4_000_000
	if testing.Short() {
		kernel = 400_000
	}
	files := map[string][]byte{
		"undionly.kpxe":        testfix.RandomBytes(68_000, 21),
		"boot/default/vmlinuz": testfix.RandomBytes(kernel, 22),
		"exact":                testfix.RandomBytes(1468*10, 23),
	}
	root := fstest.MapFS{}
	sums := map[string][32]byte{}
	for n, b := range files {
		root[n] = &fstest.MapFile{Data: b}
		sums[n] = sha256.Sum256(b)
	}
	return startServer(t, Config{Root: root, Timeout: time.Second}), sums
}

func checkFile(t *testing.T, path string, want [32]byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(b) != want {
		t.Fatalf("%s: sha256 differs (%d bytes)", path, len(b))
	}
}

func TestCurlClient(t *testing.T) {
	curl := needTool(t, "curl", "curl")
	ts, sums := externalFixture(t)
	dir := t.TempDir()
	for _, blksize := range []string{"512", "1468", "8192"} {
		for name, sum := range sums {
			t.Run(blksize+"/"+name, func(t *testing.T) {
				out := filepath.Join(dir, blksize+"-"+filepath.Base(name))
				runTool(t, curl, "--silent", "--show-error", "--fail", "--max-time", "30",
					"--tftp-blksize", blksize, "-o", out, "tftp://"+ts.addr+"/"+name)
				checkFile(t, out, sum)
				if res := ts.rec.next(t); res.Outcome != OutcomeOK {
					t.Fatalf("outcome %s: %v", res.Outcome, res.Err)
				}
			})
		}
	}
	t.Run("missing", func(t *testing.T) {
		err := exec.Command(curl, "--silent", "--fail", "--max-time", "10", "-o", filepath.Join(dir, "x"),
			"tftp://"+ts.addr+"/missing").Run()
		if err == nil {
			t.Fatal("curl fetched a missing file")
		}
		if res := ts.rec.next(t); res.Outcome != OutcomeNotFound {
			t.Fatalf("outcome %s, want not_found", res.Outcome)
		}
	})
}

func TestAtftpClient(t *testing.T) {
	atftp := needTool(t, "atftp", "atftp")
	ts, sums := externalFixture(t)
	host, port, err := net.SplitHostPort(ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, opts := range [][]string{nil, {"--option", "blksize 1468", "--option", "tsize"}, {"--option", "blksize 1468", "--option", "windowsize 4"}} {
		for name, sum := range sums {
			t.Run(strings.Join(opts, " ")+"/"+name, func(t *testing.T) {
				out := filepath.Join(dir, filepath.Base(name))
				os.Remove(out)
				args := append(append([]string{}, opts...), "--get", "--remote-file", name, "--local-file", out, host, port)
				runTool(t, atftp, args...)
				checkFile(t, out, sum)
				if res := ts.rec.next(t); res.Outcome != OutcomeOK {
					t.Fatalf("outcome %s: %v", res.Outcome, res.Err)
				}
			})
		}
	}
}
