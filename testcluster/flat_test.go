package testcluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap/zaptest"
)

// TestFlatCluster12 boots a cluster that has no topology file (issue 27): twelve container nodes
// named node01..node12 on one switch, one boot server given an inventory of names and MACs alone
// and a DHCP pool for their addresses. Every node must boot and report, and `bootctl status` must
// show all twelve healthy under their names.
func TestFlatCluster12(t *testing.T) {
	netnsLane(t)
	needRoot(t, "busybox", "curl", "udhcpc")
	if _, err := os.Stat(debianNBP); err != nil {
		testenv.Skip(t, "needs %s (Debian package ipxe)", debianNBP)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names := make([]string, 12)
	for i := range names {
		names[i] = fmt.Sprintf("node%02d", i+1)
	}
	c, err := Up(ctx, Spec{Name: testName(t), Machine: topology.Flat(names, 1), Scale: 1, StateDir: t.TempDir()}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	bootctl := buildBootctl(t)
	if err := c.StartServers(ctx, ServerOptions{Bootctl: bootctl, Flat: true, Files: stormFiles}); err != nil {
		t.Fatal(err)
	}
	tl, batch, _, err := c.Boot(ctx, nil, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("12 flat nodes booted in %.1f s", batch)
	for _, n := range tl {
		if _, ok := n.Events["reported"]; !ok {
			t.Errorf("%s did not report: %s", n.Node, n.Err)
		}
	}
	s := c.Servers[0]
	out, err := c.run.Run(ctx, "ip", "netns", "exec", s.Namespace, bootctl, "status", "--server", "http://127.0.0.1:80")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	t.Logf("bootctl status:\n%s", out)
	for _, name := range names {
		if !strings.Contains(out, name) {
			t.Errorf("status does not list %s", name)
		}
	}
	if got := strings.Count(out, "healthy"); got < len(names) {
		t.Errorf("status shows %d healthy, want %d", got, len(names))
	}
}
