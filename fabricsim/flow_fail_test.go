package fabricsim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// miniFail is the mini machine under bcda (board b on server b mod 4) with one uncapped file of
// 80 Mb and no DHCP or health time: a node alone on its route gets 100 Mb/s (N1, N2 and N5 are
// 100 Mb/s, N3 and N4 2,000) and takes 0.8 s.
func miniFail(t testing.TB) (*topology.Graph, *mapping.Assignment, FlowConfig) {
	t.Helper()
	m, _ := topology.Preset("mini")
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	al, err := mapping.ParseAlgo("bcda", g.Hierarchy())
	if err != nil {
		t.Fatal(err)
	}
	a, err := mapping.Assign(g, al, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g, a, plain(80)
}

func miniNodes(t testing.TB, g *topology.Graph, names ...string) []int {
	t.Helper()
	var out []int
	for _, n := range names {
		i, err := g.Hierarchy().ParseNode(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, i)
	}
	return out
}

// ownerAfter is the owner of node under the fleet's rule with the servers dead down.
func ownerAfter(t testing.TB, g *topology.Graph, a *mapping.Assignment, node int, dead ...int) string {
	t.Helper()
	down := make([]bool, a.NumServers)
	for _, s := range dead {
		down[s] = true
	}
	out, _, err := mapping.Remap(a, g.Hierarchy(), down)
	if err != nil {
		t.Fatal(err)
	}
	return g.VertexName(g.Servers()[out.Server[node]])
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

// TestFailureHand: cases computed by hand on the mini machine. A is s0-b0-n0 on bs0 at 0; B is
// s0-b3-n0 on bs3 at 0 (alone: done at 0.8 s); C is s1-b3-n0 (board 7) on bs3, powered on at 2 s
// (done at 2.8 s). Detection takes 3 s.
func TestFailureHand(t *testing.T) {
	g, a, cfg := miniFail(t)
	batch := miniNodes(t, g, "s0-b0-n0", "s0-b3-n0", "s1-b3-n0")
	cfg.Arrivals = []float64{0, 0, 2}
	B, C := batch[1], batch[2]
	ownB, ownC := ownerAfter(t, g, a, B, 3), ownerAfter(t, g, a, C, 3)
	type node struct {
		done      float64
		server    string
		restarted bool
	}
	tests := []struct {
		name     string
		detect   float64
		fails    []ServerFailure
		nodes    [3]node
		batch    float64
		mid, not int
		done     int
	}{
		// B loses its transfer half-way, restarts at 0.4 + 3 on its new owner: 3.4 + 0.8. C powers
		// on after the failure and waits for the takeover: max(2, 3.4) + 0.8.
		{"mid-boot and not yet started", 3, []ServerFailure{{3, 0.4}},
			[3]node{{0.8, "bs0", false}, {4.2, ownB, true}, {4.2, ownC, false}}, 4.2, 1, 1, 0},
		// B had finished and stays; C powers on at 2, before the detection at 3.9.
		{"finished node stays", 3, []ServerFailure{{3, 0.9}},
			[3]node{{0.8, "bs0", false}, {0.8, "bs3", false}, {4.7, ownC, false}}, 4.7, 0, 1, 1},
		// Detected at 1.5: C powers on at 2 and boots on the new owner at once.
		{"arrival after detection", 0.5, []ServerFailure{{3, 1.0}},
			[3]node{{0.8, "bs0", false}, {0.8, "bs3", false}, {2.8, ownC, false}}, 2.8, 0, 1, 1},
		// C is half-way at 2.4: it restarts at 5.4.
		{"second node mid-boot", 3, []ServerFailure{{3, 2.4}},
			[3]node{{0.8, "bs0", false}, {0.8, "bs3", false}, {6.2, ownC, true}}, 6.2, 1, 0, 1},
		// A failure at the very end of a transfer: the transfer completed first.
		{"failure as the last file ends", 3, []ServerFailure{{3, 2.8}},
			[3]node{{0.8, "bs0", false}, {0.8, "bs3", false}, {2.8, "bs3", false}}, 2.8, 0, 0, 2},
		// Detection at once: B restarts at 0.4.
		{"no detection time", 0, []ServerFailure{{3, 0.4}},
			[3]node{{0.8, "bs0", false}, {1.2, ownB, true}, {2.8, ownC, false}}, 2.8, 1, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := simulateFailures(context.Background(), g, nil, a, batch, cfg,
				FailurePlan{Failures: tc.fails, DetectSeconds: tc.detect}, certify)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range tc.nodes {
				nr, nt := res.NodeResults[i], NodeTakeover{}
				if res.Failure.Nodes != nil {
					nt = res.Failure.Nodes[i]
				}
				if !near(nr.DoneSeconds, w.done) || nr.Server != w.server || nt.Restarted != w.restarted {
					t.Errorf("%s: done %v on %s restarted %v, want %v on %s restarted %v", nr.Name, nr.DoneSeconds, nr.Server,
						nt.Restarted, w.done, w.server, w.restarted)
				}
				if moved := w.server != []string{"bs0", "bs3", "bs3"}[i]; moved != (len(nt.Servers) == 2) {
					t.Errorf("%s: servers %v", nr.Name, nt.Servers)
				}
			}
			f := res.Failure
			st := f.Servers[0]
			if !near(res.BatchSeconds, tc.batch) || !near(f.BatchSeconds, tc.batch) || !near(f.BaselineBatchSeconds, 2.8) ||
				st.MidBoot != tc.mid || st.NotStarted != tc.not || st.Done != tc.done || f.TakenOver != tc.mid+tc.not {
				t.Errorf("batch %v, summary %+v", res.BatchSeconds, f)
			}
			if !near(st.DetectedSeconds, st.FailSeconds+tc.detect) || st.Server != "bs3" {
				t.Errorf("takeover %+v", st)
			}
		})
	}
}

// TestFailureChain: B's new owner fails too, before B's restart but after B's server: B's restart
// gets no answer and B starts again when the second failure is detected, on its owner with both
// servers dead.
func TestFailureChain(t *testing.T) {
	g, a, cfg := miniFail(t)
	batch := miniNodes(t, g, "s0-b3-n0")
	B := batch[0]
	first := ownerAfter(t, g, a, B, 3)
	fi := 0
	for i, v := range g.Servers() {
		if g.VertexName(v) == first {
			fi = i
		}
	}
	second := ownerAfter(t, g, a, B, 3, fi)
	res, err := simulateFailures(context.Background(), g, nil, a, batch, cfg,
		FailurePlan{Failures: []ServerFailure{{fi, 1}, {3, 0.4}}, DetectSeconds: 3}, certify)
	if err != nil {
		t.Fatal(err)
	}
	nr, nt := res.NodeResults[0], res.Failure.Nodes[0]
	// Restart due at 3.4 on first, which died at 1: detected at 4, so 4 + 0.8.
	if !near(nr.DoneSeconds, 4.8) || nr.Server != second || !nt.Restarted || strings.Join(nt.Servers, ",") != "bs3,"+first+","+second {
		t.Fatalf("%+v %+v", nr, nt)
	}
	f := res.Failure
	if f.Servers[0].Server != "bs3" || f.Servers[0].MidBoot != 1 || f.Servers[1].NotStarted != 1 || f.Servers[1].NewOwners[0].Server != second {
		t.Fatalf("%+v", f)
	}
	// The lost half of the file crossed bs3's NIC; the whole file the second owner's.
	for _, l := range res.TopLinks {
		if l.From == "bs3" && !near(l.Bytes, 5e6) || l.From == second && !near(l.Bytes, 10e6) || l.From == first {
			t.Errorf("link %+v", l)
		}
	}
}

// TestFailureSharing: the series fabric (L1 10 Mb/s carries n0, n1, n2 from s0; L2 6 Mb/s carries
// n2 and n3, n3 from s1). When s1 fails its flow leaves L2 and the survivors re-share at once;
// every allocation is checked against the max-min certificate.
func TestFailureSharing(t *testing.T) {
	g, a := series(t)
	cfg := plain(6)
	base := run(t, g, a, all(4), cfg)
	res, err := simulateFailures(context.Background(), g, nil, a, all(4), cfg,
		FailurePlan{Failures: []ServerFailure{{1, 0.5}}, DetectSeconds: 1}, certify)
	if err != nil {
		t.Fatal(err)
	}
	// Before: L2 gives n2 and n3 3 Mb/s each, L1 gives n0 and n1 (10-3)/2 = 3.5 each; n3 is done
	// at 2 s. s1 fails at 0.5 s and n3's flow leaves L2: n0, n1, n2 get 10/3 on L1.
	if !near(base.NodeResults[3].DoneSeconds, 2) || res.NodeResults[3].Server != "s0" || !res.Failure.Nodes[3].Restarted {
		t.Fatalf("base %+v\nfail %+v", base.NodeResults, res.NodeResults)
	}
	// n3 restarts from s0 at 1.5 s: L1 shares 2.5 among four flows. At 1.5 s n0 and n1 have
	// 6-1.75-10/3 = 0.9167 Mb left (done at 1.8667 s), n2 4.5-10/3 = 1.1667 (0.25 left at
	// 1.8667 s); then L2 gives n2 and n3 3 each: n2 is done at 1.8667+0.25/3 = 1.95 s, n3 has
	// 0.9167+0.25 then and takes the rest alone at 6 Mb/s: done at 1.95+4.8333/6 = 2.7556 s.
	if got := res.NodeResults[2].DoneSeconds; !near(got, 1.95) {
		t.Errorf("n2 done at %v, want 1.95", got)
	}
	if got := res.NodeResults[3].DoneSeconds; !near(got, 1.95+(6-2.5*1.1/3-0.25)/6) {
		t.Errorf("n3 done at %v", got)
	}
	if res.Failure.Servers[0].MidBoot != 1 || res.Failure.Servers[0].NewOwners[0] != (OwnerShare{"s0", 1}) {
		t.Errorf("%+v", res.Failure)
	}
}

// TestFailureSplitsClass: under ncda the four nodes of board 0 are on bs0..bs3, each server's NIC
// is private to its node, and n0 (bs0) and n1 (bs1) share every shared channel: one class of two
// servers. bs0 fails half-way: n0 leaves the class, n1 stays in it. The board's N2 (100 Mb/s)
// gives 25 each, 40 of 80 Mb by 1.6 s; then 100/3 for the other three: 1.2 s more. n0 restarts
// alone at 1.6+3.
func TestFailureSplitsClass(t *testing.T) {
	g, _, cfg := miniFail(t)
	al, _ := mapping.ParseAlgo("ncda", g.Hierarchy())
	a, err := mapping.Assign(g, al, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	batch := firstNodes(4)
	res, err := simulateFailures(context.Background(), g, nil, a, batch, cfg,
		FailurePlan{Failures: []ServerFailure{{0, 1.6}}, DetectSeconds: 3}, certify)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{5.4, 2.8, 2.8, 2.8} {
		if nr := res.NodeResults[i]; !near(nr.DoneSeconds, want) || res.Failure.Nodes[i].Restarted != (i == 0) {
			t.Errorf("%+v, want done at %v", nr, want)
		}
	}
	if nr := res.NodeResults[0]; nr.Bottleneck != "N2" || !near(nr.BoundSeconds, 1.6) {
		t.Errorf("n0 bound %v s by %s, want 1.6 by N2 (then 0.8 s alone by a 100 Mb/s link)", nr.BoundSeconds, nr.Bottleneck)
	}
}

// TestFailureAfterEnd: a failure after the batch finished changes nothing: the JSON is the
// baseline's apart from the summary, which says so.
func TestFailureAfterEnd(t *testing.T) {
	g, a, _ := miniFail(t)
	batch := firstNodes(12)
	cfg := DefaultFlowConfig(TFTP)
	cfg.Arrivals, _ = RampArrivals(len(batch), 4)
	cfg.TimeStep = 0.01
	base, err := Simulate(context.Background(), g, nil, a, batch, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := SimulateFailures(context.Background(), g, nil, a, batch, cfg,
		FailurePlan{Failures: []ServerFailure{{0, base.BatchSeconds + 1}}, DetectSeconds: 3})
	if err != nil {
		t.Fatal(err)
	}
	f := res.Failure
	if f.Effect || f.TakenOver != 0 || f.BatchSeconds != base.BatchSeconds || f.ExtraSeconds != 0 ||
		!strings.Contains(f.Servers[0].Note, "after the batch") || f.Servers[0].Done == 0 {
		t.Fatalf("summary %+v", f)
	}
	res.Failure = nil
	x, _ := json.Marshal(base)
	y, _ := json.Marshal(res)
	if !bytes.Equal(x, y) {
		t.Fatal("a failure after the end changed the result")
	}
}

// TestFailureJSON: node_results carry each node's takeover, and read back.
func TestFailureJSON(t *testing.T) {
	g, a, cfg := miniFail(t)
	batch := miniNodes(t, g, "s0-b0-n0", "s0-b3-n0")
	res, err := SimulateFailures(context.Background(), g, nil, a, batch, cfg, FailurePlan{Failures: []ServerFailure{{3, 0.4}}, DetectSeconds: 3})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	own := ownerAfter(t, g, a, batch[1], 3)
	// The restarted node was bound by its N1 link 0.4 s, then 0.8 s.
	want := `"name":"s0-b3-n0","server":"` + own + `","arrival_seconds":0,"done_seconds":4.2,"bottleneck":"N1","bound_seconds":1.2000000000000002,"restarted":true,"servers":["bs3","` + own + `"]}`
	if !strings.Contains(string(b), want) || !strings.Contains(string(b), `"bound_seconds":0.8,"restarted":false}`) {
		t.Fatalf("%s\nwant %s", b, want)
	}
	var back FlowResult
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Failure.Nodes[1].Restarted || back.NodeResults[1].Server != own || back.Failure.Servers[0].MidBoot != 1 {
		t.Fatalf("%+v", back)
	}
	again, _ := json.Marshal(back)
	if !bytes.Equal(b, again) {
		t.Fatal("JSON does not round-trip")
	}
}

// TestFailureRandom: random failures on the mini machine under every mapping, with ramps: every
// node finishes, only failed servers' nodes move, restarted nodes finish after their restart,
// every allocation is max-min, and two runs give the same JSON.
func TestFailureRandom(t *testing.T) {
	m, _ := topology.Preset("mini")
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 12))
	for it := 0; it < 40; it++ {
		al, _ := mapping.ParseAlgo([]string{"scda", "bcda", "ncda", "balanced"}[it%4], g.Hierarchy())
		batch := rng.Perm(32)[:1+rng.IntN(32)]
		a, err := mapping.Assign(g, al, batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultFlowConfig(Protocol(rng.IntN(3)))
		if rng.IntN(2) == 0 {
			cfg.Arrivals, _ = RampArrivals(len(batch), 1+rng.Float64()*10)
		}
		if rng.IntN(3) == 0 {
			cfg.ServerCapMbps = 50
		}
		if rng.IntN(3) == 0 {
			cfg.TimeStep = 0.01
		}
		var fp FailurePlan
		fp.DetectSeconds = rng.Float64() * 4
		for _, s := range rng.Perm(4)[:1+rng.IntN(3)] {
			fp.Failures = append(fp.Failures, ServerFailure{s, rng.Float64() * 12})
		}
		res, err := simulateFailures(context.Background(), g, nil, a, batch, cfg, fp, certify)
		if err != nil {
			t.Fatalf("%d: %v", it, err)
		}
		again, _ := SimulateFailures(context.Background(), g, nil, a, batch, cfg, fp)
		x, _ := json.Marshal(res)
		y, _ := json.Marshal(again)
		if !bytes.Equal(x, y) {
			t.Fatalf("%d: two runs differ", it)
		}
		failAt := map[string]float64{}
		for _, f := range fp.Failures {
			failAt[g.VertexName(g.Servers()[f.Server])] = f.Seconds
		}
		for i, nr := range res.NodeResults {
			own := g.VertexName(g.Servers()[a.Server[batch[i]]])
			if _, ok := failAt[own]; !ok && nr.Server != own {
				t.Fatalf("%d: %s moved from live %s to %s", it, nr.Name, own, nr.Server)
			}
			if _, dead := failAt[nr.Server]; dead && nr.DoneSeconds > failAt[nr.Server]+cfg.HealthSeconds+1e-9 {
				t.Fatalf("%d: %s finished on %s at %v after it failed", it, nr.Name, nr.Server, nr.DoneSeconds)
			}
			if res.Failure.Effect && res.Failure.Nodes[i].Restarted && nr.DoneSeconds < fp.DetectSeconds+cfg.DHCPSeconds {
				t.Fatalf("%d: %s restarted but done at %v", it, nr.Name, nr.DoneSeconds)
			}
		}
	}
}

func TestFailureBadPlan(t *testing.T) {
	g, a, cfg := miniFail(t)
	tests := []struct {
		name string
		fp   FailurePlan
		want string
	}{
		{"server out of range", FailurePlan{Failures: []ServerFailure{{4, 1}}}, "out of range"},
		{"negative time", FailurePlan{Failures: []ServerFailure{{1, -1}}}, "non-negative"},
		{"negative detection", FailurePlan{Failures: []ServerFailure{{1, 1}}, DetectSeconds: -1}, "detection"},
		{"twice", FailurePlan{Failures: []ServerFailure{{1, 1}, {1, 2}}}, "twice"},
		{"absent", FailurePlan{Failures: []ServerFailure{{1, 1}}, Absent: []bool{false, true}}, "down from the start"},
		{"all", FailurePlan{Failures: []ServerFailure{{0, 1}, {1, 1}, {2, 1}}, Absent: []bool{false, false, false, true}}, "no boot server is left"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SimulateFailures(context.Background(), g, nil, a, firstNodes(4), cfg, tc.fp)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
