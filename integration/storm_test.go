package integration

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
	needRoot(t, "busybox", "curl", "udhcpc")
	if _, err := os.Stat(debianNBP); err != nil {
		testenv.Skip(t, "needs %s (Debian package ipxe)", debianNBP)
	}
	if testing.Short() {
		t.Skip("-short: the 500-node storm takes about 3 minutes")
	}
	m := &topology.Machine{
		Name:    "storm",
		Levels:  []topology.LevelSpec{{Name: "node", Prefix: "n", Count: 500, Uplink: &topology.LinkSpec{Segment: "N1", CapacityMbps: 1000}}},
		Servers: topology.ServerSpec{Count: 1, NIC: topology.LinkSpec{Segment: "N5", CapacityMbps: 1000}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
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
	opt := ServerOptions{Bootctl: buildBootctl(t), Mapping: "ncda", Files: BootFiles{NBP: debianNBP, Kernel: 64 << 10, Initrd: 64 << 10}}
	if err := c.StartServers(ctx, opt); err != nil {
		t.Fatal(err)
	}
	serverCPU0 := procCPUSeconds(c.Pids)
	tl, batch, cpu, err := c.Boot(ctx, nil, 5*time.Minute)
	t.Logf("the boot server used %.1f CPU-seconds during the storm", procCPUSeconds(c.Pids)-serverCPU0)
	for _, ev := range []string{"bound", "nbp", "reported"} {
		var at []float64
		for _, n := range tl {
			if v, ok := n.Events[ev]; ok {
				at = append(at, v)
			}
		}
		sort.Float64s(at)
		if len(at) > 0 {
			t.Logf("%-8s %3d nodes, s after start: p10 %.1f  p50 %.1f  p90 %.1f  max %.1f", ev, len(at),
				at[len(at)/10], at[len(at)/2], at[len(at)*9/10], at[len(at)-1])
		}
	}
	if sums, serr := c.Summaries(ctx); serr == nil {
		for _, s := range sums {
			t.Logf("server %s summary: %s", s.Server, s.Summary)
		}
	}
	for _, s := range c.Servers {
		text, merr := c.run.Run(ctx, "ip", "netns", "exec", s.Namespace, "curl", "-sSf", "--max-time", "5", "http://127.0.0.1/metrics")
		if merr != nil {
			t.Logf("server %s metrics: %v", s.Name, merr)
			continue
		}
		for _, line := range strings.Split(text, "\n") {
			for _, m := range []string{"bootfabric_dhcp_packets_total", "bootfabric_dhcp_replies_total", "bootfabric_dhcp_dropped_total", "bootfabric_tftp_transfers_total", "bootfabric_tftp_retransmissions_total"} {
				if strings.HasPrefix(line, m) {
					t.Logf("server %s: %s", s.Name, line)
				}
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	bound := 0
	for _, n := range tl {
		if _, ok := n.Events["bound"]; ok {
			if _, ok := n.Events["nbp"]; ok {
				bound++
			}
		}
	}
	t.Logf("500-node storm: %d bound and fetched the NBP, batch %.1f s, host cpu %.0f%%", bound, batch, cpu.Busy*100)
	if bound != 500 {
		t.Errorf("%d of 500 nodes bound and fetched", bound)
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
