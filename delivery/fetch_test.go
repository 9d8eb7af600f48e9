package delivery

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"go.uber.org/zap/zaptest"
)

// swarmServer runs a boot server on loopback for the mini machine whose node NN has the loopback
// address 127.0.1.(10+NN), so that every node of a test has an address of its own, with a kernel of
// size bytes; node_auth is off (the tracker's token checks are bootsrv's tests).
func swarmServer(t *testing.T, size int) (*bootsrv.Server, []byte) {
	t.Helper()
	dir := t.TempDir()
	b := testfix.BootDir(t, dir, testfix.BootSizes{Kernel: size, Initrd: 1000, NBP: 1000, Seed: 7}, "")
	inv := strings.ReplaceAll(testfix.MiniInventoryCSV(t), ",10.0.0.", ",127.0.1.")
	testfix.WriteFile(t, filepath.Join(dir, "inventory.csv"), []byte(inv))
	cfgPath := testfix.WriteFile(t, filepath.Join(dir, "serve.yaml"), []byte(testfix.ServeYAML("0s", `{mode: "off"}`)))
	cfg, err := bootconfig.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	off := false
	cfg.HTTP.NodeAuth = &off
	s, err := bootsrv.New(cfg, bootsrv.Options{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	testfix.Serve(t, s)
	return s, b.Kernel
}

func nodeOptions(s *bootsrv.Server, dir string, i int) Options {
	return Options{Server: s.BaseURL(), Profile: "default", File: "vmlinuz", Node: fmt.Sprintf("node%02d", i),
		Out: filepath.Join(dir, fmt.Sprintf("node%02d.img", i)), Bind: fmt.Sprintf("127.0.1.%d", 10+i), SeedFor: time.Minute}
}

// fetchAll runs a fetch per option at once; each seeds until every file is there, then all stop.
func fetchAll(t *testing.T, opts []Options, want []byte) []Result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make([]Result, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	var failed atomic.Bool
	for k, o := range opts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res[k], errs[k] = Fetch(ctx, o); errs[k] != nil {
				failed.Store(true)
			}
		}()
	}
	testfix.WaitFor(t, "every node's file or a failure", 2*time.Minute, func() bool {
		if failed.Load() {
			return true
		}
		for _, o := range opts {
			if _, err := os.Stat(o.Out); err != nil {
				return false
			}
		}
		return true
	})
	cancel()
	wg.Wait()
	for k, o := range opts {
		if errs[k] != nil {
			t.Fatalf("%s: %v", o.Node, errs[k])
		}
		got, err := os.ReadFile(o.Out)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes that are not the file (%v)", o.Node, len(got), err)
		}
	}
	return res
}

// TestFetchSwarm: six nodes on two boards fetch one file at once; every node gets exact bytes,
// and some of them come from peers, not the server.
func TestFetchSwarm(t *testing.T) {
	s, want := swarmServer(t, 8<<20+3)
	dir := t.TempDir()
	var opts []Options
	for i := range 6 {
		opts = append(opts, nodeOptions(s, dir, i))
	}
	res := fetchAll(t, opts, want)
	var peers, server int64
	for _, r := range res {
		peers += r.FromPeers
		server += r.FromServer
		if r.BadPieces != 0 || len(r.BannedPeers) != 0 {
			t.Errorf("%s: %d bad pieces, banned %v among honest peers", r.Node, r.BadPieces, r.BannedPeers)
		}
	}
	t.Logf("%d nodes: %d bytes from peers, %d from the server (%.1f copies)", len(res), peers, server, float64(server)/float64(len(want)))
	if peers == 0 {
		t.Errorf("no byte came from a peer")
	}
}

// TestFetchHostile: a node that serves inverted bytes; the next node bans it, counts its bad
// pieces, and still writes exact bytes (from the server).
func TestFetchHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a slowed web seed and a hostile peer take 20 to 60 s")
	}
	s, want := swarmServer(t, 2<<20+1)
	dir := t.TempDir()
	bad := nodeOptions(s, dir, 1)
	bad.CorruptUploads = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Fetch(ctx, bad); done <- err }()
	testfix.WaitFor(t, "the hostile node's own copy", time.Minute, func() bool {
		if len(done) > 0 {
			t.Fatalf("the hostile node: %v", <-done)
		}
		_, err := os.Stat(bad.Out)
		return err == nil
	})
	honest := nodeOptions(s, dir, 2)
	honest.Dial = slowServer(s.BaseURL())
	res := fetchAll(t, []Options{honest}, want)[0]
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("honest node: %+v", res)
	if res.BadPieces == 0 || len(res.BannedPeers) == 0 {
		t.Errorf("the hostile peer went unnoticed: %d bad pieces, banned %v", res.BadPieces, res.BannedPeers)
	}
}

// slowServer dials from node02's address and slows what the server sends to about 1 MiB/s, so
// that the node asks its peer for most pieces (on loopback the web seed would win every race).
func slowServer(server string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.1.12")}}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil || !strings.Contains(server, addr) {
			return c, err
		}
		return &slowConn{Conn: c}, nil
	}
}

type slowConn struct{ net.Conn }

func (c *slowConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p[:min(len(p), 16<<10)])
	time.Sleep(15 * time.Millisecond) // 16 KiB per 15 ms
	return n, err
}

// TestFetchPeerKilled: the only peer stops while the next node is fetching from it; that node
// finishes from the server, with exact bytes.
func TestFetchPeerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a slowed web seed takes 15 s")
	}
	s, want := swarmServer(t, 4<<20+5)
	seedDir, dir := t.TempDir(), t.TempDir()
	first := nodeOptions(s, seedDir, 1)
	ctx, kill := context.WithCancel(context.Background())
	defer kill()
	done := make(chan error, 1)
	go func() { _, err := Fetch(ctx, first); done <- err }()
	testfix.WaitFor(t, "the first node's copy", time.Minute, func() bool {
		if len(done) > 0 {
			t.Fatalf("the first node: %v", <-done)
		}
		_, err := os.Stat(first.Out)
		return err == nil
	})
	second := nodeOptions(s, dir, 2)
	second.Dial = slowServer(s.BaseURL())
	go func() {
		// Kill the peer once the second node has staged some data, so that it dies mid-transfer
		// (or after a minute: t.Fatal is not for this goroutine).
		for end := time.Now().Add(time.Minute); stagedBytes(dir) == 0 && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
		kill()
	}()
	res := fetchAll(t, []Options{second}, want)[0]
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("second node: %d bytes from the peer before it died, %d from the server", res.FromPeers, res.FromServer)
}

// stagedBytes sums the sizes of the files under dir's staging directories.
func stagedBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// TestFetchVerifiedBeforeSeed: Verified comes once the file is written whole and checked, while the
// fetch goes on seeding (what a node's agent boots on); the seed's end is no error.
func TestFetchVerifiedBeforeSeed(t *testing.T) {
	s, want := swarmServer(t, 1<<20+5)
	o := nodeOptions(s, t.TempDir(), 0)
	o.SeedFor = 10 * time.Minute
	verified := make(chan Result, 1)
	o.Verified = func(r Result) {
		if got, err := os.ReadFile(o.Out); err != nil || !bytes.Equal(got, want) {
			t.Errorf("at Verified, %s holds %d bytes that are not the file (%v)", o.Out, len(got), err)
		}
		verified <- r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Fetch(ctx, o); done <- err }()
	select {
	case r := <-verified:
		if r.Size != int64(len(want)) || r.FromServer+r.FromPeers < r.Size || r.SeededFor != 0 {
			t.Errorf("result at Verified: %+v", r)
		}
	case err := <-done:
		t.Fatalf("fetch ended before Verified: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("fetch ended after Verified, not seeding: %v", err)
	default:
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("the seed's end: %v", err)
	}
}
