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

// TestBootRunRedfish: bootctl boot powers two QEMU VMs on through their Redfish BMCs (redfishsim
// over HTTPS, each VM a QEMUMachine driven through QMP) with a one-time PXE override, and both
// end healthy; the VMs' firmware is set to boot from disk, so it is the override that made them
// boot from the network. The BMC that refuses the password is classified and the run goes on;
// power status, on and off agree with QEMU's own state; no session is left open.
func TestBootRunRedfish(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
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
	// Started by their BMCs with no supervisor to retry under TCG (as TestBootRunIPMI's).
	accel := "tcg"
	if v, _ := accelRequest(""); v == "kvm" {
		accel, _ = testAccel(t, ctx, c, log)
	}
	opt := QEMUOptions{Accel: accel}
	opt.defaults(c)
	dir := t.TempDir()
	bmcs := make([]*redfishsim.BMC, len(c.Nodes))
	vms := make([]*redfishsim.QEMUMachine, 2)
	var cas []byte
	for i := range vms {
		if err := c.attachTap(ctx, i); err != nil {
			t.Fatal(err)
		}
		vms[i] = &redfishsim.QEMUMachine{Argv: diskFirst(append([]string{"ip", "netns", "exec", c.Nodes[i].Namespace, opt.QEMU}, qemuArgs(opt, c.Nodes[i].MAC, vmTap, "")...)),
			Dir: filepath.Join(dir, c.Nodes[i].Name)}
		if err := os.Mkdir(vms[i].Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		vm := vms[i]
		t.Cleanup(func() { _ = vm.PowerOff(context.Background()) })
		bmcs[i] = redfishsim.Start(t, redfishsim.Options{TLS: true, Systems: []string{c.Nodes[i].Name}, Lag: 500 * time.Millisecond,
			Machine: func(string) redfishsim.Machine { return vm }, Logf: t.Logf})
	}
	bmcs[2] = redfishsim.Start(t, redfishsim.Options{TLS: true, Password: "not-what-we-send"})
	for _, b := range bmcs {
		pem, err := os.ReadFile(b.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		cas = append(cas, pem...)
	}
	ca := testfix.WriteFile(t, filepath.Join(dir, "bmc-ca.pem"), cas)
	creds := testfix.WriteFile(t, filepath.Join(dir, "bmc.yaml"), []byte(fmt.Sprintf("default: {user: %s, password: %s}\n", bmcs[0].User, bmcs[0].Password)))
	if err := os.Chmod(creds, 0o600); err != nil {
		t.Fatal(err)
	}
	inv := "name,mac,ip,node,bmc,bmc_driver\n"
	for i, n := range c.Nodes {
		inv += fmt.Sprintf("%s,%s,%s,%s,%s,redfish\n", n.Name, n.MAC, n.IP, n.Name, bmcs[i].Host())
	}
	testfix.WriteFile(t, filepath.Join(dir, "inventory.csv"), []byte(inv))
	mach, err := c.Machine.MarshalYAMLText()
	if err != nil {
		t.Fatal(err)
	}
	testfix.WriteFile(t, filepath.Join(dir, "machine.yaml"), mach)
	config := testfix.WriteFile(t, filepath.Join(dir, "boot.yaml"), []byte(fmt.Sprintf(
		"servers:\n  - {name: %s, address: %s}\ntopology: machine.yaml\nmapping: ncda\ninventory: inventory.csv\n", c.Servers[0].Name, c.Servers[0].IP)))
	closeRAs, err := startRAs(ctx, c.Servers, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeRAs)
	server := "http://" + nsForward(t, c.Servers[0].Namespace, "127.0.0.1:80")
	token := filepath.Join(c.dir(), "state-"+c.Servers[0].Name, bootconfig.OperatorTokenFile)

	boot := exec.CommandContext(ctx, bin, "boot", "all", "--config", config, "--server", server, "--token-file", token,
		"--credentials", creds, "--redfish-ca", ca, "--journal", filepath.Join(dir, "run.journal"), "--max-in-flight", "2",
		"--post", "10s", "--health-time", "30s", "--deadline-factor", "2", "--max-attempts", "2", "--timeout", "20s",
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
	for i, vm := range vms {
		if got := bmcs[i].Boots(c.Nodes[i].Name); len(got) == 0 || got[0] != "Pxe" {
			t.Errorf("node %s: power-ons booted from %q, want Pxe first", c.Nodes[i].Name, got)
		}
		if first := firstStart(t, vm.ConsoleLog()); !strings.Contains(first, "-boot once=n") || strings.Contains(first, "Booting from Hard Disk") ||
			!strings.Contains(first, "Booting from ROM") {
			t.Errorf("node %s: its first start did not boot the network first:\n%s", c.Nodes[i].Name, first)
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
	testfix.WaitFor(t, "the healthy VM to power itself off", 60*time.Second, func() bool { return bmcs[0].Power(node) == "Off" })
	if got := power("status"); !strings.Contains(got, `"state": "off"`) {
		t.Errorf("power status of a VM that exited: %s", got)
	}
	power("on")
	testfix.WaitFor(t, "power on to start the VM (the BMC lags 500 ms)", 60*time.Second, func() bool { return bmcs[0].Power(node) == "On" })
	if got := power("status"); !strings.Contains(got, `"state": "on"`) {
		t.Errorf("power status of a running VM: %s", got)
	}
	power("off")
	testfix.WaitFor(t, "power off to stop the VM", 60*time.Second, func() bool { return bmcs[0].Power(node) == "Off" })
	for i, b := range bmcs {
		if n := b.Sessions(); n != 0 {
			t.Errorf("BMC %d: %d sessions left open", i, n)
		}
	}
}

// diskFirst makes a VM's firmware try its disk first (it has none, so SeaBIOS then falls back
// to the NIC's ROM): a VM that boots the network first did so because of the one-time override.
func diskFirst(argv []string) []string {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == "-boot" {
			argv[i+1] = "order=c,menu=off"
		}
	}
	return argv
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
