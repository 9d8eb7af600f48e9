package fabricsim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// p2pMachine is boards boards of k nodes behind one switch, one boot server on the core:
// node links c1, board uplinks c2, the server's NIC c5 (Mb/s).
func p2pMachine(t testing.TB, boards, k int, c1, c2, c5 float64) *topology.Graph {
	t.Helper()
	y := fmt.Sprintf(`name: p2p
levels:
  - {name: board, prefix: b, count: %d, uplink: {segment: N2, capacity_mbps: %v, latency_us: 10}}
  - {name: node, prefix: n, count: %d, uplink: {segment: N1, capacity_mbps: %v, latency_us: 10}}
servers:
  count: 1
  per_cascade: 0
  nic: {segment: N5, capacity_mbps: %v, latency_us: 10}
`, boards, c2, k, c1, c5)
	m, err := topology.Parse([]byte(y), "p2p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAnalyzeP2PBound: on one server and boards of k nodes, the root stage takes the largest of
// the bottleneck terms (the server's NIC and each board uplink carry m copies per board, a node's
// link down the image once and up what it relays), plus the pipeline ((k-1) pieces at the node
// link's rate when there are relays), at the best m; and it is never slower than server delivery,
// whose time is the analytic model's.
func TestAnalyzeP2PBound(t *testing.T) {
	const F, P = 40e6, 256 << 10
	tests := []struct {
		name           string
		boards, k      int
		c1, c2, c5     float64
		wantM          int // 0: the swarm schedule
		wantBottleneck string
	}{
		{"fast links", 1, 8, 1000, 1000, 1000, 1, "N1 down,N2,N5"},
		{"slow server NIC", 1, 16, 1000, 1000, 100, 1, "N5"},
		{"slow node links: the server alone", 1, 8, 100, 1000, 1000, 8, "N1 down"},
		{"slow board uplinks", 4, 8, 1000, 100, 10000, 1, "N2"},
		// One copy for the four boards, exchanged through their uplinks: the swarm schedule.
		{"server NIC shared by boards", 4, 8, 1000, 1000, 1000, 0, "N1 down,N2,N5"},
		{"slow board uplinks, server NIC shared", 4, 8, 1000, 100, 200, 0, "N2"},
		// Server delivery is bound by the node links already: relays would only add the pipeline.
		{"wide server path: the server alone", 1, 8, 1000, 10000, 10000, 8, "N1 down"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := p2pMachine(t, tc.boards, tc.k, tc.c1, tc.c2, tc.c5)
			batch := make([]int, len(g.Nodes()))
			for i := range batch {
				batch[i] = i
			}
			a := &mapping.Assignment{Server: make([]int32, len(batch))}
			res, err := AnalyzeP2P(P2PInput{Graph: g, Assign: a, Batch: batch, RootBytes: F, PieceBytes: P})
			if err != nil {
				t.Fatal(err)
			}
			// The terms by hand, at every m; the best is the model's.
			best, bestM := math.Inf(1), 0
			for m := 1; m <= tc.k; m++ {
				mf, kf, nb := float64(m), float64(tc.k), float64(tc.boards)
				root := max(nb*mf*F*8/(tc.c5*1e6), mf*F*8/(tc.c2*1e6), F*8/(tc.c1*1e6), (kf-mf)/kf*F*8/(tc.c1*1e6))
				if m < tc.k {
					root += (kf - 1) * P * 8 / (tc.c1 * 1e6)
				}
				if root < best {
					best, bestM = root, m
				}
			}
			// The swarm schedule: one copy from the server, striped over all K nodes, each stripe
			// sent once into every other board, then relayed within the board.
			kf, nb := float64(tc.k), float64(tc.boards)
			K := kf * nb
			swarm := max(F*8/(tc.c5*1e6), F*8/(tc.c2*1e6), (nb-1)*F*kf/K*8/(tc.c2*1e6), F*8/(tc.c1*1e6), ((nb-1)/K+(kf-1)/kf)*F*8/(tc.c1*1e6))
			swarm += (nb - 1 + 2*(kf-1)) * P * 8 / (tc.c1 * 1e6)
			if swarm < best {
				best, bestM = swarm, 0
			}
			if math.Abs(res.Seconds-best) > 1e-9*best || res.CopiesPerBoard != bestM || res.CopiesPerBoard != tc.wantM {
				t.Errorf("root stage %.6f s at m=%d, want %.6f s at m=%d (table: m=%d)", res.Seconds, res.CopiesPerBoard, best, bestM, tc.wantM)
			}
			if got := fmt.Sprint(res.Bottlenecks); got != fmt.Sprint(splitComma(tc.wantBottleneck)) {
				t.Errorf("bottlenecks %s, want %s", got, tc.wantBottleneck)
			}
			an, err := NewAnalyzer(g, nil)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := an.Analyze(a, batch, F)
			if err != nil {
				t.Fatal(err)
			}
			if res.Seconds > srv.BootSeconds+res.PipelineSeconds+1e-12 {
				t.Errorf("peer delivery %.6f s, server delivery %.6f s: slower by more than the pipeline %.6f s", res.Seconds, srv.BootSeconds, res.PipelineSeconds)
			}
			if res.CopiesPerBoard == tc.k && math.Abs(res.Seconds-srv.BootSeconds) > 1e-9*srv.BootSeconds {
				t.Errorf("with every copy from the server: %.6f s, server delivery %.6f s", res.Seconds, srv.BootSeconds)
			}
		})
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// TestPlanP2PPaperMachine: the paper's machine under bcda with the paper's 50 MB image. By
// server: 3.91 Mb/s per node, 102.4 s for the whole machine. By peers: the 10 MB kernel at the
// same 3.91 Mb/s (20.48 s), then the root image (the cases below).
func TestPlanP2PPaperMachine(t *testing.T) {
	g, _ := sunway(t)
	h := g.Hierarchy()
	algo, err := mapping.ParseAlgo("bcda", h)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := h.ParseBatches("40cabinets,1board", "board")
	if err != nil {
		t.Fatal(err)
	}
	server, root := P2PSplit(50e6)
	if server != 10e6 || root != 40e6 {
		t.Fatalf("split %v + %v, want 10 MB + 40 MB", server, root)
	}
	in := PlanInput{Graph: g, Algos: []mapping.Algo{algo}, Batches: batches, ImageBytes: 50e6, Delivery: P2PDelivery, ServerBytes: server}
	rows, err := Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	pipe := 7 * float64(DefaultPieceBytes) * 8 / 1e9
	tests := []struct {
		row                 int
		server, p2p, copies float64
		bottlenecks         string
	}{
		// Whole machine: each server sends one copy to its 256 nodes, which exchange it across
		// their 32 boards; each supernode's uplink takes the 32 boards' images (31/32 from
		// other supernodes, 1/32 from the servers) in 20 Gb/s: 0.512 s; the last pieces lag
		// 31 + 2 x 7 pieces.
		{0, 102.4, 20.48 + 0.512 + 45*pipe/7, 160, "[N3]"},
		// One board: 8 nodes at 125 Mb/s by server (N2, N5); the kernel at 125 Mb/s, then one copy
		// through the 1 Gb/s NIC and board uplink: the node links bound too, at the same 0.32 s.
		{1, 3.2, 0.64 + 0.32 + pipe, 1, "[N1 down N2 N5]"},
	}
	for _, tc := range tests {
		r := rows[tc.row]
		p := r.P2P
		if p == nil {
			t.Fatalf("row %d: no p2p", tc.row)
		}
		if math.Abs(r.BootSeconds-tc.server) > 1e-9 || math.Abs(p.BootSeconds-tc.p2p) > 1e-9 || p.Root.ServerCopies != tc.copies {
			t.Errorf("row %d: server %.6f s, p2p %.6f s, %v copies; want %.6f, %.6f, %v", tc.row, r.BootSeconds, p.BootSeconds, p.Root.ServerCopies, tc.server, tc.p2p, tc.copies)
		}
		if got := fmt.Sprint(p.Root.Bottlenecks); got != tc.bottlenecks {
			t.Errorf("row %d: bottlenecks %s, want %s", tc.row, got, tc.bottlenecks)
		}
	}
}

// TestAnalyzeP2PErrors: bad input is one error naming what is wrong.
func TestAnalyzeP2PErrors(t *testing.T) {
	g := p2pMachine(t, 1, 4, 1000, 1000, 1000)
	a := &mapping.Assignment{Server: []int32{0, 0, 0, -1}}
	tests := []struct {
		name string
		in   P2PInput
		want string
	}{
		{"no root image", P2PInput{Graph: g, Assign: a, Batch: []int{0}}, "root image must be a positive number of bytes, got 0"},
		{"NaN piece", P2PInput{Graph: g, Assign: a, Batch: []int{0}, RootBytes: 1, PieceBytes: math.NaN()}, "piece size must be a positive"},
		{"node out of range", P2PInput{Graph: g, Assign: a, Batch: []int{7}, RootBytes: 1}, "node 7 out of range"},
		{"no server", P2PInput{Graph: g, Assign: a, Batch: []int{3}, RootBytes: 1}, "node b0-n3 has no boot server"},
		{"no assignment", P2PInput{Graph: g, Batch: []int{0}, RootBytes: 1}, "no machine or no assignment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := AnalyzeP2P(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := RootFile(DefaultFiles(TFTP)[:1]); err == nil {
		t.Error("RootFile of the NBP alone: no error")
	}
	if i, err := RootFile(DefaultFiles(TFTP)); err != nil || i != 2 {
		t.Errorf("RootFile of the default boot: %d, %v; want 2 (the initrd)", i, err)
	}
}

// TestSimulateP2P: the servers' files by the flow model, then the root stage, with a slow server
// NIC (100 Mb/s). One board of 8: every node finishes at the kernel's end (8 x 10 MB, 6.4 s) plus
// the root stage (one copy through the NIC, 3.2 s, and 7 pieces at 1 Gb/s) plus the health
// report; server delivery takes 8 x 50 MB through the NIC, 32 s. Four boards: the kernels take
// 25.6 s, then one copy for all (the swarm schedule) and 3 + 2 x 7 pieces; by server, 128 s.
func TestSimulateP2P(t *testing.T) {
	piece := float64(DefaultPieceBytes) * 8 / 1e9
	tests := []struct {
		boards           int
		schedule         string
		want, wantServer float64
	}{
		{1, "board", 6.4 + 3.2 + 7*piece + 0.1, 32.1},
		{4, "swarm", 25.6 + 3.2 + 17*piece + 0.1, 128.1},
	}
	for _, tc := range tests {
		t.Run(tc.schedule, func(t *testing.T) {
			g := p2pMachine(t, tc.boards, 8, 1000, 1000, 100)
			batch := make([]int, 8*tc.boards)
			for i := range batch {
				batch[i] = i
			}
			cfg := FlowConfig{Files: []File{{Name: "nbp", Bytes: 0, Protocol: Uncapped}, {Name: "kernel", Bytes: 10e6, Protocol: Uncapped},
				{Name: "root", Bytes: 40e6, Protocol: Uncapped}}, HealthSeconds: 0.1, MaxSamples: 2}
			sim := &BootSim{Graph: g, Algo: mapping.Algo{Name: "scda"}, Batch: batch, Config: cfg}
			a := &mapping.Assignment{Server: make([]int32, len(batch))}
			p, err := sim.SimulateP2P(context.Background(), a, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range p.Result.NodeResults {
				if math.Abs(n.DoneSeconds-tc.want) > 1e-9 {
					t.Errorf("%s done at %.6f s, want %.6f", n.Name, n.DoneSeconds, tc.want)
				}
			}
			if p.RootFile != "root" || p.Root.Schedule != tc.schedule || math.Abs(p.Result.BatchSeconds-tc.want) > 1e-9 {
				t.Errorf("root file %s, schedule %s, batch %.6f s", p.RootFile, p.Root.Schedule, p.Result.BatchSeconds)
			}
			srv, err := sim.Simulate(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(srv.BatchSeconds-tc.wantServer) > 1e-9 || p.Result.BatchSeconds > srv.BatchSeconds+p.Root.PipelineSeconds {
				t.Errorf("server delivery %.6f s (want %v), peer delivery %.6f s", srv.BatchSeconds, tc.wantServer, p.Result.BatchSeconds)
			}
			sim.Failures = []ServerFailure{}
			if _, err := sim.SimulateP2P(context.Background(), a, 0); err == nil {
				t.Error("peer delivery with server failures: no error")
			}
		})
	}
}

// TestP2PNeverSlower: on random machines (boards of up to 10 nodes, capacities from 10 Mb/s to
// 10 Gb/s) peer delivery of a random batch is never slower than server delivery, whose schedule
// is among the board schedule's (m = k), and it is the same bytes every time.
func TestP2PNeverSlower(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 5))
	caps := []float64{10, 100, 1000, 10000}
	for i := 0; i < 40; i++ {
		boards, k := 1+rng.IntN(6), 1+rng.IntN(10)
		g := p2pMachine(t, boards, k, caps[rng.IntN(4)], caps[rng.IntN(4)], caps[rng.IntN(4)])
		var batch []int
		for n := range g.Nodes() {
			if rng.IntN(3) > 0 {
				batch = append(batch, n)
			}
		}
		if len(batch) == 0 {
			continue
		}
		a := &mapping.Assignment{Server: make([]int32, len(g.Nodes()))}
		in := P2PInput{Graph: g, Assign: a, Batch: batch, RootBytes: 40e6}
		res, err := AnalyzeP2P(in)
		if err != nil {
			t.Fatal(err)
		}
		an, err := NewAnalyzer(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := an.Analyze(a, batch, 40e6)
		if err != nil {
			t.Fatal(err)
		}
		if res.Seconds > srv.BootSeconds*(1+1e-12) {
			t.Errorf("case %d (%d boards of %d, %d booting): peer delivery %.6f s, server %.6f s", i, boards, k, len(batch), res.Seconds, srv.BootSeconds)
		}
		again, err := AnalyzeP2P(in)
		if err != nil || fmt.Sprint(*again) != fmt.Sprint(*res) {
			t.Errorf("case %d: a second run differs: %v", i, err)
		}
	}
}
