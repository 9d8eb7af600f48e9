package testcluster

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestMain lets the lanes' tests all start (see lanes) unless -test.parallel is given, and
// removes what the tests built once for the whole run (shared) when they are done.
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		// The lanes decide how many tests run at once; this only has to be more than the tests
		// that wait for a lane, so that no lane waits for a slot held by a test of the other.
		if err := flag.Set("test.parallel", "64"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	code := m.Run()
	shared.remove()
	os.Exit(code)
}

// shared is what the package's tests share across one run: the bootctl binary, which a dozen
// tests' servers run (one go build under the suite's load took 10-35 s), built once, and the
// lanes. It is the tests' one package-level variable: go test gives tests no other way to share.
var shared = &sharedRun{vmLane: make(chan struct{}, 1), netnsLane: make(chan struct{}, 1)}

// sharedRun is a run's shared builds and lanes. A file is built at most once; a build that failed
// is tried again by the next test that asks, so that one failure does not decide the rest.
type sharedRun struct {
	mu      sync.Mutex
	dir     string
	bootctl string
	// vmLane and netnsLane hold one test each (lanes).
	vmLane, netnsLane chan struct{}
}

// bootctlPath returns the shared bootctl binary, building it on first use.
func (s *sharedRun) bootctlPath(tb testing.TB) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bootctl != "" {
		return s.bootctl, nil
	}
	if s.dir == "" {
		dir, err := os.MkdirTemp("", "bootfabric-integration-")
		if err != nil {
			return "", fmt.Errorf("directory for the shared builds: %w", err)
		}
		s.dir = dir
	}
	bin := filepath.Join(s.dir, "bootctl")
	start := time.Now()
	out, err := exec.Command("go", "build", "-o", bin, "github.com/bootfabric/bootfabric/cmd/bootctl").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building bootctl: %w\n%s", err, out)
	}
	tb.Logf("built bootctl for this run's tests in %.1f s", time.Since(start).Seconds())
	s.bootctl = bin
	return bin, nil
}

// remove deletes the shared builds.
func (s *sharedRun) remove() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
	s.dir, s.bootctl = "", ""
}

// Lanes. The package's tests run one at a time, except those that call vmLane or netnsLane:
// once every other test is done (go test runs t.Parallel tests last), they run one VM test and one
// network-namespace test side by side. A VM test keeps about one core busy emulating (TCG); a lane
// test of network namespaces waits mostly on its links. A VM test may do work that needs no core
// of its own (TestQEMUBootContainerImageP2P's mmdebstrap, on the mirror and the disk) before it
// waits for the lane, with t.Parallel and joinVMLane. The tests whose checks measure time against
// a prediction or a bound that CPU contention moves (the storms, the measured-vs-predicted tests,
// the fleet kill, chaos and soak, TestQEMUBoot's firmware waits) take no lane and run alone.

// vmLane makes t a lane test among the QEMU VM tests.
func vmLane(t *testing.T) {
	t.Helper()
	t.Parallel()
	joinVMLane(t)
}

// joinVMLane waits for the VM lane in a test that called t.Parallel already.
func joinVMLane(t *testing.T) {
	t.Helper()
	shared.waitLane(t, "VM", shared.vmLane)
}

// netnsLane makes t a lane test among the network-namespace tests.
func netnsLane(t *testing.T) {
	t.Helper()
	t.Parallel()
	shared.waitLane(t, "network-namespace", shared.netnsLane)
}

// waitLane waits until lane is free and holds it for the rest of t: it is freed after t's own
// cleanups (its cluster down), which are registered after this one and so run first.
func (s *sharedRun) waitLane(t *testing.T, name string, lane chan struct{}) {
	t.Helper()
	start := time.Now()
	lane <- struct{}{}
	t.Cleanup(func() { <-lane })
	t.Logf("%s lane: started after %.1f s waiting for the lane", name, time.Since(start).Seconds())
}
