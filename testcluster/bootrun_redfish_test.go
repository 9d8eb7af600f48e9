package testcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/redfishsim"
	"github.com/bootfabric/bootfabric/internal/testfix"
)

// TestBootRunRedfish: bootctl boot powers two QEMU VMs on through their Redfish BMCs (`bootctl
// cluster bmc` processes started by StartLabBMCs, each VM driven through QMP) with a one-time
// PXE override, and both end healthy; the VMs' firmware is set to boot from disk, so it is the
// override that made them boot from the network. The BMC that refuses the password is classified
// and the run goes on; power status, on and off agree with QEMU's own state.
func TestBootRunRedfish(t *testing.T) {
	vmLane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l := startLabBootCluster(t, ctx, "rf", bootRunBoard("bootrunrf3", 3), "redfish", 2)
	c, bin, labs := l.c, l.bin, l.labs
	// Two VMs behind Redfish BMCs; the third node's BMC refuses the password.
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

	records := l.boot(t, ctx, "--redfish-ca", ca)
	if len(records) != 3 {
		t.Fatalf("%d records, want 3", len(records))
	}
	for i, r := range records {
		switch {
		case i < 2 && r.Phase != "healthy":
			t.Errorf("node %s: %s %s, want healthy", r.Name, r.Phase, r.Class)
		case i == 2 && (r.Phase != "failed" || r.Class != "bmc-auth"):
			t.Errorf("node %s: %s %q, want failed bmc-auth", r.Name, r.Phase, r.Class)
		}
	}
	l.checkNetworkFirst(t, 2)
	if healthy := (&bootRunSetup{server: l.server}).healthyAt(t); len(healthy) != 2 {
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
	state := func() string { return l.powerState(t, ctx, node, "--redfish-ca", ca) }
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
