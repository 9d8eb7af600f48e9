package testcluster

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// TestQEMUBootContainerImageP2P boots a real distribution from a container image through the
// peer path: a Debian minbase root file system with systemd (mmdebstrap), made an OCI layout and
// imported with --delivery p2p; the VM's iPXE loads the kernel and the small agent initrd; the
// agent fetches the root image with bootfetch (the server as tracker and, with one VM and no
// peer, as web seed), every piece and the whole file checked, unpacks it, reports, and switches
// root to systemd, which shows the overlay's /etc/issue (each node its own). The one-stage path
// (the whole root in the initramfs) boots the same image in TestFirstHour, to exec /sbin/init.
func TestQEMUBootContainerImageP2P(t *testing.T) {
	t.Parallel()
	oci := debianOCI(t)
	fetcher := buildBootfetch(t) // beside the lane's other tests: the lane runs its VMs one at a time
	joinVMLane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// The node seeds for 90 s (the kernel line's bootfabric.seed= over the profile's 3 minutes):
	// longer than the unpack and switch_root (36-60 s after the fetch, TCG at a load average of
	// 26), so that the seed's end on the console, after switch_root, shows the fetcher lived on in
	// the background; the VM stops at that line, so every second of seed is a second of the lane.
	c := qemuImageCluster(t, ctx, VMImage{Import: oci, Fetcher: fetcher, Cmdline: DefaultVMCmdline + " bootfabric.seed=90s"})
	accel, why := testAccel(t, ctx, c, zaptest.NewLogger(t))
	// The agent unpacks 219 MB in the emulated CPU before systemd starts: a longer run than the
	// one-stage boot's, and systemd's start after switch_root is given more time too.
	r, serial := bootImageVM(t, ctx, c, accel+" "+why, QEMUOptions{Timeout: 300 * time.Second, Linger: 120 * time.Second}, p2pSerialWants)
	for _, l := range strings.Split(serial, "\n") {
		if strings.Contains(l, "bootfabric: ") {
			t.Log(strings.TrimSpace(l))
		}
	}
	fetched := regexp.MustCompile(`fetched /seed/root.img: ([0-9.]+ [kMG]?B) verified \(sha256 [0-9a-f]{64}\) in ([0-9.]+) s: ([0-9.]+ [kMG]?B) from peers, ([0-9.]+ [kMG]?B) from the server`).FindStringSubmatch(serial)
	if fetched == nil {
		t.Fatalf("no fetch line with its figures on the serial console:\n%s", tail(serial, 60))
	}
	t.Logf("root image %s in %s s: %s from peers, %s from the server; health after %.2f s", fetched[1], fetched[2], fetched[3], fetched[4], r.Seconds)
	if sw, seeded := strings.Index(serial, "switch_root to /sbin/init"), strings.Index(serial, "bootfabric: seeded 90 s"); sw < 0 || seeded < sw {
		t.Errorf("the seed's end (at %d) is not after switch_root (at %d) on the console", seeded, sw)
	}
	if fetched[4] != fetched[1] {
		t.Errorf("one VM and no peer: the server's web seed gave %s of %s", fetched[4], fetched[1])
	}
}

// p2pSerialWants is what the console of a node booted through the peer path shows: the fetch with
// its figures, the unpack, switch_root, then what imageSerialWants asks for.
func p2pSerialWants(node string) []string {
	return append([]string{"fetching root.cpio.gz of profile default", "from the server", "root image unpacked", "switch_root to /sbin/init", "bootfabric: seeded "},
		slices.DeleteFunc(imageSerialWants(node), func(w string) bool { return w == "exec /sbin/init" })...)
}

// buildBootfetch builds bootfetch static, as a first stage needs it.
func buildBootfetch(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bootfetch")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "github.com/bootfabric/bootfabric/cmd/bootfetch")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building bootfetch: %v\n%s", err, strings.TrimSpace(string(out)))
	}
	return bin
}
