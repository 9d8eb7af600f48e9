package testfix

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNetns checks that a namespace exists while its test runs, that InNetns runs in it (it sees
// only the namespace's own links), and that it is gone, with its links, once its test has ended.
func TestNetns(t *testing.T) {
	var ns string
	t.Run("creates", func(t *testing.T) {
		ns = Netns(t, "bfT")
		IP(t, ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
		if out := Sh(t, "ip", "netns", "list"); !strings.Contains(out, ns) {
			t.Fatalf("namespace %s not listed:\n%s", ns, out)
		}
		var names []string
		err := InNetns(ns, func() error {
			ifs, err := net.Interfaces()
			for _, i := range ifs {
				names = append(names, i.Name)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		if diff := cmp.Diff([]string{"lo", "v0", "v1"}, names); diff != "" {
			t.Errorf("interfaces seen in %s (-want +got):\n%s", ns, diff)
		}
	})
	if ns == "" {
		return // skipped: no root or no iproute2
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil || strings.Contains(string(out), ns) {
		t.Errorf("namespace %s still there after its test (err %v):\n%s", ns, err, out)
	}
}

func TestInNetnsMissing(t *testing.T) {
	if err := InNetns("bf-no-such-namespace", func() error { return nil }); err == nil {
		t.Error("InNetns into a namespace that does not exist: no error")
	}
}

// fakeTB records the errors of a test and runs its cleanups when told.
type fakeTB struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Cleanup(fn func())                 { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, args ...any) { f.errs = append(f.errs, format) }
func (f *fakeTB) finish() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// TestRun checks that stop cancels the server's context and waits for it, that an error it
// returns fails the test, and that the cleanup after an early stop does nothing more.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		serve   func(ctx context.Context) error
		wantErr int
	}{
		{"clean stop", func(ctx context.Context) error { <-ctx.Done(); return nil }, 0},
		{"error", func(ctx context.Context) error { <-ctx.Done(); return errors.New("boom") }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTB{}
			stopped := false
			stop := Run(f, "server", func(ctx context.Context) error {
				err := tc.serve(ctx)
				stopped = true
				return err
			})
			stop()
			if !stopped {
				t.Error("stop returned before serve did")
			}
			f.finish() // the cleanup: must not wait or report again
			if len(f.errs) != tc.wantErr {
				t.Errorf("errors %q, want %d", f.errs, tc.wantErr)
			}
		})
	}
}

func TestKV(t *testing.T) {
	got := KV("ip=10.0.0.5\nnoise\nboot_file=a=b\n")
	if diff := cmp.Diff(map[string]string{"ip": "10.0.0.5", "boot_file": "a=b"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
