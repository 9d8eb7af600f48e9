package testcluster

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap/zaptest"
)

// needRoot skips tests that build namespaces when they cannot run here.
func needRoot(t *testing.T, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "needs root to create network namespaces (CI runs as root)")
	}
	for _, tool := range append([]string{"ip", "tc"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skip(t, "needs %s (scripts/test installs it)", tool)
		}
	}
}

func testName(t testing.TB) string { return "t" + strconv.Itoa(os.Getpid()%100000) }

func upMini(t *testing.T, scale float64) *Cluster {
	t.Helper()
	m, _ := topology.Preset("mini")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Up(ctx, Spec{Name: testName(t), Machine: m, Scale: scale, StateDir: t.TempDir()}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	downAtCleanup(t, c)
	return c
}

// downAtCleanup takes c down when the test ends and checks that none of its namespaces is left.
func downAtCleanup(tb testing.TB, c *Cluster) {
	tb.Cleanup(func() {
		if err := c.Down(context.Background()); err != nil {
			tb.Errorf("down: %v", err)
		}
		out, _ := exec.Command("ip", "netns", "list").Output()
		if strings.Contains(string(out), nsName(c.Name, "")) {
			tb.Errorf("namespaces left after down:\n%s", out)
		}
	})
}

func nsRun(t *testing.T, ns string, argv ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// TestClusterShaping brings up mini at 1/10, gives one node a static address, and fetches a file
// from a server over the shaped path: the rate must be close to the narrowest link (N1 = N2 = N5 =
// 100 Mb/s x 0.1 = 10 Mb/s).
func TestClusterShaping(t *testing.T) {
	needRoot(t, "busybox", "curl")
	c := upMini(t, 0.1)
	node, srv := c.Nodes[5], c.Servers[3]
	nsRun(t, node.Namespace, "ip", "addr", "add", node.IP+"/16", "dev", "eth0")
	out := nsRun(t, node.Namespace, "busybox", "ping", "-c", "3", "-q", srv.IP)
	if !strings.Contains(out, "3 packets received") {
		t.Fatalf("ping: %s", out)
	}
	dir := t.TempDir()
	const size = 2_000_000
	if err := os.WriteFile(dir+"/f", make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	httpd := exec.Command("ip", "netns", "exec", srv.Namespace, "busybox", "httpd", "-f", "-p", "8080", "-h", dir)
	if err := httpd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = httpd.Process.Kill(); _ = httpd.Wait() })
	testfix.WaitFor(t, "busybox httpd listening", 10*time.Second, func() bool {
		return exec.Command("ip", "netns", "exec", node.Namespace, "curl", "-s", "-o", "/dev/null", "--max-time", "1", "http://"+srv.IP+":8080/").Run() == nil
	})
	out = nsRun(t, node.Namespace, "curl", "-sS", "-o", "/dev/null", "--max-time", "30", "-w", "%{speed_download}", "http://"+srv.IP+":8080/f")
	bps, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
	if err != nil {
		t.Fatal(out)
	}
	mbps := bps * 8 / 1e6
	t.Logf("2 MB over the shaped path: %.2f Mb/s (links shaped to 10 Mb/s)", mbps)
	if mbps < 8 || mbps > 11.5 {
		t.Errorf("rate %.2f Mb/s, want about 10", mbps)
	}
}

func TestClusterRefusesLeftover(t *testing.T) {
	netnsLane(t)
	needRoot(t)
	c := upMini(t, 0.1)
	m, _ := topology.Preset("mini")
	_, err := Up(context.Background(), Spec{Name: c.Name, Machine: m, Scale: 0.1, StateDir: t.TempDir()}, zaptest.NewLogger(t))
	if err == nil || !strings.Contains(err.Error(), "left over") {
		t.Errorf("second up with the same name: %v", err)
	}
}

func TestSpecErrors(t *testing.T) {
	m, _ := topology.Preset("mini")
	big, _ := topology.Preset("sunway")
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Name: "Bad-Name", Machine: m, Scale: 0.1}, "cluster name"},
		{Spec{Name: "ok", Machine: m, Scale: 0}, "scale"},
		{Spec{Name: "ok", Machine: big, Scale: 0.1}, "limited to 1500"},
	} {
		_, err := up(context.Background(), tc.spec, zaptest.NewLogger(t), execRunner{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.spec.Name, err, tc.want)
		}
	}
}
