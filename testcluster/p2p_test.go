package testcluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap/zaptest"
)

// p2pMachine is boards of 8 nodes behind 1 Gb/s uplinks and one boot server behind a 100 Mb/s NIC.
func p2pMachine(boards int) *topology.Machine {
	return &topology.Machine{
		Name: "p2p",
		Levels: []topology.LevelSpec{
			{Name: "board", Prefix: "b", Count: boards, Uplink: &topology.LinkSpec{Segment: "N2", CapacityMbps: 1000, LatencyUS: 10}},
			{Name: "node", Prefix: "n", Count: 8, Uplink: &topology.LinkSpec{Segment: "N1", CapacityMbps: 1000, LatencyUS: 10}},
		},
		Servers: topology.ServerSpec{Count: 1, NIC: topology.LinkSpec{Segment: "N5", CapacityMbps: 100, LatencyUS: 10}},
	}
}

// fetchResult is what bootctl fetch -o json prints (delivery.Result, the fields read here).
type fetchResult struct {
	Seconds    float64 `json:"seconds"`
	FromPeers  int64   `json:"from_peers"`
	FromServer int64   `json:"from_server"`
	BadPieces  int64   `json:"bad_pieces"`
	SHA256     string  `json:"sha256"`
}

var tokenInScript = regexp.MustCompile(`token=([0-9a-f]{32})`)

// TestP2PFetch: every node of 2 boards fetches a 32 MiB file with bootctl fetch, from its peers and
// the server, then the same nodes fetch it from the server alone, then by multicast (udpcast); the
// peer run and the multicast must be faster than the server alone, the server must send at most a
// few copies per board, and every node's bytes must be the file. Each is logged beside what
// `bootctl simulate` predicts for it (docs/delivery.md).
func TestP2PFetch(t *testing.T) {
	netnsLane(t) // no check here moves with a busy CPU by 3x: peers took 16-20 s, the server alone 50 s
	needRoot(t, "udp-sender", "udp-receiver")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c, bin, server, toks := upP2P(ctx, t)
	pred := c.predictDeliveries(ctx, t, bin)
	peer, peerTime := c.fetchEverywhere(ctx, t, bin, server, toks, false)
	alone, aloneTime := c.fetchEverywhere(ctx, t, bin, server, toks, true)
	mcastTime := c.multicastEverywhere(ctx, t)
	// Staggered, as bootctl boot admits nodes: one every half second.
	_, peerStaggered := c.fetchEvery(ctx, t, bin, server, toks, false, p2pArrival)
	mcastStaggered := c.multicastEvery(ctx, t, p2pArrival, 2*time.Second)
	t.Logf("a node every %v: with peers %.1f s, multicast %.1f s (the last node arrives at %.1f s)", p2pArrival,
		peerStaggered.Seconds(), mcastStaggered.Seconds(), (time.Duration(len(c.Nodes)-1) * p2pArrival).Seconds())
	var fromServer int64
	for _, r := range peer {
		fromServer += r.FromServer
	}
	t.Logf("%d nodes, %d MiB: with peers %.1f s (server sent %.2f copies per board), server alone %.1f s, multicast %.1f s",
		len(c.Nodes), p2pSize>>20, peerTime.Seconds(), float64(fromServer)/p2pSize/p2pBoards, aloneTime.Seconds(), mcastTime.Seconds())
	t.Logf("bootctl simulate: peers %.1f s, server alone %.1f s, multicast %.1f s", pred["p2p"], pred["unicast"], pred["multicast"])
	if len(alone) != len(c.Nodes) || peerTime >= aloneTime {
		t.Errorf("peer delivery %.1f s is not faster than the server alone, %.1f s", peerTime.Seconds(), aloneTime.Seconds())
	}
	if mcastTime >= aloneTime {
		t.Errorf("multicast %.1f s is not faster than the server alone, %.1f s", mcastTime.Seconds(), aloneTime.Seconds())
	}
	if perBoard := float64(fromServer) / p2pSize / p2pBoards; perBoard > 4 {
		t.Errorf("the server sent %.1f copies per board, want at most 4", perBoard)
	}
}

// p2pBoards is the boards of the peer delivery tests' cluster, 8 nodes each; p2pSize the file.
const (
	p2pBoards = 2
	p2pSize   = 32 << 20
	// p2pArrival spaces the nodes' starts in the staggered runs.
	p2pArrival = 500 * time.Millisecond
)

// upP2P makes the peer delivery tests' cluster and its server with a p2pSize initrd, gives the
// nodes their addresses and returns bootctl, the server's URL and the nodes' tokens.
func upP2P(ctx context.Context, t *testing.T) (c *Cluster, bin, server string, toks []string) {
	t.Helper()
	needRoot(t, "curl")
	if testing.Short() {
		t.Skip("-short: fetches of 32 MiB on 16 nodes")
	}
	return upP2PBoards(ctx, t, p2pBoards)
}

// upP2PBoards is upP2P with boards of 8 nodes.
func upP2PBoards(ctx context.Context, t testing.TB, boards int) (c *Cluster, bin, server string, toks []string) {
	t.Helper()
	c, err := Up(ctx, Spec{Name: testName(t), Machine: p2pMachine(boards), Scale: 1, StateDir: t.TempDir()}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	downAtCleanup(t, c)
	bin = buildBootctl(t)
	if err := c.StartServers(ctx, ServerOptions{Bootctl: bin, Mapping: "bcda", Files: BootFiles{NBP: debianNBP, Kernel: 1 << 20, Initrd: p2pSize}}); err != nil {
		t.Fatal(err)
	}
	server = "http://" + c.Servers[0].IP + ":80"
	return c, bin, server, c.p2pNodeSetup(ctx, t, server)
}

// p2pNodeSetup gives each node its address (with the subnet's broadcast address, where udpcast's
// receivers say hello) and returns its boot token, read from its iPXE script.
func (c *Cluster) p2pNodeSetup(ctx context.Context, t testing.TB, server string) []string {
	t.Helper()
	toks := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		for _, args := range [][]string{{"link", "set", "lo", "up"}, {"addr", "add", n.IP + "/" + strconv.Itoa(c.PrefixLen), "brd", "+", "dev", "eth0"}} {
			if out, err := exec.CommandContext(ctx, "ip", append([]string{"-n", n.Namespace}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("%s: ip %v: %v: %s", n.Name, args, err, out)
			}
		}
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", n.Namespace, "curl", "-sf", "--max-time", "20", server+"/ipxe/"+n.MAC).Output()
		m := tokenInScript.FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("%s: no token in its iPXE script (%v): %.300s", n.Name, err, out)
		}
		toks[i] = string(m[1])
	}
	return toks
}

// fetches are bootctl fetch processes running on nodes, writing into dir.
type fetches struct {
	dir  string
	stop context.CancelFunc
	wg   sync.WaitGroup
	cmds map[int]*exec.Cmd
	outs map[int]*bytes.Buffer
}

// startFetches starts bootctl fetch on the given nodes (all when nil), with extra flags per node.
func (c *Cluster) startFetches(ctx context.Context, t testing.TB, bin, server string, toks []string, nodes []int, extra func(i int) []string) *fetches {
	t.Helper()
	return c.startFetchesEvery(ctx, t, bin, server, toks, nodes, 0, extra)
}

// startFetchesEvery is startFetches with the nodes started every apart, in order: the arrivals of
// a staggered boot. It returns once the last one has started.
func (c *Cluster) startFetchesEvery(ctx context.Context, t testing.TB, bin, server string, toks []string, nodes []int, every time.Duration, extra func(i int) []string) *fetches {
	t.Helper()
	f := &fetches{dir: t.TempDir(), cmds: map[int]*exec.Cmd{}, outs: map[int]*bytes.Buffer{}}
	ctx, f.stop = context.WithCancel(ctx)
	t.Cleanup(func() { f.stop(); f.wg.Wait() })
	start := time.Now()
	for k, i := range c.orAll(nodes) {
		time.Sleep(time.Until(start.Add(time.Duration(k) * every)))
		n := c.Nodes[i]
		args := []string{"netns", "exec", n.Namespace, bin, "fetch", "--server", server, "--file", "initrd", "--node", n.Name,
			"--token", toks[i], "--bind", n.IP, "--out", filepath.Join(f.dir, n.Name), "--seed-for", "5m", "-o", "json"}
		cmd := exec.CommandContext(ctx, "ip", append(args, extra(i)...)...)
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 10 * time.Second
		f.outs[i] = &bytes.Buffer{}
		cmd.Stdout = f.outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		f.cmds[i] = cmd
		f.wg.Add(1)
		go func() { defer f.wg.Done(); cmd.Wait() }()
	}
	return f
}

// waitFiles waits until the given nodes' files are all there (verified: fetch writes nothing else).
func (c *Cluster) waitFiles(t testing.TB, f *fetches, nodes []int, limit time.Duration) {
	t.Helper()
	testfix.WaitFor(t, "every node's verified file", limit, func() bool {
		for _, i := range nodes {
			if _, err := os.Stat(filepath.Join(f.dir, c.Nodes[i].Name)); err != nil {
				return false
			}
		}
		return true
	})
}

// results stops the fetches and returns the given nodes' results.
func (c *Cluster) results(t testing.TB, f *fetches, nodes []int) []fetchResult {
	t.Helper()
	f.stop()
	f.wg.Wait()
	var res []fetchResult
	for _, i := range nodes {
		var r fetchResult
		if err := json.Unmarshal(f.outs[i].Bytes(), &r); err != nil {
			t.Errorf("%s: %v: %s", c.Nodes[i].Name, err, strings.TrimSpace(f.outs[i].String()))
			continue
		}
		res = append(res, r)
	}
	return res
}

// fetchEverywhere runs bootctl fetch on every node at once and returns their results and the time
// until the last file was verified; the nodes seed until then, and are stopped after.
func (c *Cluster) fetchEverywhere(ctx context.Context, t testing.TB, bin, server string, toks []string, serverOnly bool) ([]fetchResult, time.Duration) {
	t.Helper()
	return c.fetchEvery(ctx, t, bin, server, toks, serverOnly, 0)
}

// fetchEvery is fetchEverywhere with the nodes started every apart.
func (c *Cluster) fetchEvery(ctx context.Context, t testing.TB, bin, server string, toks []string, serverOnly bool, every time.Duration) ([]fetchResult, time.Duration) {
	t.Helper()
	start := time.Now()
	f := c.startFetchesEvery(ctx, t, bin, server, toks, nil, every, func(int) []string {
		if serverOnly {
			return []string{"--server-only"}
		}
		return nil
	})
	all := c.orAll(nil)
	// At least twice the time of every copy through the server's 100 Mb/s NIC.
	c.waitFiles(t, f, all, max(4*time.Minute, time.Duration(2*len(all)*p2pSize*8/100)*time.Microsecond))
	elapsed := time.Since(start)
	return c.results(t, f, all), elapsed
}

// TestP2PFetchHostile: node 0 serves inverted bytes and node 8 (the other board's first node) is
// killed mid-transfer; every other node still writes exact bytes, and the hostile peer's bad pieces
// are counted.
func TestP2PFetchHostile(t *testing.T) {
	netnsLane(t) // no check here moves with a busy CPU by 3x: peers took 16-20 s, the server alone 50 s
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c, bin, server, toks := upP2P(ctx, t)
	hostile := c.startFetches(ctx, t, bin, server, toks, []int{0}, func(int) []string { return []string{"--debug-corrupt-uploads"} })
	c.waitFiles(t, hostile, []int{0}, 2*time.Minute)
	var others []int
	for i := 1; i < len(c.Nodes); i++ {
		others = append(others, i)
	}
	f := c.startFetches(ctx, t, bin, server, toks, others, func(int) []string { return nil })
	const killed = 8
	testfix.WaitFor(t, "node 8 under way", time.Minute, func() bool {
		ents, _ := os.ReadDir(f.dir)
		return len(ents) > 0 // its staging directory, or an early finisher's file
	})
	time.Sleep(2 * time.Second) // mid-transfer: a 32 MiB file takes over 10 s here
	f.cmds[killed].Process.Kill()
	honest := slices.DeleteFunc(slices.Clone(others), func(i int) bool { return i == killed })
	c.waitFiles(t, f, honest, 4*time.Minute)
	want, err := os.ReadFile(filepath.Join(c.dir(), "initrd"))
	if err != nil {
		t.Fatal(err)
	}
	var bad int64
	for _, r := range c.results(t, f, honest) {
		bad += r.BadPieces
	}
	for _, i := range honest {
		got, err := os.ReadFile(filepath.Join(f.dir, c.Nodes[i].Name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes that are not the file (%v)", c.Nodes[i].Name, len(got), err)
		}
	}
	t.Logf("%d honest nodes got exact bytes; %d bad pieces from the hostile peer dropped", len(honest), bad)
	if bad == 0 {
		t.Errorf("no node saw a bad piece: the hostile peer served nobody")
	}
}

// BenchmarkP2PScale is issue 40's scale run: BOOTFABRIC_P2P_BOARDS boards of 8 nodes (default 32:
// 256 nodes) behind 1 Gb/s uplinks, the server behind 100 Mb/s, fetch the 32 MiB file at once
// through peers, then from the server alone, beside `bootctl simulate`'s predictions of both. It
// prints the figures and checks every node's bytes. As root; the server alone is the long part
// (nodes x 32 MiB at 100 Mb/s: 11.5 min at 256 nodes). The files are written under the test's
// temporary directory, on disk: nodes x 32 MiB twice (16 GiB at 256 nodes).
//
//	BOOTFABRIC_P2P_BOARDS=8 go test ./testcluster -run '^$' -bench P2PScale -benchtime 1x -timeout 60m -v
func BenchmarkP2PScale(b *testing.B) {
	boards := 32
	if v := os.Getenv("BOOTFABRIC_P2P_BOARDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("BOOTFABRIC_P2P_BOARDS=%q: want a number of boards", v)
		}
		boards = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	c, bin, server, toks := upP2PBoards(ctx, b, boards)
	pred := c.predictDeliveries(ctx, b, bin)
	want, err := os.ReadFile(filepath.Join(c.dir(), "initrd"))
	if err != nil {
		b.Fatal(err)
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(want))
	check := func(how string, res []fetchResult) (fromServer, fromPeers int64) {
		if len(res) != len(c.Nodes) {
			b.Errorf("%s: %d of %d nodes reported", how, len(res), len(c.Nodes))
		}
		for _, r := range res {
			if r.SHA256 != sum {
				b.Errorf("%s: a node's file has sha256 %s, want %s", how, r.SHA256, sum)
			}
			fromServer, fromPeers = fromServer+r.FromServer, fromPeers+r.FromPeers
		}
		return fromServer, fromPeers
	}
	peer, peerTime := c.fetchEverywhere(ctx, b, bin, server, toks, false)
	fromServer, fromPeers := check("peers", peer)
	fmt.Printf("%d nodes, %d MiB: with peers %.1f s (the server sent %.2f copies per board; %.0f%% of the bytes came from peers)\n",
		len(c.Nodes), p2pSize>>20, peerTime.Seconds(), float64(fromServer)/p2pSize/float64(boards), 100*float64(fromPeers)/float64(fromPeers+fromServer))
	alone, aloneTime := c.fetchEverywhere(ctx, b, bin, server, toks, true)
	check("server alone", alone)
	fmt.Printf("%d nodes, %d MiB: the server alone %.1f s (%.1fx the peers' time)\n", len(c.Nodes), p2pSize>>20, aloneTime.Seconds(), aloneTime.Seconds()/peerTime.Seconds())
	fmt.Printf("bootctl simulate: peers %.1f s, server alone %.1f s; measured/predicted: peers %.2f, server alone %.2f\n",
		pred["p2p"], pred["unicast"], peerTime.Seconds()/pred["p2p"], aloneTime.Seconds()/pred["unicast"])
}
