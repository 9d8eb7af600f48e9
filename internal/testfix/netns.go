package testfix

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"golang.org/x/sys/unix"
)

// Netns creates a network namespace named prefix followed by a suffix of this process's id and
// a random byte (so that parallel test binaries do not collide; keep prefix short) and deletes it
// when the test ends, passed or failed, with every link inside it. It skips (or fails under
// BOOTFABRIC_NO_SKIP) without root or iproute2.
func Netns(tb testing.TB, prefix string) string {
	tb.Helper()
	testenv.NeedRoot(tb, "to create network namespaces")
	testenv.NeedTool(tb, "ip", "iproute2")
	ns := fmt.Sprintf("%s%04x%02x", prefix, os.Getpid()&0xffff, rand.IntN(256))
	Sh(tb, "ip", "netns", "add", ns)
	tb.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	return ns
}

// IP runs `ip -n ns args...` (Sh).
func IP(tb testing.TB, ns string, args ...string) string {
	tb.Helper()
	return Sh(tb, append([]string{"ip", "-n", ns}, args...)...)
}

// Sh runs a command for at most 20 s and returns its combined output; the test fails at once,
// with the output, when the command fails.
func Sh(tb testing.TB, args ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// InNetns runs f on a thread switched into namespace ns, so that the sockets f opens live there
// (they stay there after f returns). The thread is discarded afterwards: its goroutine exits
// locked, so no other goroutine ever runs in ns by accident.
func InNetns(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		nsf, err := os.Open(filepath.Join("/run/netns", ns))
		if err != nil {
			errc <- err
			return
		}
		defer nsf.Close()
		if err := unix.Setns(int(nsf.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// StopWait is how long the stop function of Run waits for the server to return.
const StopWait = 5 * time.Second

// Run runs serve in a goroutine, with a context that the returned stop function cancels, until
// the test ends or stop is called (to restart a server, say). stop then waits up to StopWait for
// serve to return and fails the test, naming what, if serve returned an error or did not return.
// stop is registered with t.Cleanup; calling it again does nothing.
func Run(tb testing.TB, what string, serve func(ctx context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					tb.Errorf("%s: %v", what, err)
				}
			case <-time.After(StopWait):
				tb.Errorf("%s did not stop within %v of cancel", what, StopWait)
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}

// Udhcpc runs busybox udhcpc once on interface ifname of namespace ns, after giving the
// interface the address mac: 4 DISCOVERs 1 s apart at most, then it quits (-n -q), leaving the
// interface as it was. It returns the environment udhcpc's script saw when the lease was bound
// (ip, subnet, router, serverid, hostname, lease, siaddr, boot_file, ...); the test fails when
// udhcpc got no lease. dir holds the script and its output. extra are more udhcpc arguments
// (-V vendor, -x option, -B broadcast).
func Udhcpc(tb testing.TB, ns, ifname string, mac net.HardwareAddr, dir string, extra ...string) map[string]string {
	tb.Helper()
	testenv.NeedTool(tb, "udhcpc", "udhcpc")
	IP(tb, ns, "link", "set", ifname, "address", mac.String())
	out := filepath.Join(dir, "udhcpc-"+strings.ReplaceAll(mac.String(), ":", ""))
	os.Remove(out) // a lease of an earlier run must not pass for this one
	script := filepath.Join(dir, "udhcpc.sh")
	// The script records what the client got and leaves the interface alone.
	if err := os.WriteFile(script, []byte("#!/bin/sh\n[ \"$1\" = bound ] && env > "+out+"\nexit 0\n"), 0o755); err != nil {
		tb.Fatal(err)
	}
	args := []string{"ip", "netns", "exec", ns, "udhcpc", "-i", ifname, "-f", "-q", "-n", "-t", "4", "-T", "1", "-s", script}
	Sh(tb, append(args, extra...)...)
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatalf("udhcpc on %s in %s (MAC %v) got no lease: %v", ifname, ns, mac, err)
	}
	return KV(string(b))
}

// KV parses "key=value" lines (an environment dump); lines without "=" are left out.
func KV(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}
