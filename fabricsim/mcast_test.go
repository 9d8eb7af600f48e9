package fabricsim

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/routing"
	"github.com/bootfabric/bootfabric/topology"
)

func mcMachine(t testing.TB, name string) (*topology.Graph, *routing.HopTable) {
	t.Helper()
	m, ok := topology.Preset(name)
	if !ok {
		t.Fatalf("no preset %s", name)
	}
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	h, err := routing.NewHopTable(g, 0)
	if err != nil {
		t.Fatal(err)
	}
	return g, h
}

// runMC simulates with trees and checks every allocation against the max-min certificate.
func runMC(t testing.TB, g *topology.Graph, a *mapping.Assignment, batch []int, cfg FlowConfig, mc *MulticastTrees) *FlowResult {
	t.Helper()
	res, err := simulateMC(context.Background(), g, nil, a, batch, cfg, certify, mc)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestMulticastSupernodeNeverSlower boots a whole supernode from one server, by unicast and down
// a multicast tree, for several servers, supernodes and file sets: multicast is never slower.
func TestMulticastSupernodeNeverSlower(t *testing.T) {
	for _, name := range []string{"mini", "sunway"} {
		g, h := mcMachine(t, name)
		hier := g.Hierarchy()
		lvl, err := hier.UnitLevel("supernode")
		if err != nil {
			t.Fatal(err)
		}
		span := hier.Span(lvl)
		for _, sn := range []int{0, hier.Total(lvl) - 1} {
			batch := make([]int, span)
			for i := range batch {
				batch[i] = sn*span + i
			}
			for _, srv := range []int{0, len(g.Servers()) - 1} {
				a := &mapping.Assignment{Algo: "one", Level: -1, Server: make([]int32, len(g.Nodes())), NumServers: len(g.Servers())}
				for i := range a.Server {
					a.Server[i] = int32(srv)
				}
				for ci, cfg := range []FlowConfig{plain(400), DefaultFlowConfig(TFTP), DefaultFlowConfig(HTTP)} {
					mc, err := BuildMulticastTrees(g, h, a, batch, routing.McastFULB)
					if err != nil {
						t.Fatal(err)
					}
					uni := run(t, g, a, batch, cfg)
					multi := runMC(t, g, a, batch, cfg, mc)
					if multi.BatchSeconds > uni.BatchSeconds*(1+1e-9) {
						t.Errorf("%s supernode %d server %d config %d: multicast %.6g s slower than unicast %.6g s",
							name, sn, srv, ci, multi.BatchSeconds, uni.BatchSeconds)
					}
					if ci == 0 && name == "sunway" && sn == 0 && srv == 0 {
						t.Logf("sunway supernode from one server, 50 MB: unicast %.3f s, multicast %.3f s", uni.BatchSeconds, multi.BatchSeconds)
					}
				}
			}
		}
	}
}

// TestMulticastOneCopy: a tree's channels carry each file once, and its rate is its slowest
// channel's capacity when alone.
func TestMulticastOneCopy(t *testing.T) {
	g, h := mcMachine(t, "mini")
	a, err := mapping.Assign(g, mapping.Algo{Name: "scda", Level: 0}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	batch := all(len(g.Nodes()))
	mc, err := BuildMulticastTrees(g, h, a, batch, routing.McastMinHop)
	if err != nil {
		t.Fatal(err)
	}
	cfg := plain(100) // 12.5 MB
	cfg.TopLinks = 1000
	res := runMC(t, g, a, batch, cfg, mc)
	trees := map[[2]string]int{} // channel -> trees crossing it
	used := 0
	for _, chs := range mc.Channels {
		if chs != nil {
			used++
		}
		for _, c := range chs {
			trees[[2]string{g.VertexName(g.ChannelFrom(c)), g.VertexName(g.ChannelTo(c))}]++
		}
	}
	if len(res.TopLinks) != len(trees) {
		t.Errorf("%d links carried data, the trees have %d", len(res.TopLinks), len(trees))
	}
	for _, l := range res.TopLinks {
		if want := 12.5e6 * float64(trees[[2]string{l.From, l.To}]); math.Abs(l.Bytes-want) > 1 {
			t.Errorf("link %s->%s carried %.0f bytes, want one copy per tree (%.0f)", l.From, l.To, l.Bytes, want)
		}
	}
	// Every tree runs at 100 Mb/s (NIC, N2, N1) alone on its channels: 1 s.
	if math.Abs(res.BatchSeconds-1) > 1e-9 {
		t.Errorf("batch %.9g s, want 1 s", res.BatchSeconds)
	}
	if res.Stats.Classes != used {
		t.Errorf("%d classes, want one per tree (%d)", res.Stats.Classes, used)
	}
}

// TestMulticastSharesWithUnicast: server 0 multicasts to supernode 0 while server 1 unicasts to
// one node of the same board as a tree member; they share that board's N2 link max-min.
func TestMulticastSharesWithUnicast(t *testing.T) {
	g, h := mcMachine(t, "mini")
	n := len(g.Nodes())
	a := &mapping.Assignment{Algo: "mixed", Level: -1, Server: make([]int32, n), NumServers: len(g.Servers())}
	batch := []int{0, 1, 2, 3, 4, 5}
	a.Server[3] = 1 // board 0: nodes 0..2 by tree, node 3 by unicast
	mc, err := BuildMulticastTrees(g, h, a, batch, routing.McastFULB)
	if err != nil {
		t.Fatal(err)
	}
	mc.Channels[1] = nil // server 1 sends by unicast
	res := runMC(t, g, a, batch, plain(100), mc)
	// Board 0's N2 link (100 Mb/s) carries the tree and node 3's flow, which are alone everywhere
	// else: 50 Mb/s each, 100 Mb in 2 s for everyone.
	for _, nr := range res.NodeResults {
		if math.Abs(nr.DoneSeconds-2) > 1e-9 {
			t.Errorf("node %s done at %.9g s, want 2 s", nr.Name, nr.DoneSeconds)
		}
	}
}

func TestMulticastBadInput(t *testing.T) {
	g, h := mcMachine(t, "mini")
	a, _ := mapping.Assign(g, mapping.Algo{Name: "scda", Level: 0}, nil, nil)
	if _, err := BuildMulticastTrees(g, h, a, all(4), "bogus"); err == nil {
		t.Error("unknown algorithm: no error")
	}
	if _, err := SimulateMulticast(context.Background(), g, nil, a, all(4), plain(1), &MulticastTrees{}); err == nil {
		t.Error("trees for no server: no error")
	}
}

func TestMulticastNodeOutsideTree(t *testing.T) {
	g, h := mcMachine(t, "mini")
	a, _ := mapping.Assign(g, mapping.Algo{Name: "scda", Level: 0}, nil, nil)
	mc, err := BuildMulticastTrees(g, h, a, []int{0, 1}, routing.McastFULB)
	if err != nil {
		t.Fatal(err)
	}
	_, err = SimulateMulticast(context.Background(), g, nil, a, []int{0, 1, 2}, plain(1), mc)
	if err == nil || !strings.Contains(err.Error(), "is not in the multicast tree") {
		t.Errorf("err = %v, want node outside its tree", err)
	}
}
