package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
// the server, then the same nodes fetch it from the server alone; the peer run must be faster and
// the server must send at most a few copies per board.
func TestP2PFetch(t *testing.T) {
	needRoot(t, "curl")
	if testing.Short() {
		t.Skip("-short: two fetches of 32 MiB on 16 nodes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c, err := Up(ctx, Spec{Name: testName(t), Machine: p2pMachine(2), Scale: 1, StateDir: t.TempDir()}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	downAtCleanup(t, c)
	bin := buildBootctl(t)
	const size = 32 << 20
	if err := c.StartServers(ctx, ServerOptions{Bootctl: bin, Mapping: "bcda", Files: BootFiles{NBP: debianNBP, Kernel: 1 << 20, Initrd: size}}); err != nil {
		t.Fatal(err)
	}
	server := "http://" + c.Servers[0].IP + ":80"
	toks := c.p2pNodeSetup(ctx, t, server)
	peer, peerTime := c.fetchEverywhere(ctx, t, bin, server, toks, false)
	alone, aloneTime := c.fetchEverywhere(ctx, t, bin, server, toks, true)
	var fromServer int64
	for _, r := range peer {
		fromServer += r.FromServer
	}
	boards := 2
	t.Logf("%d nodes, %d MiB: with peers %.1f s (server sent %.2f copies per board), server alone %.1f s",
		len(c.Nodes), size>>20, peerTime.Seconds(), float64(fromServer)/size/float64(boards), aloneTime.Seconds())
	if len(alone) != len(c.Nodes) || peerTime >= aloneTime {
		t.Errorf("peer delivery %.1f s is not faster than the server alone, %.1f s", peerTime.Seconds(), aloneTime.Seconds())
	}
	if perBoard := float64(fromServer) / size / float64(boards); perBoard > 4 {
		t.Errorf("the server sent %.1f copies per board, want at most 4", perBoard)
	}
}

// p2pNodeSetup gives each node its address and returns its boot token, read from its iPXE script.
func (c *Cluster) p2pNodeSetup(ctx context.Context, t *testing.T, server string) []string {
	t.Helper()
	toks := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		for _, args := range [][]string{{"link", "set", "lo", "up"}, {"addr", "add", n.IP + "/" + strconv.Itoa(c.PrefixLen), "dev", "eth0"}} {
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

// fetchEverywhere runs bootctl fetch on every node at once and returns their results and the time
// until the last file was verified; the nodes seed until then, and are stopped after.
func (c *Cluster) fetchEverywhere(ctx context.Context, t *testing.T, bin, server string, toks []string, serverOnly bool) ([]fetchResult, time.Duration) {
	t.Helper()
	dir := t.TempDir()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	outs := make([][]byte, len(c.Nodes))
	start := time.Now()
	for i, n := range c.Nodes {
		args := []string{"netns", "exec", n.Namespace, bin, "fetch", "--server", server, "--file", "initrd", "--node", n.Name,
			"--token", toks[i], "--bind", n.IP, "--out", filepath.Join(dir, n.Name), "--seed-for", "5m", "-o", "json"}
		if serverOnly {
			args = append(args, "--server-only")
		}
		cmd := exec.CommandContext(ctx, "ip", args...)
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 10 * time.Second
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], _ = cmd.Output()
		}()
	}
	var elapsed time.Duration
	deadline := time.Now().Add(4 * time.Minute)
	for elapsed == 0 && time.Now().Before(deadline) {
		n := 0
		for _, e := range c.Nodes {
			if _, err := os.Stat(filepath.Join(dir, e.Name)); err == nil {
				n++
			}
		}
		if n == len(c.Nodes) {
			elapsed = time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	wg.Wait()
	if elapsed == 0 {
		t.Fatalf("not every node's file within 4 minutes (server only: %v)", serverOnly)
	}
	return parseFetches(t, c.Nodes, outs), elapsed
}

func parseFetches(t *testing.T, nodes []Endpoint, outs [][]byte) []fetchResult {
	t.Helper()
	var res []fetchResult
	for i, out := range outs {
		var r fetchResult
		if err := json.Unmarshal(out, &r); err != nil {
			t.Errorf("%s: %v: %s", nodes[i].Name, err, strings.TrimSpace(fmt.Sprint(string(out))))
			continue
		}
		res = append(res, r)
	}
	return res
}
