package fabricsim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// The comparison with SimGrid (Debian's libsimgrid-dev, 3.32): the same machine as a SimGrid
// platform (every link with its capacity and latency, routed as the machine's tree), the same
// boot (every node's files from its server from its power-on plus DHCP, the protocol cap as the
// comm's rate bound) run by testdata/simgrid/boot.cpp, a SimGrid program in C++ (SimGrid's own
// language and its fastest), under SimGrid's max-min model with its TCP corrections off; the
// per-node completion times must agree.

// buildSimGrid compiles testdata/simgrid/boot.cpp into dir and returns the program, or skips (or
// fails under BOOTFABRIC_NO_SKIP) tb without a C++ compiler or SimGrid.
func buildSimGrid(tb testing.TB, dir string) string {
	tb.Helper()
	cxx := testenv.NeedTool(tb, "g++", "g++")
	testenv.NeedFile(tb, "/usr/include/simgrid/s4u.hpp", "libsimgrid-dev")
	bin := filepath.Join(dir, "boot")
	out, err := exec.Command(cxx, "-O2", "-std=c++17", "-o", bin, filepath.Join("testdata", "simgrid", "boot.cpp"), "-lsimgrid").CombinedOutput()
	if err != nil {
		tb.Fatalf("building the SimGrid driver: %v\n%s", err, out)
	}
	return bin
}

// writeSimGridPlatform writes g as a SimGrid platform: hosts for servers and nodes, routers for
// switches, a link per link with its capacity (bytes/s) and latency, and a one-hop route per link;
// SimGrid's Dijkstra routing then finds the machine's tree routes.
func writeSimGridPlatform(w io.Writer, g *topology.Graph) error {
	bw := bufio.NewWriter(w)
	esc := func(s string) string {
		var b strings.Builder
		_ = xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	fmt.Fprintf(bw, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n")
	fmt.Fprintf(bw, "<!-- %s: written by fabricsim's writeSimGridPlatform from the machine's links -->\n", esc(g.Name))
	fmt.Fprintf(bw, "<platform version=\"4.1\">\n<zone id=\"%s\" routing=\"DijkstraCache\">\n", esc(g.Name))
	for v := 0; v < g.NumVertices(); v++ {
		id := topology.VertexID(v)
		if g.Kind(id) == topology.Switch {
			fmt.Fprintf(bw, "  <router id=\"%s\"/>\n", esc(g.VertexName(id)))
		} else {
			fmt.Fprintf(bw, "  <host id=\"%s\" speed=\"1Gf\"/>\n", esc(g.VertexName(id)))
		}
	}
	for l := 0; l < g.NumLinks(); l++ {
		ln := g.Link(topology.LinkID(l))
		fmt.Fprintf(bw, "  <link id=\"l%d\" bandwidth=\"%sBps\" latency=\"%ss\"/>\n", l,
			strconv.FormatFloat(ln.CapacityMbps*1e6/8, 'g', -1, 64), strconv.FormatFloat(ln.LatencyUS*1e-6, 'g', -1, 64))
	}
	for l := 0; l < g.NumLinks(); l++ {
		ln := g.Link(topology.LinkID(l))
		fmt.Fprintf(bw, "  <route src=\"%s\" dst=\"%s\"><link_ctn id=\"l%d\"/></route>\n",
			esc(g.VertexName(ln.A)), esc(g.VertexName(ln.B)), l)
	}
	fmt.Fprintf(bw, "</zone>\n</platform>\n")
	return bw.Flush()
}

// writeSimGridBoot writes the boot of batch under a with cfg for boot.cpp. SimGrid's links are
// shared by both directions and the flow simulator's channels are not, so it checks that no link
// is crossed both ways.
func writeSimGridBoot(w io.Writer, g *topology.Graph, a *mapping.Assignment, batch []int, cfg FlowConfig) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "health %s\nfiles", strconv.FormatFloat(cfg.HealthSeconds, 'g', -1, 64))
	for _, f := range cfg.Files {
		fmt.Fprintf(bw, " %s", strconv.FormatFloat(f.Bytes, 'g', -1, 64))
	}
	fmt.Fprintln(bw)
	dir := make([]uint8, g.NumLinks())
	r := g.TreeRouter()
	var route []topology.Channel
	for i, node := range batch {
		srv := g.Servers()[a.Server[node]]
		var err error
		if route, err = r.Route(route[:0], srv, g.Nodes()[node]); err != nil {
			return err
		}
		lat := 0.0
		for _, c := range route {
			lat += g.Link(c.Link()).LatencyUS
			d := uint8(1) << (c & 1)
			if dir[c.Link()] |= d; dir[c.Link()] == 3 {
				return fmt.Errorf("link %d is crossed both ways: SimGrid would share it between them", c.Link())
			}
		}
		rtt := 2*lat*1e-6 + cfg.ServerSeconds
		if cfg.RTTSeconds > 0 {
			rtt = cfg.RTTSeconds
		}
		start := cfg.DHCPSeconds
		if cfg.Arrivals != nil {
			start += cfg.Arrivals[i]
		}
		fmt.Fprintf(bw, "node %s %s %s", g.VertexName(g.Nodes()[node]), g.VertexName(srv), strconv.FormatFloat(start, 'g', -1, 64))
		for _, f := range cfg.Files {
			capBps := -1.0
			switch f.Protocol {
			case TFTP:
				capBps = float64(cfg.TFTPBlockSize*cfg.TFTPWindowSize) / rtt
			case HTTP:
				capBps = cfg.HTTPWindowBytes / rtt
			}
			fmt.Fprintf(bw, " %s", strconv.FormatFloat(capBps, 'g', -1, 64))
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

// simgridRun is what boot.cpp reported: completion time by node name, and its wall and CPU
// times loading the platform and simulating.
type simgridRun struct {
	done                  map[string]float64
	loadSec, runSec       float64
	loadCPUSec, runCPUSec float64
}

// runSimGrid runs the driver bin on the platform file and the boot of batch, within ctx.
func runSimGrid(ctx context.Context, bin, dir, platform string, g *topology.Graph, a *mapping.Assignment, batch []int, cfg FlowConfig) (*simgridRun, error) {
	var boot bytes.Buffer
	if err := writeSimGridBoot(&boot, g, a, batch, cfg); err != nil {
		return nil, err
	}
	bootFile := filepath.Join(dir, "boot.txt")
	if err := os.WriteFile(bootFile, boot.Bytes(), 0o644); err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, platform, bootFile)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil && cmd.ProcessState != nil {
			// Stopped at the deadline: say how much CPU it had used.
			cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
			return nil, fmt.Errorf("%w after %.0f s of CPU", ctx.Err(), cpu)
		}
		return nil, fmt.Errorf("boot.cpp: %w: %s", err, stderr.String())
	}
	out := &simgridRun{done: map[string]float64{}}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		name, v, ok := strings.Cut(line, " ")
		t, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("boot.cpp: bad line %q", line)
		}
		out.done[name] = t
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if _, err := fmt.Sscanf(line, "load %g run %g cpu %g %g", &out.loadSec, &out.runSec, &out.loadCPUSec, &out.runCPUSec); err == nil {
			break
		}
	}
	return out, nil
}

// compareSimGrid returns the largest relative difference between the nodes' completion times,
// and an error if a node is missing on either side.
func compareSimGrid(res *FlowResult, sg *simgridRun) (float64, error) {
	if len(sg.done) != len(res.NodeResults) {
		return 0, fmt.Errorf("SimGrid finished %d nodes, the flow model %d", len(sg.done), len(res.NodeResults))
	}
	worst := 0.0
	for _, nr := range res.NodeResults {
		t, ok := sg.done[nr.Name]
		if !ok {
			return 0, fmt.Errorf("SimGrid did not finish %s", nr.Name)
		}
		worst = max(worst, math.Abs(nr.DoneSeconds-t)/max(1, t))
	}
	return worst, nil
}

// TestSimGridPlatformMini: testdata/simgrid/mini.xml is the mini machine as writeSimGridPlatform
// writes it (the file the comparison runs on, kept for reading).
func TestSimGridPlatformMini(t *testing.T) {
	m, _ := topology.Preset("mini")
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := writeSimGridPlatform(&got, g); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "simgrid", "mini.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("testdata/simgrid/mini.xml differs from writeSimGridPlatform's output:\n%s", got.String())
	}
}

// TestSimGridMini: on the mini machine, boots with every protocol (TFTP and HTTP caps, none),
// every mapping, together, on ramps and at random times with ties finish at the same times in
// SimGrid and in the flow model (1e-6 relative), node by node.
func TestSimGridMini(t *testing.T) {
	bin := buildSimGrid(t, t.TempDir())
	m, _ := topology.Preset("mini")
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	platform := filepath.Join("testdata", "simgrid", "mini.xml")
	batch := firstNodes(len(g.Nodes()))
	tests := []struct {
		name string
		algo string
		mod  func(*FlowConfig)
	}{
		{"tftp together", "bcda", func(*FlowConfig) {}},
		{"http ramp", "scda", func(c *FlowConfig) { c.Files = DefaultFiles(HTTP); c.Arrivals, _ = RampArrivals(len(batch), 5) }},
		{"none random", "ncda", func(c *FlowConfig) {
			c.Files = DefaultFiles(Uncapped)
			c.Arrivals = make([]float64, len(batch))
			for i := range c.Arrivals {
				c.Arrivals[i] = float64((i*7919)%13) / 4 // ties
			}
		}},
		{"http small window", "balanced", func(c *FlowConfig) {
			c.Files = DefaultFiles(HTTP)
			c.HTTPWindowBytes = 16 << 10
			c.Arrivals, _ = RampArrivals(len(batch), 20)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := sunwayAssign(t, g, tc.algo, batch)
			cfg := DefaultFlowConfig(TFTP)
			tc.mod(&cfg)
			res := run(t, g, a, batch, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sg, err := runSimGrid(ctx, bin, t.TempDir(), platform, g, a, batch, cfg)
			if err != nil {
				t.Fatal(err)
			}
			worst, err := compareSimGrid(res, sg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d nodes: completion times differ by at most %.2g relative (batch %v s)", len(batch), worst, res.BatchSeconds)
			if worst > 1e-6 {
				for _, nr := range res.NodeResults {
					t.Logf("%s: flow model %v s, SimGrid %v s", nr.Name, nr.DoneSeconds, sg.done[nr.Name])
				}
				t.Errorf("completion times differ by up to %.3g relative, want <= 1e-6", worst)
			}
		})
	}
}

// simgridLimit bounds a SimGrid run of the benchmark: its exact ramp of the paper machine takes
// longer than that.
const simgridLimit = 15 * time.Minute

// BenchmarkSimGridSunway boots the paper's machine (bcda, default files over TFTP) all at once and
// on a ramp of 1,000 nodes per second in the flow model and in SimGrid, and prints the wall and CPU
// times of both (CPU is steadier on a shared machine) and the largest difference between their
// completion times.
func BenchmarkSimGridSunway(b *testing.B) {
	dir := b.TempDir()
	bin := buildSimGrid(b, dir)
	g, err := sunwayMachine().Build()
	if err != nil {
		b.Fatal(err)
	}
	platform := filepath.Join(dir, "sunway.xml")
	var buf bytes.Buffer
	if err := writeSimGridPlatform(&buf, g); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(platform, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	batch := firstNodes(len(g.Nodes()))
	a := sunwayAssign(b, g, "bcda", batch)
	for _, ramp := range []float64{0, 1000} {
		b.Run(fmt.Sprintf("ramp%v", ramp), func(b *testing.B) {
			cfg := DefaultFlowConfig(TFTP)
			if ramp > 0 {
				cfg.Arrivals, _ = RampArrivals(len(batch), ramp)
			}
			var res *FlowResult
			var sg *simgridRun
			var wall, cpu float64
			for i := 0; i < b.N; i++ {
				t0, c0 := time.Now(), cpuSeconds()
				if res, err = Simulate(context.Background(), g, nil, a, batch, cfg); err != nil {
					b.Fatal(err)
				}
				wall, cpu = time.Since(t0).Seconds(), cpuSeconds()-c0
				ctx, cancel := context.WithTimeout(context.Background(), simgridLimit)
				sg, err = runSimGrid(ctx, bin, dir, platform, g, a, batch, cfg)
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					b.Logf("sunway bcda %d nodes, ramp %v/s: bootfabric %.3f s wall, %.3f s CPU; SimGrid not done in %v: %v",
						len(batch), ramp, wall, cpu, simgridLimit, err)
					return
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			worst, err := compareSimGrid(res, sg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(wall, "bootfabric-s")
			b.ReportMetric(cpu, "bootfabric-cpu-s")
			b.ReportMetric(sg.runSec, "simgrid-s")
			b.ReportMetric(sg.runCPUSec, "simgrid-cpu-s")
			b.ReportMetric(sg.runCPUSec/cpu, "cpu-speedup")
			b.ReportMetric(worst, "max-rel-diff")
			b.Logf("sunway bcda %d nodes, ramp %v/s: bootfabric %.3f s wall, %.3f s CPU; SimGrid %.3f s wall, %.3f s CPU (+%.3f s CPU loading the platform); %.0fx less CPU; batch %.6f s; completion times differ by at most %.2g relative",
				len(batch), ramp, wall, cpu, sg.runSec, sg.runCPUSec, sg.loadCPUSec, sg.runCPUSec/cpu, res.BatchSeconds, worst)
		})
	}
}
