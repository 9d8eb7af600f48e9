package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/internal/redfishsim"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap/zaptest"
)

// bootRunRedfishMachine is one board of three nodes behind one boot server: two QEMU VMs behind
// Redfish BMCs and a node whose BMC refuses the password.
func bootRunRedfishMachine() *topology.Machine {
	m := bootRunMachine()
	m.Name = "bootrunrf3"
	m.Levels[1].Count = 3
	return m
}

// TestBootRunRedfish: bootctl boot powers two QEMU VMs on through their Redfish BMCs (`bootctl
// cluster bmc` processes started by StartRedfishBMCs, each VM driven through QMP) with a one-time
// PXE override, and both end healthy; the VMs' firmware is set to boot from disk, so it is the
// override that made them boot from the network. The BMC that refuses the password is classified
// and the run goes on; power status, on and off agree with QEMU's own state.
func TestBootRunRedfish(t *testing.T) {
	vmLane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	testenv.NeedRoot(t, "to create network namespaces and taps (CI runs as root)")
	if err := CheckQEMUHost(QEMUOptions{}); err != nil {
		testenv.Skip(t, "%v (scripts/test installs the packages)", err)
	}
	testenv.NeedFile(t, debianNBP, "ipxe")
	bin := buildBootctl(t)
	log := zaptest.NewLogger(t)
	c, err := Up(ctx, Spec{Name: "rf" + strconv.Itoa(os.Getpid()%100000), Machine: bootRunRedfishMachine(), Scale: 1, StateDir: t.TempDir()}, log)
	if err != nil {
		t.Fatal(err)
	}
	downAtCleanup(t, c)
	if err := c.StartQEMUServers(ctx, ServerOptions{Bootctl: bin, Mapping: "ncda", Files: BootFiles{NBP: debianNBP}}, VMImage{}); err != nil {
		t.Fatal(err)
	}
	// The VMs' BMCs are `bootctl cluster bmc` processes, as `bootctl cluster up --bmc redfish`
	// starts them; the third node's BMC refuses the password.
	labs, err := c.StartRedfishBMCs(ctx, bin, 2, "ncda")
	if err != nil {
		t.Fatal(err)
	}
	refusing := redfishsim.Start(t, redfishsim.Options{TLS: true, Password: "not-what-we-send"})
	dir := t.TempDir()
	cas, err := os.ReadFile(labs.CA)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(refusing.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	ca := testfix.WriteFile(t, filepath.Join(dir, "bmc-ca.pem"), append(cas, pem...))
	invData, err := os.ReadFile(labs.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	n2 := c.Nodes[2]
	inv := string(invData) + fmt.Sprintf("%s,%s,%s,%s,%s,redfish\n", n2.Name, n2.MAC, n2.IP, n2.Name, refusing.Host())
	testfix.WriteFile(t, filepath.Join(filepath.Dir(labs.Config), "bmc-inventory.csv"), []byte(inv))
	config, creds := labs.Config, labs.Credentials
	// No router advertisements of the test's own (boot servers with dhcp.ipv6_ra send them):
	// without any, iPXE waits about 16 s for IPv6, within the run's deadlines.
	server := "http://" + nsForward(t, c.Servers[0].Namespace, "127.0.0.1:80")
	token := filepath.Join(c.dir(), "state-"+c.Servers[0].Name, bootconfig.OperatorTokenFile)

	boot := exec.CommandContext(ctx, bin, "boot", "all", "--config", config, "--server", server, "--token-file", token,
		"--credentials", creds, "--redfish-ca", ca, "--journal", filepath.Join(dir, "run.journal"), "--max-in-flight", "2",
		"--post", "20s", "--health-time", "60s", "--deadline-factor", "3", "--max-attempts", "2", "--timeout", "30s",
		"--interval", "0s", "--poll", "500ms", "-o", "json")
	boot.Stderr = testWriter{t, "boot: "}
	out, err := boot.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1) {
		t.Fatalf("boot run: %v\n%s", err, out)
	}
	var run struct {
		Records []struct{ Name, Phase, Class string } `json:"nodes_detail"`
	}
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("run record: %v\n%s", err, out)
	}
	t.Logf("run record: %s", out)
	if len(run.Records) != 3 {
		t.Fatalf("%d records, want 3", len(run.Records))
	}
	for i, r := range run.Records {
		switch {
		case i < 2 && r.Phase != "healthy":
			t.Errorf("node %s: %s %s, want healthy", r.Name, r.Phase, r.Class)
		case i == 2 && (r.Phase != "failed" || r.Class != "bmc-auth"):
			t.Errorf("node %s: %s %q, want failed bmc-auth", r.Name, r.Phase, r.Class)
		}
	}
	for _, node := range c.Nodes[:2] {
		if first := firstStart(t, labs.Consoles[node.Name]); !strings.Contains(first, "-boot once=n") || strings.Contains(first, "Booting from Hard Disk") ||
			!strings.Contains(first, "Booting from ROM") {
			t.Errorf("node %s: its first start did not boot the network first:\n%s", node.Name, first)
		}
	}
	if healthy := (&bootRunSetup{server: server}).healthyAt(t); len(healthy) != 2 {
		t.Errorf("healthy on the server: %v, want the 2 VMs", healthy)
	}

	node := c.Nodes[0].Name
	power := func(op string) string {
		out, err := exec.CommandContext(ctx, bin, "power", op, node, "--config", config, "--credentials", creds, "--redfish-ca", ca,
			"--timeout", "60s", "-o", "json").Output()
		if err != nil {
			t.Fatalf("power %s: %v\n%s", op, err, out)
		}
		return string(out)
	}
	state := func() string {
		out := power("status")
		var res struct{ Results []struct{ State string } }
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Results) != 1 {
			t.Fatalf("power status: %v\n%s", err, out)
		}
		return res.Results[0].State
	}
	testfix.WaitFor(t, "the healthy VM to power itself off", 60*time.Second, func() bool { return state() == "off" })
	power("on")
	if got := state(); got != "on" {
		t.Errorf("power status of a VM just powered on: %s", got)
	}
	power("off")
	if got := state(); got != "off" {
		t.Errorf("power status of a VM just powered off: %s", got)
	}
	if starts := strings.Count(readLog(labs.Consoles[node]), "\n== ") + 1; starts < 2 {
		t.Errorf("node %s: %d starts in its console log, want the boot's and power on's", node, starts)
	}
}

// firstStart is the console log of a QEMUMachine's first start (its "== ... power on" line and
// what followed until the next start).
func firstStart(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if i := strings.Index(s[min(len(s), 3):], "\n== "); i >= 0 {
		s = s[:i+3]
	}
	return s
}
