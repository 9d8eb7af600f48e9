package dhcpd

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func mac(i int) net.HardwareAddr {
	return net.HardwareAddr{2, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)}
}

func openTestPool(t *testing.T, path string, first, last string, clk *fakeClock) *Pool {
	t.Helper()
	p, err := OpenPool(path, net.ParseIP(first), net.ParseIP(last),
		PoolOptions{LeaseTime: time.Hour, OfferTime: time.Minute, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ips(t *testing.T, p *Pool, ctx context.Context, macs ...net.HardwareAddr) []string {
	t.Helper()
	var out []string
	for _, m := range macs {
		ip, err := p.Offer(ctx, m, nil)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		out = append(out, ip.String())
	}
	return out
}

func TestPoolAllocation(t *testing.T) {
	ctx := context.Background()
	clk := &fakeClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := openTestPool(t, filepath.Join(t.TempDir(), "l.db"), "10.0.0.10", "10.0.0.12", clk)
	defer p.Close()

	got := ips(t, p, ctx, mac(1), mac(2), mac(1))
	if diff := cmp.Diff([]string{"10.0.0.10", "10.0.0.11", "10.0.0.10"}, got); diff != "" {
		t.Errorf("offers (-want +got):\n%s", diff)
	}
	// A free requested address is honoured; a taken one is not.
	ip, err := p.Offer(ctx, mac(3), net.ParseIP("10.0.0.11"))
	if err != nil || ip.String() != "10.0.0.12" {
		t.Errorf("taken requested address: got %v, %v; want 10.0.0.12", ip, err)
	}
	if _, err := p.Offer(ctx, mac(4), nil); err != ErrPoolExhausted {
		t.Errorf("full pool: got %v, want ErrPoolExhausted", err)
	}
	if err := p.Commit(ctx, mac(4), net.ParseIP("10.0.0.10")); err != ErrNotOwned {
		t.Errorf("commit of another's address: %v, want ErrNotOwned", err)
	}
	if err := p.Commit(ctx, mac(1), net.ParseIP("10.0.0.99")); err != ErrNotInPool {
		t.Errorf("commit outside pool: %v, want ErrNotInPool", err)
	}
	if err := p.Release(ctx, mac(2), net.ParseIP("10.0.0.11")); err != nil {
		t.Fatal(err)
	}
	ip, err = p.Offer(ctx, mac(4), net.ParseIP("10.0.0.11"))
	if err != nil || ip.String() != "10.0.0.11" {
		t.Errorf("after release: got %v, %v; want 10.0.0.11", ip, err)
	}
	if err := p.Decline(ctx, mac(4), net.ParseIP("10.0.0.11")); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(2 * time.Minute) // offers expired, the declined address is still quarantined
	ip, err = p.Offer(ctx, mac(5), nil)
	if err != nil || ip.String() != "10.0.0.10" {
		t.Errorf("after decline: got %v, %v; want 10.0.0.10 (oldest expired offer)", ip, err)
	}
}

func TestPoolExpiryAndReclaim(t *testing.T) {
	ctx := context.Background()
	clk := &fakeClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := openTestPool(t, filepath.Join(t.TempDir(), "l.db"), "10.0.0.10", "10.0.0.11", clk)
	defer p.Close()

	ips(t, p, ctx, mac(1), mac(2))
	if err := p.Commit(ctx, mac(1), net.ParseIP("10.0.0.10")); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(30 * time.Second)
	if got := ips(t, p, ctx, mac(3)); got[0] != ErrPoolExhausted.Error() {
		t.Errorf("before offer expiry: %v", got)
	}
	clk.t = clk.t.Add(time.Minute) // mac 2's offer expired, mac 1 is bound for an hour
	if diff := cmp.Diff([]string{"10.0.0.11", ErrPoolExhausted.Error()}, ips(t, p, ctx, mac(3), mac(4))); diff != "" {
		t.Errorf("reclaim (-want +got):\n%s", diff)
	}
	// mac 2 comes back late and asks for the address it was offered: NAK.
	if err := p.Commit(ctx, mac(2), net.ParseIP("10.0.0.11")); err != ErrNotOwned {
		t.Errorf("late request: %v, want ErrNotOwned", err)
	}
	clk.t = clk.t.Add(2 * time.Hour)
	// Both leases expired: the longest-expired (mac 3's offer) goes first.
	if diff := cmp.Diff([]string{"10.0.0.11"}, ips(t, p, ctx, mac(4))); diff != "" {
		t.Errorf("expired lease not reclaimed (-want +got):\n%s", diff)
	}
	// An expired bound lease can be requested by another client.
	if err := p.Commit(ctx, mac(3), net.ParseIP("10.0.0.10")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range p.Leases() {
		got = append(got, fmt.Sprintf("%v %v %d", l.IP, l.MAC, l.State))
	}
	want := []string{"10.0.0.10 02:00:00:00:00:03 2", "10.0.0.11 02:00:00:00:00:04 1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("leases (-want +got):\n%s", diff)
	}
}

func TestPoolPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	clk := &fakeClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "l.db")
	p := openTestPool(t, path, "10.0.0.10", "10.0.0.19", clk)
	ips(t, p, ctx, mac(1), mac(2), mac(3))
	if err := p.Commit(ctx, mac(2), net.ParseIP("10.0.0.11")); err != nil {
		t.Fatal(err)
	}
	before := p.Leases()
	p.Close()

	p = openTestPool(t, path, "10.0.0.10", "10.0.0.19", clk)
	defer p.Close()
	if diff := cmp.Diff(before, p.Leases(), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("leases after reopen (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"10.0.0.11", "10.0.0.13"}, ips(t, p, ctx, mac(2), mac(4))); diff != "" {
		t.Errorf("after reopen (-want +got):\n%s", diff)
	}
}

func TestOpenPoolErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenPool(filepath.Join(dir, "a.db"), net.ParseIP("10.0.0.9"), net.ParseIP("10.0.0.1"), PoolOptions{}); err == nil {
		t.Error("reversed range: no error")
	}
	if _, err := OpenPool(filepath.Join(dir, "no", "such", "dir.db"), net.ParseIP("10.0.0.1"), net.ParseIP("10.0.0.9"), PoolOptions{}); err == nil {
		t.Error("missing directory: no error")
	}
}

// TestPoolCrash kills a process that allocates addresses with SIGKILL, then
// reopens its lease file: every address the process reported (i.e. would have
// sent in a reply) is on disk for the same MAC, and new clients never get one.
func TestPoolCrash(t *testing.T) {
	if os.Getenv("DHCPD_CRASH_CHILD") != "" {
		crashChild()
		return
	}
	if testing.Short() {
		t.Skip("-short: skipping crash test (runs a child process)")
	}
	path := filepath.Join(t.TempDir(), "l.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPoolCrash$")
	cmd.Env = append(os.Environ(), "DHCPD_CRASH_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	given := map[string]string{} // ip -> mac as the child replied
	deadline := time.Now().Add(20 * time.Second)
	for sc.Scan() && time.Now().Before(deadline) {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		if prev, dup := given[f[0]]; dup && prev != f[1] {
			t.Errorf("child gave %s to %s and %s", f[0], prev, f[1])
		}
		given[f[0]] = f[1]
		if len(given) == 150 {
			break // mid-storm: the child is still allocating
		}
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	if len(given) < 150 {
		t.Fatalf("child reported only %d leases", len(given))
	}

	p, err := OpenPool(path, net.ParseIP("10.1.0.1"), net.ParseIP("10.1.3.232"), PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	onDisk := map[string]string{}
	for _, l := range p.Leases() {
		onDisk[l.IP.String()] = l.MAC.String()
	}
	for ip, m := range given {
		if onDisk[ip] != m {
			t.Errorf("after crash %s is held by %q on disk, but was given to %s", ip, onDisk[ip], m)
		}
	}
	// New clients after the restart never get an address given before.
	for i := 0; i < 200; i++ {
		ip, err := p.Offer(context.Background(), mac(100000+i), nil)
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := given[ip.String()]; ok {
			t.Fatalf("after restart %v given to %v, but it belongs to %s", ip, mac(100000+i), m)
		}
	}
}

// crashChild allocates addresses for many MACs concurrently and prints
// "ip mac" after each allocation is committed, until it is killed.
func crashChild() {
	p, err := OpenPool(os.Getenv("DHCPD_CRASH_CHILD"), net.ParseIP("10.1.0.1"), net.ParseIP("10.1.3.232"),
		PoolOptions{BatchDelay: time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	lines := make(chan string, 64)
	for w := 0; w < 8; w++ {
		go func() {
			for i := w; i < 1000; i += 8 {
				ip, err := p.Offer(context.Background(), mac(i), nil)
				if err != nil {
					continue
				}
				if i%2 == 0 {
					if p.Commit(context.Background(), mac(i), ip) != nil {
						continue
					}
				}
				lines <- fmt.Sprintf("%v %v", ip, mac(i))
			}
		}()
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l := <-lines:
			fmt.Println(l)
		case <-deadline:
			os.Exit(0)
		}
	}
}
