package testcluster

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap/zaptest"
)

// labBootCluster is a cluster whose first VMs sit behind lab BMCs, as `bootctl cluster up --kind
// qemu --bmc PROTOCOL` leaves it, with the boot server's API forwarded to the host.
type labBootCluster struct {
	c      *Cluster
	bin    string
	labs   *LabBMCs
	server string // the boot server's API, forwarded to the host
	token  string
}

// startLabBootCluster brings up machine m with its servers and gives its first vms nodes a BMC
// of protocol: QEMU VMs behind a BMC each, as `cluster up --kind qemu --bmc PROTOCOL` does, or with
// protocol "netns-redfish" container nodes behind one Redfish BMC, as `cluster up --bmc redfish`
// does. Everything is torn down at the end of the test.
func startLabBootCluster(t *testing.T, ctx context.Context, prefix string, m *topology.Machine, protocol string, vms int) *labBootCluster {
	testenv.NeedRoot(t, "to create network namespaces and taps (CI runs as root)")
	netns := protocol == "netns-redfish"
	if err := CheckQEMUHost(QEMUOptions{}); err != nil && !netns {
		testenv.Skip(t, "%v (scripts/test installs the packages)", err)
	}
	for _, tool := range []string{"ip", "tc", "curl", "udhcpc", "busybox"} {
		testenv.NeedTool(t, tool, "")
	}
	testenv.NeedFile(t, debianNBP, "ipxe")
	l := &labBootCluster{bin: buildBootctl(t)}
	c, err := Up(ctx, Spec{Name: prefix + strconv.Itoa(os.Getpid()%100000), Machine: m, Scale: 1, StateDir: t.TempDir()}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	downAtCleanup(t, c)
	opt := ServerOptions{Bootctl: l.bin, Mapping: "ncda", Files: BootFiles{NBP: debianNBP}}
	if netns {
		opt.Files.Kernel, opt.Files.Initrd = 1<<20, 3<<20 // cluster up's defaults
		err = c.StartServers(ctx, opt)
	} else {
		err = c.StartQEMUServers(ctx, opt, VMImage{})
	}
	if err != nil {
		t.Fatal(err)
	}
	// The BMCs are `bootctl cluster bmc` processes, as `bootctl cluster up --bmc` starts them.
	if netns {
		l.labs, err = c.StartFirmwareBMC(ctx, l.bin, vms, "ncda")
	} else {
		l.labs, err = c.StartLabBMCs(ctx, l.bin, protocol, vms, "ncda")
	}
	if err != nil {
		t.Fatal(err)
	}
	l.c = c
	// No router advertisements of the test's own (boot servers with dhcp.ipv6_ra send them):
	// without any, iPXE waits about 16 s for IPv6, within the run's deadlines.
	l.server = "http://" + nsForward(t, c.Servers[0].Namespace, "127.0.0.1:80")
	l.token = filepath.Join(c.dir(), "state-"+c.Servers[0].Name, bootconfig.OperatorTokenFile)
	return l
}

// boot runs `bootctl boot all` with the lab's files and extra flags, and returns its run record
// (exit 1, some node failed, is a record too).
func (l *labBootCluster) boot(t *testing.T, ctx context.Context, extra ...string) []bootRecord {
	args := append([]string{"boot", "all", "--config", l.labs.Config, "--server", l.server, "--token-file", l.token,
		"--credentials", l.labs.Credentials, "--journal", filepath.Join(t.TempDir(), "run.journal"), "--max-in-flight", "2",
		"--post", "20s", "--health-time", "60s", "--deadline-factor", "3", "--max-attempts", "2", "--timeout", "30s",
		"--interval", "0s", "--poll", "500ms", "-o", "json"}, extra...)
	boot := exec.CommandContext(ctx, l.bin, args...)
	boot.Stderr = testWriter{t, "boot: "}
	out, err := boot.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1) {
		t.Fatalf("boot run: %v\n%s", err, out)
	}
	var run struct {
		Records []bootRecord `json:"nodes_detail"`
	}
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("run record: %v\n%s", err, out)
	}
	t.Logf("run record: %s", out)
	return run.Records
}

// bootRecord is one node's line of a run record.
type bootRecord struct{ Name, Phase, Class string }

// checkNetworkFirst: each VM's first start took the one-time PXE override and booted the network
// (its firmware tries the disk first).
func (l *labBootCluster) checkNetworkFirst(t *testing.T, vms int) {
	for _, node := range l.c.Nodes[:vms] {
		if first := firstStart(t, l.labs.Consoles[node.Name]); !strings.Contains(first, "-boot once=n") || strings.Contains(first, "Booting from Hard Disk") ||
			!strings.Contains(first, "Booting from ROM") {
			t.Errorf("node %s: its first start did not boot the network first:\n%s", node.Name, first)
		}
	}
}

// bootRunBoard is bootRunMachine (one board, one boot server) with nodes nodes.
func bootRunBoard(name string, nodes int) *topology.Machine {
	m := bootRunMachine()
	m.Name = name
	m.Levels[1].Count = nodes
	return m
}

// TestBootRunIPMILab: a QEMU VM behind an IPMI BMC (`bootctl cluster bmc --protocol ipmi`, as
// `cluster up --bmc ipmi` starts it: ipmi_sim whose chassis acts on the VM through QMP).
// ipmitool, a client nobody here wrote, reads it off; `bootctl boot` boots it to healthy with a
// one-time PXE boot device over IPMI, the firmware set to boot the disk first; then ipmitool
// powers it on and off, and `bootctl power status` agrees with QEMU's own state. One VM, not two
// as TestBootRunRedfish: under TCG on two shared cores a second VM doubles the boot's time.
func TestBootRunIPMILab(t *testing.T) {
	vmLane(t)
	ipmitool := testenv.NeedTool(t, "ipmitool", "ipmitool")
	testenv.NeedTool(t, "ipmi_sim", "openipmi")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l := startLabBootCluster(t, ctx, "ip", bootRunBoard("bootrunipmi1", 1), "ipmi", 1)
	node := l.c.Nodes[0].Name
	password := l.labPassword(t)
	tool := func(args ...string) string {
		t.Helper()
		addr := l.labs.BMCs[node]
		host, port, _ := strings.Cut(addr, ":")
		// -C 3: ipmi_sim never answers the cipher suite query ipmitool makes without it.
		all := append([]string{"-I", "lanplus", "-C", "3", "-N", "10", "-H", host, "-p", port, "-U", "admin", "-E"}, args...)
		cmd := exec.CommandContext(ctx, ipmitool, all...)
		cmd.Env = append(os.Environ(), "IPMI_PASSWORD="+password)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ipmitool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := tool("chassis", "power", "status"); !strings.Contains(out, "Chassis Power is off") {
		t.Fatalf("ipmitool: a VM not yet booted reads %q, want off", out)
	}
	if l.labs.CA != "" {
		t.Errorf("IPMI BMCs with a CA bundle %q", l.labs.CA)
	}
	records := l.boot(t, ctx)
	if len(records) != 1 {
		t.Fatalf("%d records, want 1", len(records))
	}
	for _, r := range records {
		if r.Phase != "healthy" {
			t.Errorf("node %s: %s %s, want healthy", r.Name, r.Phase, r.Class)
		}
	}
	l.checkNetworkFirst(t, 1)
	if healthy := (&bootRunSetup{server: l.server}).healthyAt(t); len(healthy) != 1 {
		t.Errorf("healthy on the server: %v, want the VM", healthy)
	}
	state := func() string { return l.powerState(t, ctx, node) }
	testfix.WaitFor(t, "the healthy VM to power itself off", 60*time.Second, func() bool { return state() == "off" })
	tool("chassis", "power", "on")
	if out := tool("chassis", "power", "status"); !strings.Contains(out, "is on") || state() != "on" {
		t.Errorf("after ipmitool's power on: ipmitool reads %q, bootctl power %s", out, state())
	}
	tool("chassis", "power", "off")
	if out := tool("chassis", "power", "status"); !strings.Contains(out, "is off") || state() != "off" {
		t.Errorf("after ipmitool's power off: ipmitool reads %q, bootctl power %s", out, state())
	}
	if starts := strings.Count(readLog(l.labs.Consoles[node]), "\n== ") + 1; starts != 2 {
		t.Errorf("node %s: %d starts in its console log, want the boot's and ipmitool's", node, starts)
	}
}

// labPassword is the lab BMCs' password, from the credentials file `cluster up` wrote.
func (l *labBootCluster) labPassword(t *testing.T) string {
	data, err := os.ReadFile(l.labs.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(data), "password: ")
	pw, _, _ := strings.Cut(rest, "}")
	if pw == "" {
		t.Fatalf("no password in %s", l.labs.Credentials)
	}
	return strings.TrimSpace(pw)
}

// powerState is `bootctl power status NODE`'s state with the lab's files.
func (l *labBootCluster) powerState(t *testing.T, ctx context.Context, node string, extra ...string) string {
	t.Helper()
	args := append([]string{"power", "status", node, "--config", l.labs.Config, "--credentials", l.labs.Credentials, "--timeout", "60s", "-o", "json"}, extra...)
	out, err := exec.CommandContext(ctx, l.bin, args...).Output()
	var res struct{ Results []struct{ State string } }
	if err != nil || json.Unmarshal(out, &res) != nil || len(res.Results) != 1 {
		t.Fatalf("power status %s: %v\n%s", node, err, out)
	}
	return res.Results[0].State
}

// TestBootRunNetnsBMC: three container nodes behind one Redfish BMC (`bootctl cluster bmc
// --command`, as `cluster up --bmc redfish` starts it for a netns cluster), a system per node whose
// power on starts the node's boot script in its namespace. `bootctl boot` boots them all to
// healthy through the BMC, as it boots servers; each node's script then ends, and power status
// reads it off; power on runs it again.
func TestBootRunNetnsBMC(t *testing.T) {
	netnsLane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l := startLabBootCluster(t, ctx, "fw", bootRunBoard("bootrunfw3", 3), "netns-redfish", 3)
	addrs := map[string]bool{}
	for _, a := range l.labs.BMCs {
		addrs[a] = true
	}
	if len(addrs) != 1 || len(l.labs.BMCs) != 3 {
		t.Errorf("BMC addresses %v, want one for the 3 nodes", l.labs.BMCs)
	}
	records := l.boot(t, ctx, "--redfish-ca", l.labs.CA)
	if len(records) != 3 {
		t.Fatalf("%d records, want 3", len(records))
	}
	for _, r := range records {
		if r.Phase != "healthy" {
			t.Errorf("node %s: %s %s, want healthy", r.Name, r.Phase, r.Class)
		}
	}
	if healthy := (&bootRunSetup{server: l.server}).healthyAt(t); len(healthy) != 3 {
		t.Errorf("healthy on the server: %v, want the 3 nodes", healthy)
	}
	node := l.c.Nodes[0].Name
	if log := readLog(l.labs.Consoles[node]); !strings.Contains(log, "reported ") {
		t.Errorf("node %s: its script's output has no health report:\n%s", node, log)
	}
	state := func() string { return l.powerState(t, ctx, node, "--redfish-ca", l.labs.CA) }
	testfix.WaitFor(t, "the booted node's script to end", 60*time.Second, func() bool { return state() == "off" })
	power := func(op string) {
		out, err := exec.CommandContext(ctx, l.bin, "power", op, node, "--config", l.labs.Config, "--credentials", l.labs.Credentials,
			"--redfish-ca", l.labs.CA, "--timeout", "60s", "-o", "json").CombinedOutput()
		if err != nil {
			t.Fatalf("power %s: %v\n%s", op, err, out)
		}
	}
	// Power on runs the node's script again: a second DHCP lease in its output.
	power("on")
	testfix.WaitFor(t, "the node's script to run again", 60*time.Second, func() bool {
		return strings.Count(readLog(l.labs.Consoles[node]), "bound ") == 2
	})
	power("off")
	if got := state(); got != "off" {
		t.Errorf("power status of a node just powered off: %s", got)
	}
}
