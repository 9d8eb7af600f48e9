package fabricsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// star is a switch with one server (NIC serverMbps) and n nodes (NIC nodeMbps), 1 us per link.
func star(t testing.TB, n int, serverMbps, nodeMbps float64) (*topology.Graph, *mapping.Assignment) {
	t.Helper()
	var b topology.Builder
	b.Name = "star"
	sw := b.AddVertex(topology.Switch, 0, "sw")
	srv := b.AddVertex(topology.Server, -1, "srv")
	b.AddLink(srv, sw, serverMbps, 1, "nic")
	for i := 0; i < n; i++ {
		v := b.AddVertex(topology.Node, -1, fmt.Sprintf("n%d", i))
		b.AddLink(v, sw, nodeMbps, 1, "node")
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g, &mapping.Assignment{Server: make([]int32, n), NumServers: 1}
}

// series is the classic two-bottleneck fabric: core K, switch A below it through L1 (10 Mb/s),
// switch B below A through L2 (6 Mb/s). Server s0 hangs off K, s1 off A; n0, n1 off A; n2, n3 off
// B. n0, n1, n2 boot from s0, n3 from s1: L1 carries n0, n1, n2 and L2 carries n2, n3.
func series(t testing.TB) (*topology.Graph, *mapping.Assignment) {
	t.Helper()
	var b topology.Builder
	b.Name = "series"
	k := b.AddVertex(topology.Switch, 2, "K")
	a := b.AddVertex(topology.Switch, 1, "A")
	bb := b.AddVertex(topology.Switch, 0, "B")
	b.AddLink(a, k, 10, 1, "L1")
	b.AddLink(bb, a, 6, 1, "L2")
	s0 := b.AddVertex(topology.Server, -1, "s0")
	s1 := b.AddVertex(topology.Server, -1, "s1")
	b.AddLink(s0, k, 1000, 1, "nic")
	b.AddLink(s1, a, 1000, 1, "nic")
	for i, parent := range []topology.VertexID{a, a, bb, bb} {
		v := b.AddVertex(topology.Node, -1, fmt.Sprintf("n%d", i))
		b.AddLink(v, parent, 1000, 1, "node")
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g, &mapping.Assignment{Server: []int32{0, 0, 0, 1}, NumServers: 2}
}

func all(n int) []int { return firstNodes(n) }

// plain is a configuration without protocol caps or fixed times: one file of mb megabits.
func plain(mb float64) FlowConfig {
	return FlowConfig{Files: []File{{Name: "image", Bytes: mb * 1e6 / 8, Protocol: Uncapped}}}
}

// run simulates and checks every allocation against the max-min certificate.
func run(t testing.TB, g *topology.Graph, a *mapping.Assignment, batch []int, cfg FlowConfig) *FlowResult {
	t.Helper()
	res, err := simulate(context.Background(), g, nil, a, batch, cfg, certify)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func doneTimes(res *FlowResult) []float64 {
	out := make([]float64, len(res.NodeResults))
	for i, n := range res.NodeResults {
		out[i] = n.DoneSeconds
	}
	return out
}

func TestFlowGolden(t *testing.T) {
	approx := cmpopts.EquateApprox(1e-9, 1e-9)
	type tc struct {
		name string
		g    *topology.Graph
		a    *mapping.Assignment
		cfg  FlowConfig
		want []float64 // done time of each node
		neck []string  // bottleneck of each node
	}
	var tests []tc
	// n identical flows through one bottleneck C take n*S/C: 8 flows of 20 Mb through 100 Mb/s.
	g, a := star(t, 8, 100, 1000)
	tests = append(tests, tc{"one bottleneck", g, a, plain(20), rep(8, 8*20/100.0), reps(8, "nic")})
	// The node NICs bound instead when they are slower than the share: 2 flows, 100 vs 30 Mb/s.
	g, a = star(t, 2, 100, 30)
	tests = append(tests, tc{"private NIC", g, a, plain(60), rep(2, 2), reps(2, "node")})
	// Two bottlenecks in series: L2 (6) holds n2, n3 at 3; L1 (10) leaves 3.5 each to n0, n1.
	g, a = series(t)
	tests = append(tests, tc{"two bottlenecks", g, a, plain(21), []float64{6, 6, 7, 7}, []string{"L1", "L1", "L2", "L2"}})
	// Different sizes: n0 starts at 0, n1 at 1 s, 20 Mb each through 10 Mb/s. At 1 s n0 has 10 Mb
	// left and n1 20 Mb; sharing at 5 each, n0 ends at 3 s; n1 then speeds up to 10 and ends at 4 s.
	g, a = star(t, 2, 10, 1000)
	cfg := plain(20)
	cfg.Arrivals = []float64{0, 1}
	tests = append(tests, tc{"short finishes, rest speeds up", g, a, cfg, []float64{3, 4}, reps(2, "nic")})
	// Several files and fixed times: DHCP 1 s, files of 10 and 30 Mb, health 0.5 s; 2 nodes on
	// 20 Mb/s: 1 + 20/20 + 60/20 + 0.5 = 5.5 s.
	g, a = star(t, 2, 20, 1000)
	cfg = FlowConfig{Files: []File{{"a", 10e6 / 8, Uncapped}, {"empty", 0, Uncapped}, {"b", 30e6 / 8, Uncapped}}, DHCPSeconds: 1, HealthSeconds: 0.5}
	tests = append(tests, tc{"files and fixed times", g, a, cfg, rep(2, 5.5), reps(2, "nic")})
	// TFTP cap: 1000-byte blocks, window 1, RTT 1 ms: 8 Mb/s. 5 nodes on 100 Mb/s are capped (40 Mb
	// take 5 s); 20 nodes share 5 Mb/s each (40 Mb take 8 s).
	tftp := func(n int) FlowConfig {
		return FlowConfig{Files: []File{{"k", 40e6 / 8, TFTP}}, TFTPBlockSize: 1000, TFTPWindowSize: 1, RTTSeconds: 1e-3}
	}
	g, a = star(t, 5, 100, 1000)
	tests = append(tests, tc{"tftp cap binds", g, a, tftp(5), rep(5, 5), reps(5, "tftp")})
	g, a = star(t, 20, 100, 1000)
	tests = append(tests, tc{"tftp cap loose", g, a, tftp(20), rep(20, 8), reps(20, "nic")})
	// TFTP window 4 quadruples the cap: 32 Mb/s, 40 Mb in 1.25 s for one node.
	g, a = star(t, 1, 100, 1000)
	cfg = tftp(1)
	cfg.TFTPWindowSize = 4
	tests = append(tests, tc{"tftp window", g, a, cfg, []float64{1.25}, []string{"tftp"}})
	// RTT from the route: 2 links of 1 us each way plus 96 us server time = 100 us; 1000-byte blocks:
	// 80 Mb/s.
	cfg = FlowConfig{Files: []File{{"k", 40e6 / 8, TFTP}}, TFTPBlockSize: 1000, TFTPWindowSize: 1, ServerSeconds: 96e-6}
	tests = append(tests, tc{"rtt from route", g, a, cfg, []float64{0.5}, []string{"tftp"}})
	// HTTP cap: 12500-byte window, RTT 1 ms: 100 Mb/s, so 4 nodes on 1000 Mb/s take 40/100 s.
	g, a = star(t, 4, 1000, 1000)
	cfg = FlowConfig{Files: []File{{"k", 40e6 / 8, HTTP}}, HTTPWindowBytes: 12500, RTTSeconds: 1e-3}
	tests = append(tests, tc{"http cap", g, a, cfg, rep(4, 0.4), reps(4, "http")})
	// Per-server cap: 4 nodes behind a 1000 Mb/s NIC but a 40 Mb/s disk: 10 each.
	cfg = plain(40)
	cfg.ServerCapMbps = 40
	tests = append(tests, tc{"server cap", g, a, cfg, rep(4, 4), reps(4, "server")})
	// A capped flow frees capacity for the others: 3 nodes on 30 Mb/s, n0 on TFTP... all nodes use
	// the same files, so the capped one is a slow NIC instead: n0 at 4, n1 and n2 at 13.
	{
		var b topology.Builder
		sw := b.AddVertex(topology.Switch, 0, "sw")
		srv := b.AddVertex(topology.Server, -1, "srv")
		b.AddLink(srv, sw, 30, 1, "nic")
		for i, c := range []float64{4, 1000, 1000} {
			v := b.AddVertex(topology.Node, -1, fmt.Sprintf("n%d", i))
			b.AddLink(v, sw, c, 1, "node")
		}
		g, _ := b.Build()
		// n1, n2 finish 52 Mb at 13 Mb/s at 4 s; n0 has 36 Mb left at 4 Mb/s, ends at 13 s.
		tests = append(tests, tc{"cap frees capacity", g, &mapping.Assignment{Server: []int32{0, 0, 0}, NumServers: 1}, plain(52),
			[]float64{13, 4, 4}, []string{"node", "nic", "nic"}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, tc.g, tc.a, all(len(tc.g.Nodes())), tc.cfg)
			if diff := cmp.Diff(tc.want, doneTimes(res), approx); diff != "" {
				t.Errorf("done times (-want +got):\n%s", diff)
			}
			var neck []string
			for _, n := range res.NodeResults {
				neck = append(neck, n.Bottleneck)
			}
			if diff := cmp.Diff(tc.neck, neck); diff != "" {
				t.Errorf("bottlenecks (-want +got):\n%s", diff)
			}
			if math.Abs(res.BatchSeconds-slicesMax(tc.want)) > 1e-9 {
				t.Errorf("batch seconds %v, want %v", res.BatchSeconds, slicesMax(tc.want))
			}
		})
	}
}

func rep(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func reps(n int, v string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func slicesMax(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// TestFlowOutputs checks the utilisation series, bytes per link and the distribution on the
// two-bottleneck fabric.
func TestFlowOutputs(t *testing.T) {
	g, a := series(t)
	res := run(t, g, a, all(4), plain(21))
	seg := map[string]SegmentUsage{}
	for _, s := range res.Segments {
		seg[s.Name] = s
	}
	// 21 Mb = 2.625 MB per node; L1 carries 3 nodes, L2 two.
	if got := seg["L1"].Bytes; got != 3*2.625e6 {
		t.Errorf("L1 bytes = %v", got)
	}
	if got := seg["L2"].Bytes; got != 2*2.625e6 {
		t.Errorf("L2 bytes = %v", got)
	}
	if got := seg["L1"].PeakUtilisation; math.Abs(got-1) > 1e-12 {
		t.Errorf("L1 peak utilisation = %v, want 1", got)
	}
	u := res.Utilisation
	if diff := cmp.Diff([]float64{0, 6, 7}, u.TimeSeconds, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("series times (-want +got):\n%s", diff)
	}
	for _, s := range u.Segments {
		if s.Name == "L1" {
			// 0-6 s: 3.5+3.5+3 = 10; 6-7 s: n2 alone at 3; then idle.
			if diff := cmp.Diff([]float64{10, 3, 0}, s.Mbps, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("L1 series (-want +got):\n%s", diff)
			}
		}
	}
	if res.TopLinks[0].Segment != "L1" || res.TopLinks[0].From != "K" || res.TopLinks[0].To != "A" {
		t.Errorf("top link = %+v, want K->A on L1", res.TopLinks[0])
	}
	want := Distribution{Min: 6, P50: 6, P90: 7, P99: 7, Max: 7, Mean: 6.5}
	if diff := cmp.Diff(want, res.Completion, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("distribution (-want +got):\n%s", diff)
	}
}

func TestBinSeries(t *testing.T) {
	tm, v := binSeries([]float64{0, 1, 3, 4}, [][]float64{{10, 20, 0}}, 2)
	if diff := cmp.Diff([]float64{0, 2, 4}, tm); diff != "" {
		t.Error(diff)
	}
	// Bin 0: 1 s at 10 and 1 s at 20; bin 1: 1 s at 20, 1 s at 0.
	if diff := cmp.Diff([]float64{15, 10, 0}, v[0]); diff != "" {
		t.Error(diff)
	}
}

func sunwayAssign(t testing.TB, g *topology.Graph, algo string, batch []int) *mapping.Assignment {
	t.Helper()
	al, err := mapping.ParseAlgo(algo, g.Hierarchy())
	if err != nil {
		t.Fatal(err)
	}
	a, err := mapping.Assign(g, al, batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestFlowNeverSlowerThanAnalytic: on the paper's machine, everything starting together and no
// caps, the flow model's batch time is never longer than the analytic model's. In fact it is the
// same: on the channel where capacity/sharers is smallest (B), every sharer gets at least B from
// max-min (its own route's minimum) and together they cannot get more than the capacity, so all
// of them run at exactly B until they finish together at S/B. Everyone else finishes earlier.
func TestFlowNeverSlowerThanAnalytic(t *testing.T) {
	g, an := sunway(t)
	for _, algo := range []string{"scda", "bcda", "ncda", "balanced"} {
		for _, boards := range []int{1, 20, 21, 32, 40, 161, 160, 320, 7 * 128, 40 * 128} {
			if testing.Short() && boards > 320 {
				continue
			}
			batch := firstNodes(boards * 8)
			a := sunwayAssign(t, g, algo, batch)
			ana, err := an.Analyze(a, batch, 50e6)
			if err != nil {
				t.Fatal(err)
			}
			res, err := simulate(context.Background(), g, nil, a, batch,
				FlowConfig{Files: []File{{"image", 50e6, Uncapped}}}, certify)
			if err != nil {
				t.Fatal(err)
			}
			if res.BatchSeconds > ana.BootSeconds*(1+1e-9) {
				t.Errorf("%s %d boards: flow %v s > analytic %v s", algo, boards, res.BatchSeconds, ana.BootSeconds)
			}
			if math.Abs(res.BatchSeconds-ana.BootSeconds) > 1e-9*ana.BootSeconds {
				t.Errorf("%s %d boards: flow %v s, analytic %v s: expected equal", algo, boards, res.BatchSeconds, ana.BootSeconds)
			}
			fb, err := FlowBatchSeconds(g, nil, a, batch, 50e6)
			if err != nil || fb != res.BatchSeconds {
				t.Errorf("FlowBatchSeconds = %v, %v; want %v", fb, err, res.BatchSeconds)
			}
		}
	}
}

// TestFlowExample is docs/plan.md's worked example: bcda, 161 boards (5 full supernodes plus board
// 160, which shares server 0 with board 0).
func TestFlowExample(t *testing.T) {
	g, an := sunway(t)
	batch := firstNodes(161 * 8)
	a := sunwayAssign(t, g, "bcda", batch)
	ana, _ := an.Analyze(a, batch, 50e6)
	res := run(t, g, a, batch, FlowConfig{Files: []File{{"image", 50e6, Uncapped}}})
	// Server 0's NIC has 16 sharers: 62.5 Mb/s, 6.4 s, for boards 0 and 160, as the analytic model
	// says for everyone. The other 240 nodes of each full supernode share N3's 20000 Mb/s minus the
	// 8 x 62.5 of board 0 (supernode 0) or none (supernodes 1-4): 78.6 or 78.125 Mb/s.
	if math.Abs(ana.BootSeconds-6.4) > 1e-9 || math.Abs(res.BatchSeconds-6.4) > 1e-9 {
		t.Errorf("analytic %v, flow %v, want 6.4 both", ana.BootSeconds, res.BatchSeconds)
	}
	slow := 0
	for _, n := range res.NodeResults {
		if n.DoneSeconds > 6.4-1e-9 {
			slow++
		}
	}
	if slow != 16 {
		t.Errorf("%d nodes take 6.4 s, want 16", slow)
	}
	if want := 400 / 78.125; math.Abs(res.Completion.P50-want) > 1e-9 {
		t.Errorf("p50 = %v, want %v", res.Completion.P50, want)
	}
	t.Logf("analytic %.3f s; flow min %.4f p50 %.4f p90 %.4f max %.4f; bottlenecks %+v",
		ana.BootSeconds, res.Completion.Min, res.Completion.P50, res.Completion.P90, res.Completion.Max, res.Bottlenecks)
}

// TestFlowDeterministic: the same inputs give byte-identical JSON, for a power-on ramp (one event
// per node) and for the whole machine at once.
func TestFlowDeterministic(t *testing.T) {
	g, _ := sunway(t)
	for _, tc := range []struct {
		nodes int
		ramp  float64
	}{{2048, 1000}, {len(g.Nodes()), 0}} {
		batch := firstNodes(tc.nodes)
		a := sunwayAssign(t, g, "scda", batch)
		cfg := DefaultFlowConfig(TFTP)
		if tc.ramp > 0 {
			arr, err := RampArrivals(len(batch), tc.ramp)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Arrivals = arr
		}
		var out [2][]byte
		for i := range out {
			res, err := Simulate(context.Background(), g, nil, a, batch, cfg)
			if err != nil {
				t.Fatal(err)
			}
			out[i], _ = json.Marshal(res)
		}
		if !bytes.Equal(out[0], out[1]) {
			t.Fatalf("%d nodes: two runs gave different JSON", tc.nodes)
		}
	}
}

// TestFlowDefaultsSunway runs the default boot on the whole machine with the certificate on.
func TestFlowDefaultsSunway(t *testing.T) {
	g, _ := sunway(t)
	batch := firstNodes(len(g.Nodes()))
	for _, algo := range []string{"scda", "bcda"} {
		a := sunwayAssign(t, g, algo, batch)
		for _, proto := range []Protocol{TFTP, HTTP} {
			cfg := DefaultFlowConfig(proto)
			res := run(t, g, a, batch, cfg)
			// Whole machine: every server NIC carries 256 nodes: 3.906 Mb/s each, 50.07 MB.
			want := cfg.DHCPSeconds + cfg.HealthSeconds + 50.07e6*8/(1000.0/256*1e6)
			if math.Abs(res.BatchSeconds-want) > 1e-6*want {
				t.Errorf("%s/%s: batch %v s, want %v", algo, proto, res.BatchSeconds, want)
			}
			if res.Stats.Classes > 3*len(g.Nodes())/8 {
				t.Errorf("%s/%s: %d classes, want at most one per board and file", algo, proto, res.Stats.Classes)
			}
		}
	}
	// One node alone is held by TFTP lock-step: 1432 bytes per (2 x 5 x 10 us + 100 us).
	a := sunwayAssign(t, g, "bcda", batch)
	res := run(t, g, a, []int{0}, DefaultFlowConfig(TFTP))
	capMbps := 1432 * 8 / 200e-6 / 1e6
	if want := 1 + 0.1 + 50.07e6*8/(capMbps*1e6); math.Abs(res.BatchSeconds-want) > 1e-9 {
		t.Errorf("one node: %v s, want %v", res.BatchSeconds, want)
	}
	if res.NodeResults[0].Bottleneck != "tftp" {
		t.Errorf("one node bottleneck %q, want tftp", res.NodeResults[0].Bottleneck)
	}
}

func TestFlowBadInput(t *testing.T) {
	g, a := star(t, 3, 100, 100)
	ok := plain(10)
	tests := []struct {
		name  string
		batch []int
		cfg   func(c *FlowConfig)
		a     *mapping.Assignment
		want  string
	}{
		{"negative size", all(3), func(c *FlowConfig) { c.Files[0].Bytes = -1 }, nil, "size must be"},
		{"NaN size", all(3), func(c *FlowConfig) { c.Files[0].Bytes = math.NaN() }, nil, "size must be"},
		{"empty name", all(3), func(c *FlowConfig) { c.Files[0].Name = "" }, nil, "name is empty"},
		{"duplicate file", all(3), func(c *FlowConfig) { c.Files = append(c.Files, c.Files[0]) }, nil, "named twice"},
		{"unknown protocol", all(3), func(c *FlowConfig) { c.Files[0].Protocol = 9 }, nil, "unknown protocol"},
		{"blksize", all(3), func(c *FlowConfig) { c.Files[0].Protocol = TFTP; c.TFTPWindowSize = 1 }, nil, "block size"},
		{"windowsize", all(3), func(c *FlowConfig) { c.Files[0].Protocol = TFTP; c.TFTPBlockSize = 512 }, nil, "window size"},
		{"http window", all(3), func(c *FlowConfig) { c.Files[0].Protocol = HTTP }, nil, "HTTP window"},
		{"negative dhcp", all(3), func(c *FlowConfig) { c.DHCPSeconds = -1 }, nil, "DHCP time"},
		{"negative server cap", all(3), func(c *FlowConfig) { c.ServerCapMbps = -5 }, nil, "server cap"},
		{"arrivals length", all(3), func(c *FlowConfig) { c.Arrivals = []float64{0} }, nil, "1 times for 3 nodes"},
		{"negative arrival", all(3), func(c *FlowConfig) { c.Arrivals = []float64{0, -1, 0} }, nil, "non-negative"},
		{"duplicate node", []int{0, 0}, func(*FlowConfig) {}, nil, "twice"},
		{"node out of range", []int{7}, func(*FlowConfig) {}, nil, "out of range"},
		{"no server", all(3), func(*FlowConfig) {}, &mapping.Assignment{Server: []int32{0, -1, 0}, NumServers: 1}, "no boot server"},
		{"short assignment", all(3), func(*FlowConfig) {}, &mapping.Assignment{Server: []int32{0}, NumServers: 1}, "assignment has 1 nodes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			cfg.Files = append([]File(nil), ok.Files...)
			tc.cfg(&cfg)
			aa := a
			if tc.a != nil {
				aa = tc.a
			}
			_, err := Simulate(context.Background(), g, nil, aa, tc.batch, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, err := ParseProtocol("ftp"); err == nil || !strings.Contains(err.Error(), "unknown protocol") {
		t.Errorf("ParseProtocol(ftp) = %v", err)
	}
	if _, err := RampArrivals(3, 0); err == nil {
		t.Error("ramp of 0 nodes/s accepted")
	}
}

func TestFlowCancel(t *testing.T) {
	g, a := star(t, 2, 10, 100)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Simulate(ctx, g, nil, a, all(2), plain(10)); err == nil {
		t.Fatal("cancelled simulation succeeded")
	}
}

// TestFlowTimeStep: with a time step, events move up to the step grid. n1's arrival at 1.1 s is
// seen at 1.5 s, so n0 has 5 Mb left and ends at 2.5 s (exact: 2.9 s); n1 then has 15 Mb left
// alone at 10 Mb/s and ends at 4 s either way.
func TestFlowTimeStep(t *testing.T) {
	g, a := star(t, 2, 10, 1000)
	cfg := plain(20)
	cfg.Arrivals = []float64{0, 1.1}
	exact := run(t, g, a, all(2), cfg)
	cfg.TimeStep = 0.5
	stepped := run(t, g, a, all(2), cfg)
	approx := cmpopts.EquateApprox(0, 1e-9)
	if diff := cmp.Diff([]float64{2.9, 4}, doneTimes(exact), approx); diff != "" {
		t.Errorf("exact (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{2.5, 4}, doneTimes(stepped), approx); diff != "" {
		t.Errorf("stepped (-want +got):\n%s", diff)
	}
}

// TestFlowTimeStepNoise: the hand case of issue 14 on a star (server 20 Mb/s, 4 Mb files): n0, n1
// power on at 0 and share 20 Mb/s, so each has 2 Mb at 0.2 s when n2, n3 arrive; the four then get
// 5 Mb/s, n0 and n1 finish at 0.2 + 2/5 = 0.6 s, and n2, n3 (2 Mb left at 0.6 s, 10 Mb/s) at
// 0.8 s. Every event is on the 0.01, 0.05, 0.1 and 0.2 s grids, so they must not move it, though
// the simulator computes the first as 0.6000000000000001 (it ended at 0.61 and 0.81 s on the 0.01
// grid, 0.7 and 0.9 s on the 0.1 grid); on a 0.25 s grid the arrivals are seen at 0.25 s.
func TestFlowTimeStepNoise(t *testing.T) {
	g, a := star(t, 4, 20, 1000)
	tests := []struct {
		step float64
		want []float64
	}{
		{0, []float64{0.6, 0.6, 0.8, 0.8}},
		{0.01, []float64{0.6, 0.6, 0.8, 0.8}},
		{0.05, []float64{0.6, 0.6, 0.8, 0.8}},
		{0.2, []float64{0.6, 0.6, 0.8, 0.8}},
		{0.1, []float64{0.6, 0.6, 0.8, 0.8}},
		{0.25, []float64{0.75, 0.75, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.step), func(t *testing.T) {
			cfg := plain(4)
			cfg.Arrivals = []float64{0, 0, 0.2, 0.2}
			cfg.TimeStep = tc.step
			got := doneTimes(run(t, g, a, all(4), cfg))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("done times (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGridUp: on-grid times up to floating-point noise stay where they are; others go up to the
// next grid point; nothing moves earlier.
func TestGridUp(t *testing.T) {
	tests := []struct{ t, q, want float64 }{
		{0.2 + 0.4, 0.01, 0.2 + 0.4}, // 0.6000000000000001: on the grid, not 0.61
		{0.6, 0.01, 0.6},
		{0.3, 0.1, 0.3},          // 0.3/0.1 = 2.9999999999999996: not 0.3 ceil'd to 0.30000000000000004 by luck
		{0.61000001, 0.01, 0.62}, // 1e-8 s past: a real event inside the step
		{1.1, 0.5, 1.5},
		{0, 0.5, 0},
		{1e6 + 1e-4, 1, 1e6 + 1e-4}, // within 1e-9 relative of 1e6 s
		{1e6 + 1e-2, 1, 1e6 + 1},
	}
	for _, tc := range tests {
		got := gridUp(tc.t, tc.q)
		if math.Abs(got-tc.want) > 1e-12*max(1, tc.want) || got < tc.t {
			t.Errorf("gridUp(%v, %v) = %v, want %v", tc.t, tc.q, got, tc.want)
		}
	}
}

// TestFlowCertificateScenarios runs mixed scenarios (ramps, random arrivals, server caps, HTTP and
// TFTP caps, every mapping) with every allocation checked against the max-min certificate.
func TestFlowCertificateScenarios(t *testing.T) {
	g, _ := sunway(t)
	batch := firstNodes(3 * 256)
	for _, algo := range []string{"scda", "bcda", "ncda", "balanced"} {
		a := sunwayAssign(t, g, algo, batch)
		for i, mod := range []func(*FlowConfig){
			func(c *FlowConfig) { c.Arrivals, _ = RampArrivals(len(batch), 300) },
			func(c *FlowConfig) {
				c.Arrivals = make([]float64, len(batch))
				for j := range c.Arrivals {
					c.Arrivals[j] = float64((j*7919)%101) / 10
				}
				c.ServerCapMbps = 300
			},
			func(c *FlowConfig) { c.Files = DefaultFiles(HTTP); c.HTTPWindowBytes = 2000; c.TimeStep = 0.05 },
		} {
			cfg := DefaultFlowConfig(TFTP)
			mod(&cfg)
			res := run(t, g, a, batch, cfg)
			if res.Stats.Allocations < 3 {
				t.Errorf("%s scenario %d: only %d allocations", algo, i, res.Stats.Allocations)
			}
		}
	}
}
