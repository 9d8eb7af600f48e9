package testcluster

import (
	"github.com/bootfabric/bootfabric/internal/testenv"

	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap/zaptest"
)

// TestStorm500 is issue 4's storm: 500 container nodes on one switch ask one boot server for an
// address, then fetch the NBP over TFTP (and a small kernel and initrd over HTTP, and report
// health) all at once. Every node must end bound, fetched and reported.
func TestStorm500(t *testing.T) {
	m := &topology.Machine{
		Name:    "storm",
		Levels:  []topology.LevelSpec{{Name: "node", Prefix: "n", Count: 500, Uplink: &topology.LinkSpec{Segment: "N1", CapacityMbps: 1000}}},
		Servers: topology.ServerSpec{Count: 1, NIC: topology.LinkSpec{Segment: "N5", CapacityMbps: 1000}},
	}
	storm(t, m, "ncda")
}

// TestStorm1000 is the storm at scale (issue 24): 1,000 container nodes on four board switches
// under one core, four boot servers on the core, each serving its board's 250 nodes (bcda), all
// starting at once in one broadcast domain, so that every server sees every node's DISCOVER.
func TestStorm1000(t *testing.T) {
	m := &topology.Machine{
		Name: "storm1000",
		Levels: []topology.LevelSpec{
			{Name: "board", Prefix: "b", Count: 4, Uplink: &topology.LinkSpec{Segment: "N2", CapacityMbps: 10000}},
			{Name: "node", Prefix: "n", Count: 250, Uplink: &topology.LinkSpec{Segment: "N1", CapacityMbps: 1000}},
		},
		Servers: topology.ServerSpec{Count: 4, NIC: topology.LinkSpec{Segment: "N5", CapacityMbps: 1000}},
	}
	storm(t, m, "bcda")
}

// stormFiles are what every storm node fetches: Debian's iPXE NBP over TFTP, then a 64 KiB kernel
// and initrd over HTTP.
var stormFiles = BootFiles{NBP: debianNBP, Kernel: 64 << 10, Initrd: 64 << 10}

// storm boots every node of m at once from its boot servers under mapping algo and requires each to
// end bound, fetched and reported. It logs the timeline as the clients saw it, the servers' CPU
// and DHCP/TFTP counters, and the simulator's prediction of the same boot.
func storm(t *testing.T, m *topology.Machine, algo string) {
	needRoot(t, "busybox", "curl", "udhcpc")
	if _, err := os.Stat(debianNBP); err != nil {
		testenv.Skip(t, "needs %s (Debian package ipxe)", debianNBP)
	}
	if testing.Short() {
		t.Skip("-short: a storm of hundreds of nodes takes minutes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := Up(ctx, Spec{Name: testName(t), Machine: m, Scale: 1, StateDir: t.TempDir()}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	opt := ServerOptions{Bootctl: buildBootctl(t), Mapping: algo, Files: stormFiles}
	if err := c.StartServers(ctx, opt); err != nil {
		t.Fatal(err)
	}
	serverCPU0 := procCPUSeconds(c.Pids)
	softnet0 := softnetDropped()
	tl, batch, cpu, bootErr := c.Boot(ctx, nil, 6*time.Minute)
	// The host's receive backlog drops before any server sees a packet: told apart from dhcpd's drops.
	t.Logf("/proc/net/softnet_stat: %d packets dropped during the storm (all CPUs)", softnetDropped()-softnet0)
	t.Logf("%d nodes, %d boot servers: the servers used %.1f CPU-seconds during the storm; the host was %.0f%% busy",
		len(c.Nodes), len(c.Servers), procCPUSeconds(c.Pids)-serverCPU0, cpu.Busy*100)
	for _, line := range stormTimeline(tl) {
		t.Log(line)
	}
	c.logServerCounters(ctx, t)
	if bootErr != nil {
		t.Fatal(bootErr)
	}
	done := 0
	for _, n := range tl {
		if _, ok := n.Events["reported"]; ok && n.Server != "" {
			done++
		}
	}
	if done != len(c.Nodes) {
		t.Errorf("%d of %d nodes bound, fetched and reported", done, len(c.Nodes))
	}
	// A node whose udhcpc gave up starts it again, as a PXE ROM would; a server that loses
	// REQUESTs would make many do so.
	again := 0
	for _, n := range tl {
		if _, ok := n.Events["dhcp-again"]; ok {
			again++
		}
	}
	t.Logf("%d of %d nodes started DHCP again after udhcpc gave up", again, len(c.Nodes))
	if again > len(c.Nodes)/100 {
		t.Errorf("%d of %d nodes had to start DHCP again, want at most 1 %%", again, len(c.Nodes))
	}
	c.logStormPrediction(ctx, t, algo, tl, batch)
}

// stormTimeline is the p10/p50/p90/max of each client event, in seconds after the start.
func stormTimeline(tl []Timeline) []string {
	var out []string
	for _, ev := range []string{"bound", "nbp", "kernel", "initrd", "reported"} {
		var at []float64
		for _, n := range tl {
			if v, ok := n.Events[ev]; ok {
				at = append(at, v)
			}
		}
		sort.Float64s(at)
		if len(at) > 0 {
			out = append(out, fmt.Sprintf("%-8s %4d nodes, s after start: p10 %5.1f  p50 %5.1f  p90 %5.1f  max %5.1f", ev, len(at),
				at[len(at)/10], at[len(at)/2], at[len(at)*9/10], at[len(at)-1]))
		}
	}
	return out
}

// logServerCounters logs each server's DHCP and TFTP counters, from inside its namespace.
func (c *Cluster) logServerCounters(ctx context.Context, t *testing.T) {
	for _, s := range c.Servers {
		text, err := c.run.Run(ctx, "ip", "netns", "exec", s.Namespace, "curl", "-sSf", "--max-time", "5", "http://127.0.0.1/metrics")
		if err != nil {
			t.Logf("server %s metrics: %v", s.Name, err)
			continue
		}
		for _, line := range strings.Split(text, "\n") {
			for _, m := range []string{"bootfabric_dhcp_packets_total", "bootfabric_dhcp_dropped_total", "bootfabric_tftp_transfers_total",
				"bootfabric_tftp_retransmissions_total", "bootfabric_tftp_repeated_requests_total"} {
				if strings.HasPrefix(line, m) && !strings.Contains(line, "not_ours") {
					t.Logf("server %s: %s", s.Name, line)
				}
			}
			if queueWaitLine(line) {
				t.Logf("server %s: %s", s.Name, line)
			}
		}
	}
}

// queueWaitLine reports whether a metrics line is one the storm logs of dhcpd's queue wait: its
// count and sum, and how many waited at most 1 s, 3 s (udhcpc's -T) and 9 s (its three REQUESTs).
func queueWaitLine(line string) bool {
	const m = "bootfabric_dhcp_queue_wait_seconds"
	for _, le := range []string{`le="1"`, `le="3"`, `le="9"`} {
		if strings.HasPrefix(line, m+"_bucket") && strings.Contains(line, le) {
			return true
		}
	}
	return strings.HasPrefix(line, m+"_sum") || strings.HasPrefix(line, m+"_count")
}

// softnetDropped is the sum over CPUs of /proc/net/softnet_stat's second column: packets the
// kernel dropped because a CPU's receive backlog (net.core.netdev_max_backlog) was full. 0 when
// the file cannot be read.
func softnetDropped() uint64 {
	b, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		return 0
	}
	var total uint64
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			n, _ := strconv.ParseUint(f[1], 16, 64)
			total += n
		}
	}
	return total
}

// logStormPrediction logs the simulator's prediction of the storm beside the measured makespan: the
// same machine, mapping and files, with every node starting at once, and with each node starting
// its files when the measured DHCP bound it. The gap is the host's: the simulator models links and
// protocols, and a storm of hundreds of node processes on two cores waits for CPU.
func (c *Cluster) logStormPrediction(ctx context.Context, t *testing.T, algo string, tl []Timeline, batch float64) {
	rtt, err := c.RTT(ctx, tl[0])
	if err != nil {
		t.Logf("prediction: %v", err)
		return
	}
	bound := make([]float64, len(tl))
	for i, n := range tl {
		bound[i] = n.Events["bound"]
	}
	for _, p := range []struct {
		name  string
		bound []float64
	}{{"all nodes at 0 s", nil}, {"each node from its measured bound time", bound}} {
		pred, err := c.Predict(ctx, algo, stormFiles, rtt, p.bound)
		if err != nil {
			t.Logf("prediction: %v", err)
			return
		}
		t.Logf("makespan measured %.1f s; bootctl simulate, %s: %.2f s (RTT %.2f ms)", batch, p.name, pred.BatchSeconds, rtt*1000)
	}
}

// procCPUSeconds is the user+system CPU time of the given processes so far.
func procCPUSeconds(pids []int) float64 {
	var ticks float64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 12 {
			u, _ := strconv.ParseFloat(f[11], 64)
			s, _ := strconv.ParseFloat(f[12], 64)
			ticks += u + s
		}
	}
	return ticks / 100 // USER_HZ
}
