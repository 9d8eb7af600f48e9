package dhcpd

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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

// poolStep is one operation of a pool scenario, at a time after the start.
type poolStep struct {
	at   time.Duration
	op   string // offer, commit, lease (CommitLease), holds, release, decline, reopen, leases, stats
	mac  int
	ip   string // requested (offer) or the address (commit, release, decline)
	want string // the address, the error, or the listing
}

// TestPoolScenarios runs the pool through allocation, renewal, expiry,
// reclaim, a client's return to its old address, exhaustion and restarts.
func TestPoolScenarios(t *testing.T) {
	tests := []struct {
		name        string
		first, last string
		steps       []poolStep
	}{
		{"allocate", "10.0.0.10", "10.0.0.12", []poolStep{
			{op: "offer", mac: 1, want: "10.0.0.10"},
			{op: "offer", mac: 2, want: "10.0.0.11"},
			{op: "offer", mac: 1, want: "10.0.0.10"},                  // same client, same offer
			{op: "offer", mac: 3, ip: "10.0.0.11", want: "10.0.0.12"}, // requested but offered to mac 2
			{op: "offer", mac: 4, want: ErrPoolExhausted.Error()},
			{op: "commit", mac: 4, ip: "10.0.0.10", want: ErrNotOwned.Error()},
			{op: "commit", mac: 1, ip: "10.0.0.99", want: ErrNotInPool.Error()},
			{op: "commit", mac: 1, ip: "10.0.0.10", want: "ok"},
			{op: "leases", want: "10.0.0.10 02:00:00:00:00:01 bound 1h0m0s; 10.0.0.11 02:00:00:00:00:02 offered 1m0s; 10.0.0.12 02:00:00:00:00:03 offered 1m0s"},
			{op: "stats", want: "exhausted 1, transactions 1, writes 1, cached 0"},
		}},
		{"requested address", "10.0.0.10", "10.0.0.19", []poolStep{
			{op: "offer", mac: 1, ip: "10.0.0.15", want: "10.0.0.15"},
			{op: "offer", mac: 2, ip: "10.1.0.15", want: "10.0.0.10"}, // outside the range: ignored
			{op: "offer", mac: 1, ip: "10.0.0.17", want: "10.0.0.15"}, // a client keeps its address
		}},
		{"renew", "10.0.0.10", "10.0.0.19", []poolStep{
			{op: "offer", mac: 1, want: "10.0.0.10"},
			{op: "lease", mac: 1, ip: "10.0.0.10", want: "1h0m0s"},
			// Less than half used and on disk: answered from it, nothing written.
			{at: 10 * time.Minute, op: "lease", mac: 1, ip: "10.0.0.10", want: "50m0s"},
			{at: 10 * time.Minute, op: "offer", mac: 1, want: "10.0.0.10"}, // rebooting: the lease stands
			{at: 10 * time.Minute, op: "leases", want: "10.0.0.10 02:00:00:00:00:01 bound 50m0s"},
			{at: 30 * time.Minute, op: "lease", mac: 1, ip: "10.0.0.10", want: "30m0s"},
			// More than half used: renewed and written.
			{at: 31 * time.Minute, op: "lease", mac: 1, ip: "10.0.0.10", want: "1h0m0s"},
			{at: 31 * time.Minute, op: "leases", want: "10.0.0.10 02:00:00:00:00:01 bound 1h0m0s"},
			{at: 100 * time.Minute, op: "commit", mac: 1, ip: "10.0.0.10", want: "ok"}, // expired: written again
			{at: 100 * time.Minute, op: "stats", want: "exhausted 0, transactions 3, writes 3, cached 2"},
		}},
		{"offer expires and is reclaimed", "10.0.0.10", "10.0.0.11", []poolStep{
			{op: "offer", mac: 1, want: "10.0.0.10"},
			{op: "offer", mac: 2, want: "10.0.0.11"},
			{op: "commit", mac: 1, ip: "10.0.0.10", want: "ok"},
			{at: 30 * time.Second, op: "offer", mac: 3, want: ErrPoolExhausted.Error()},
			{at: 90 * time.Second, op: "offer", mac: 3, want: "10.0.0.11"}, // mac 2's offer expired
			{at: 90 * time.Second, op: "offer", mac: 4, want: ErrPoolExhausted.Error()},
			{at: 90 * time.Second, op: "commit", mac: 2, ip: "10.0.0.11", want: ErrNotOwned.Error()}, // too late
			{at: 90 * time.Second, op: "stats", want: "exhausted 2, transactions 1, writes 1, cached 0"},
		}},
		{"expired leases reclaimed longest-expired first", "10.0.0.10", "10.0.0.11", []poolStep{
			{op: "offer", mac: 1, want: "10.0.0.10"},
			{op: "commit", mac: 1, ip: "10.0.0.10", want: "ok"},
			{at: time.Minute, op: "offer", mac: 2, want: "10.0.0.11"},
			{at: time.Minute, op: "commit", mac: 2, ip: "10.0.0.11", want: "ok"},
			{at: 30 * time.Minute, op: "offer", mac: 3, want: ErrPoolExhausted.Error()},
			{at: 3 * time.Hour, op: "offer", mac: 3, want: "10.0.0.10"},
			{at: 3 * time.Hour, op: "offer", mac: 4, want: "10.0.0.11"},
			{at: 3 * time.Hour, op: "offer", mac: 1, want: ErrPoolExhausted.Error()}, // its address went to mac 3
			{at: 3 * time.Hour, op: "commit", mac: 3, ip: "10.0.0.10", want: "ok"},
			{at: 3 * time.Hour, op: "leases", want: "10.0.0.10 02:00:00:00:00:03 bound 1h0m0s; 10.0.0.11 02:00:00:00:00:04 offered 1m0s"},
		}},
		{"an expired lease can be requested by another client", "10.0.0.10", "10.0.0.19", []poolStep{
			{op: "offer", mac: 1, want: "10.0.0.10"},
			{op: "commit", mac: 1, ip: "10.0.0.10", want: "ok"},
			{at: 2 * time.Hour, op: "commit", mac: 2, ip: "10.0.0.10", want: "ok"},
			{at: 2 * time.Hour, op: "offer", mac: 1, want: "10.0.0.11"},
		}},
		{"a returning client gets its old address back", "10.0.0.10", "10.0.0.12", []poolStep{
			{op: "offer", mac: 1, want: "10.0.0.10"},
			{op: "commit", mac: 1, ip: "10.0.0.10", want: "ok"},
			{at: 2 * time.Hour, op: "offer", mac: 2, want: "10.0.0.11"}, // never-used addresses go first
			{at: 2 * time.Hour, op: "offer", mac: 1, want: "10.0.0.10"}, // lease expired, address still its
			{at: 2 * time.Hour, op: "commit", mac: 1, ip: "10.0.0.10", want: "ok"},
			{at: 2 * time.Hour, op: "release", mac: 1, ip: "10.0.0.10", want: "ok"},
			{at: 2 * time.Hour, op: "offer", mac: 3, want: "10.0.0.12"},
			{at: 2 * time.Hour, op: "offer", mac: 1, want: "10.0.0.10"},             // released, nobody took it
			{at: 2 * time.Hour, op: "release", mac: 2, ip: "10.0.0.10", want: "ok"}, // not its: no effect
			{at: 2 * time.Hour, op: "leases", want: "10.0.0.10 02:00:00:00:00:01 offered 1m0s; 10.0.0.11 02:00:00:00:00:02 offered 1m0s; 10.0.0.12 02:00:00:00:00:03 offered 1m0s"},
		}},
		{"a released address is reused once the pool is full", "10.0.0.10", "10.0.0.10", []poolStep{
			{op: "offer", mac: 1, want: "10.0.0.10"},
			{op: "commit", mac: 1, ip: "10.0.0.10", want: "ok"},
			{op: "offer", mac: 2, want: ErrPoolExhausted.Error()},
			{at: time.Second, op: "release", mac: 1, ip: "10.0.0.10", want: "ok"},
			{at: time.Second, op: "offer", mac: 2, want: "10.0.0.10"},
		}},
		{"a declined address is quarantined", "10.0.0.10", "10.0.0.11", []poolStep{
			{op: "offer", mac: 1, want: "10.0.0.10"},
			{op: "decline", mac: 1, ip: "10.0.0.10", want: "ok"},
			{op: "offer", mac: 1, want: "10.0.0.11"},
			{at: 2 * time.Minute, op: "offer", mac: 2, want: "10.0.0.11"}, // mac 1's offer expired; .10 still quarantined
			{at: 2 * time.Hour, op: "offer", mac: 3, want: "10.0.0.11"},   // expired at 3m, before the quarantine
			{at: 2 * time.Hour, op: "offer", mac: 4, want: "10.0.0.10"},
		}},
		{"restart keeps bound leases, forgets offers", "10.0.0.10", "10.0.0.19", []poolStep{
			{op: "offer", mac: 1, want: "10.0.0.10"},
			{op: "offer", mac: 2, want: "10.0.0.11"},
			{op: "commit", mac: 2, ip: "10.0.0.11", want: "ok"},
			{op: "offer", mac: 3, want: "10.0.0.12"},
			{op: "commit", mac: 3, ip: "10.0.0.12", want: "ok"},
			{op: "release", mac: 3, ip: "10.0.0.12", want: "ok"},
			{op: "reopen"},
			{op: "leases", want: "10.0.0.11 02:00:00:00:00:02 bound 1h0m0s; 10.0.0.12 02:00:00:00:00:03 released 0s"},
			{at: time.Minute, op: "lease", mac: 2, ip: "10.0.0.11", want: "59m0s"}, // loaded leases are on disk
			{at: time.Minute, op: "stats", want: "exhausted 0, transactions 0, writes 0, cached 1"},
			{op: "offer", mac: 2, want: "10.0.0.11"},
			{op: "offer", mac: 3, want: "10.0.0.12"},
			{op: "offer", mac: 4, want: "10.0.0.10"}, // mac 1's offer was forgotten
			{op: "commit", mac: 1, ip: "10.0.0.10", want: ErrNotOwned.Error()},
		}},
		// A REQUEST for another address while the client's lease runs is someone else with its
		// MAC (Offer always offers a client its lease): it would free the address the client uses.
		{"a running lease does not move", "10.0.0.10", "10.0.0.19", []poolStep{
			{op: "offer", mac: 1, want: "10.0.0.10"},
			{op: "commit", mac: 1, ip: "10.0.0.10", want: "ok"},
			{op: "commit", mac: 1, ip: "10.0.0.15", want: ErrNotOwned.Error()},
			{op: "offer", mac: 2, want: "10.0.0.11"},
			{op: "leases", want: "10.0.0.10 02:00:00:00:00:01 bound 1h0m0s; 10.0.0.11 02:00:00:00:00:02 offered 1m0s"},
		}},
		{"restart: a client moved to another address", "10.0.0.10", "10.0.0.19", []poolStep{
			{op: "offer", mac: 1, want: "10.0.0.10"},
			{op: "commit", mac: 1, ip: "10.0.0.10", want: "ok"},
			{at: 2 * time.Hour, op: "commit", mac: 1, ip: "10.0.0.15", want: "ok"}, // its lease expired
			{at: 2 * time.Hour, op: "reopen"},
			{at: 2 * time.Hour, op: "leases", want: "10.0.0.15 02:00:00:00:00:01 bound 1h0m0s"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runPoolSteps(t, tc.first, tc.last, PoolOptions{}, tc.steps)
		})
	}
}

// runPoolSteps opens a pool on first..last (LeaseTime 1 h, OfferTime 1 min, a fake clock, opts'
// other fields) and checks each step's answer.
func runPoolSteps(t *testing.T, first, last string, opts PoolOptions, steps []poolStep) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &fakeClock{t0}
	path := filepath.Join(t.TempDir(), "l.db")
	opts.LeaseTime, opts.OfferTime, opts.Now = time.Hour, time.Minute, clk.now
	open := func() *Pool {
		p, err := OpenPool(path, net.ParseIP(first), net.ParseIP(last), opts)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := open()
	defer func() { p.Close() }()
	errText := func(err error) string {
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	var want, got []string
	for _, s := range steps {
		clk.t = t0.Add(s.at)
		var g string
		switch s.op {
		case "offer":
			ip, err := p.Offer(ctx, mac(s.mac), net.ParseIP(s.ip))
			g = errText(err)
			if err == nil {
				g = ip.String()
			}
		case "commit":
			g = errText(p.Commit(ctx, mac(s.mac), net.ParseIP(s.ip)))
		case "lease":
			left, err := p.CommitLease(ctx, mac(s.mac), net.ParseIP(s.ip))
			g = errText(err)
			if err == nil {
				g = left.String()
			}
		case "holds":
			held, err := p.Holds(ctx, mac(s.mac), net.ParseIP(s.ip))
			g = errText(err)
			if err == nil {
				g = fmt.Sprint(held)
			}
		case "release":
			g = errText(p.Release(ctx, mac(s.mac), net.ParseIP(s.ip)))
		case "decline":
			g = errText(p.Decline(ctx, mac(s.mac), net.ParseIP(s.ip)))
		case "reopen":
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			p = open()
		case "leases":
			var ls []string
			for _, l := range p.Leases() {
				ls = append(ls, fmt.Sprintf("%v %v %s %v", l.IP, l.MAC, stateName[l.State], l.Expiry.Sub(clk.t)))
			}
			g = strings.Join(ls, "; ")
		case "stats":
			st := p.Stats()
			g = fmt.Sprintf("exhausted %d, transactions %d, writes %d, cached %d", st.Exhausted, st.Transactions, st.Writes, st.Cached)
		default:
			t.Fatalf("unknown step %q", s.op)
		}
		want = append(want, fmt.Sprintf("%v %s %d %s: %s", s.at, s.op, s.mac, s.ip, s.want))
		got = append(got, fmt.Sprintf("%v %s %d %s: %s", s.at, s.op, s.mac, s.ip, g))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

var stateName = map[LeaseState]string{LeaseOffered: "offered", LeaseBound: "bound", LeaseDeclined: "declined", LeaseReleased: "released"}

// TestPoolGroupCommit runs many clients' Offer+Commit at once: every client
// gets its own address, and the commits share transactions (far fewer fsyncs
// than leases).
func TestPoolGroupCommit(t *testing.T) {
	const clients = 2000
	p, err := OpenPool(filepath.Join(t.TempDir(), "l.db"), net.ParseIP("10.1.0.1"), net.ParseIP("10.1.255.254"), PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	got := make([]string, clients)
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < clients; i += 64 {
				ip, err := p.Offer(ctx, mac(i), nil)
				if err == nil {
					err = p.Commit(ctx, mac(i), ip)
				}
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = ip.String()
			}
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for i, ip := range got {
		if j, dup := seen[ip]; dup {
			t.Errorf("%s given to clients %d and %d", ip, j, i)
		}
		seen[ip] = i
	}
	st := p.Stats()
	t.Logf("%d leases in %d transactions", st.Writes, st.Transactions)
	if st.Writes != clients || st.Transactions > clients/2 {
		t.Errorf("stats %+v: want %d writes in at most %d transactions", st, clients, clients/2)
	}
}

// TestPoolMetrics checks the exhaustion counter and the lease gauge as
// Prometheus shows them.
func TestPoolMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	clk := &fakeClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p, err := OpenPool(filepath.Join(t.TempDir(), "l.db"), net.ParseIP("10.0.0.10"), net.ParseIP("10.0.0.12"),
		PoolOptions{Now: clk.now, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		ip, err := p.Offer(ctx, mac(i), nil)
		if i == 1 {
			err = p.Commit(ctx, mac(i), ip)
		}
		if i == 4 && err != ErrPoolExhausted {
			t.Errorf("4th client: %v, want ErrPoolExhausted", err)
		}
	}
	want := `
# HELP bootfabric_dhcp_pool_exhausted_total DHCPDISCOVERs left unanswered because no pool address was free.
# TYPE bootfabric_dhcp_pool_exhausted_total counter
bootfabric_dhcp_pool_exhausted_total 1
# HELP bootfabric_dhcp_pool_leases Pool addresses by state (free: never used; expired: reclaimable).
# TYPE bootfabric_dhcp_pool_leases gauge
bootfabric_dhcp_pool_leases{state="bound"} 1
bootfabric_dhcp_pool_leases{state="declined"} 0
bootfabric_dhcp_pool_leases{state="expired"} 0
bootfabric_dhcp_pool_leases{state="free"} 0
bootfabric_dhcp_pool_leases{state="offered"} 2
# HELP bootfabric_dhcp_pool_size Addresses in the pool's range.
# TYPE bootfabric_dhcp_pool_size gauge
bootfabric_dhcp_pool_size 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"bootfabric_dhcp_pool_exhausted_total", "bootfabric_dhcp_pool_leases", "bootfabric_dhcp_pool_size"); err != nil {
		t.Error(err)
	}
}

// BenchmarkPoolDORA is one client's Offer and Commit, from 8 or 64
// goroutines at once as DHCP workers call them (b.N clients, a fresh MAC
// each). leases/fsync shows the group commit at work.
func BenchmarkPoolDORA(b *testing.B) {
	for _, workers := range []int{8, 64} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			p, err := OpenPool(filepath.Join(b.TempDir(), "l.db"), net.ParseIP("10.0.0.1"), net.ParseIP("10.255.255.254"), PoolOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ctx := context.Background()
			var n atomic.Int64
			b.SetParallelism(max(1, workers/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m := mac(int(n.Add(1)))
					ip, err := p.Offer(ctx, m, nil)
					if err == nil {
						err = p.Commit(ctx, m, ip)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			st := p.Stats()
			b.ReportMetric(float64(st.Writes)/float64(max(st.Transactions, 1)), "leases/fsync")
		})
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
// reopens its lease file: every lease the process reported committed (i.e.
// would have acknowledged) is on disk for the same MAC, and new clients never
// get one of those addresses. Offers are not promised to survive a crash.
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

// crashChild allocates addresses for many MACs concurrently (half of them
// only offered) and prints "ip mac" after each lease is committed, until it
// is killed.
func crashChild() {
	p, err := OpenPool(os.Getenv("DHCPD_CRASH_CHILD"), net.ParseIP("10.1.0.1"), net.ParseIP("10.1.3.232"),
		PoolOptions{})
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
					continue // offered only: not promised to survive
				}
				if p.Commit(context.Background(), mac(i), ip) != nil {
					continue
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

// TestHandlePoolKnownNode: a reservation without an address (an inventory node
// with no ip) gets a pool address and keeps its host name; every pool lease
// lasts the pool's lease time whatever the client asks for, and a reservation
// with an address keeps the reservations' lease time.
func TestHandlePoolKnownNode(t *testing.T) {
	pool, err := OpenPool(filepath.Join(t.TempDir(), "leases.db"), net.IPv4(10, 0, 1, 10), net.IPv4(10, 0, 1, 11),
		PoolOptions{LeaseTime: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	known := net.HardwareAddr{2, 0, 0, 0, 0, 7}
	h := NewHandler(Config{
		Reservations: StaticReservations{
			macKey(known):   {Name: "node-7", Mask: net.CIDRMask(24, 32)},
			macKey(testMAC): testRes,
		},
		Pool: pool, PoolAllowed: func(net.HardwareAddr) bool { return false }, LeaseTime: 2 * time.Hour,
	})
	in := Ingress{ServerIP: testServer}
	ctx := context.Background()
	week := dhcpv4.WithOption(dhcpv4.OptIPAddressLeaseTime(7 * 24 * time.Hour))
	type answer struct {
		Type, YIAddr, Host string
		Lease              time.Duration
	}
	ask := func(m net.HardwareAddr, mt dhcpv4.MessageType, mods ...dhcpv4.Modifier) answer {
		d := h.Handle(ctx, request(t, m, mt, mods...), in)
		if d.Reply == nil {
			return answer{Type: string(d.Outcome)}
		}
		return answer{d.Reply.MessageType().String(), d.Reply.YourIPAddr.String(), d.Reply.HostName(), d.Reply.IPAddressLeaseTime(0)}
	}
	got := []answer{
		ask(known, dhcpv4.MessageTypeDiscover, week),
		ask(known, dhcpv4.MessageTypeRequest, week, dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.IPv4(10, 0, 1, 10)))),
		// Again at once (iPXE after the firmware): the lease on disk answers.
		ask(known, dhcpv4.MessageTypeRequest, dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.IPv4(10, 0, 1, 10)))),
		ask(testMAC, dhcpv4.MessageTypeDiscover, week),
		ask(net.HardwareAddr{2, 0, 0, 0, 0, 8}, dhcpv4.MessageTypeDiscover), // unknown, not allowed
	}
	want := []answer{
		{"OFFER", "10.0.1.10", "node-7", 10 * time.Minute},
		{"ACK", "10.0.1.10", "node-7", 10 * time.Minute},
		{"ACK", "10.0.1.10", "node-7", 10 * time.Minute},
		{"OFFER", testRes.IP.String(), testRes.Name, 2 * time.Hour},
		{Type: string(OutcomeNotOurs)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if st := pool.Stats(); st.Cached != 1 || st.Writes != 1 {
		t.Errorf("pool stats %+v: want 1 write, 1 cached answer", st)
	}
}
