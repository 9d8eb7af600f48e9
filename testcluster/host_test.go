package testcluster

import (
	"os"
	"strings"
	"testing"
)

// TestCheckHost: with no command found, every one is named with its package, each package once,
// the same way every time; with them all (this host, as root) nothing is missing.
func TestCheckHost(t *testing.T) {
	path := os.Getenv("PATH")
	t.Setenv("PATH", t.TempDir())
	err := CheckHost()
	want := "missing busybox, curl, ip, tc, udhcpc; install with: apt-get install busybox curl iproute2 udhcpc"
	if err == nil || err.Error() != want {
		t.Errorf("empty PATH: %v, want %q", err, want)
	}
	t.Setenv("PATH", path)
	if err := CheckHost(); err != nil && os.Geteuid() == 0 && !strings.Contains(err.Error(), "missing") {
		t.Errorf("as root: %v", err)
	}
}
