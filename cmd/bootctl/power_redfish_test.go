package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/internal/ipmisim"
	"github.com/bootfabric/bootfabric/internal/redfishsim"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/power"
)

// TestPowerMixedPlant runs the power commands on one inventory whose nodes have Redfish BMCs (two
// systems behind one address, over HTTPS with the CA given), an IPMI BMC and an exec driver: each
// node is driven by its own, and identify lights the Redfish nodes' LEDs and fails, classified,
// for the nodes whose driver has none.
func TestPowerMixedPlant(t *testing.T) {
	f := newPowerFixture(t) // s0-b0-n0: exec
	rf := redfishsim.Start(t, redfishsim.Options{TLS: true, Systems: []string{"s0-b0-n1", "s0-b0-n2"}})
	ipmi := ipmisim.Start(t, ipmisim.Options{Password: "pw-ipmi"})
	inv := testfix.WriteFile(t, filepath.Join(f.dir, "mixed.csv"), []byte("name,mac,bmc,bmc_driver,bmc_creds\n"+
		"s0-b0-n0,52:54:00:00:00:01,10.1.0.1,exec,\n"+
		fmt.Sprintf("s0-b0-n1,52:54:00:00:00:02,%s,redfish,rf\n", rf.Host())+
		fmt.Sprintf("s0-b0-n2,52:54:00:00:00:03,%s,redfish,rf\n", rf.Host())+
		fmt.Sprintf("s0-b0-n3,52:54:00:00:00:04,%s,ipmi,ipmi\n", ipmi.Addr())))
	creds := filepath.Join(f.dir, "mixed-creds.yaml")
	os.WriteFile(creds, []byte(fmt.Sprintf("default: {user: admin, password: pw}\nrf: {user: %s, password: %s}\nipmi: {user: %s, password: pw-ipmi}\n",
		rf.User, rf.Password, ipmi.User)), 0o600)
	ctx := context.Background()
	run := func(op string, args ...string) (int, powerResult, string) {
		all := append([]string{"power", op, "--inventory", inv, "--topology", "mini", "--credentials", creds,
			"--exec-templates", f.templates, "--redfish-ca", rf.CAFile, "--interval", "0s", "--timeout", "20s", "-o", "json"}, args...)
		code, out, errs := runBootctl(t, ctx, all...)
		return code, decodeJSONOut[powerResult](t, out), errs
	}
	if code, res, errs := run("pxe", "--mode", "uefi", "s0-b0-n[0-3]"); code != 0 {
		t.Fatalf("pxe: %d %s %+v", code, errs, res)
	}
	if code, res, errs := run("on", "s0-b0-n[0-3]"); code != 0 {
		t.Fatalf("on: %d %s %+v", code, errs, res)
	}
	if rf.Power("s0-b0-n1") != "On" || rf.Power("s0-b0-n2") != "On" || ipmi.Power() != "on" || ipmi.Boot() != "pxe" {
		t.Errorf("after pxe and on: redfish %s %s, ipmi %s boot %s", rf.Power("s0-b0-n1"), rf.Power("s0-b0-n2"), ipmi.Power(), ipmi.Boot())
	}
	for _, id := range []string{"s0-b0-n1", "s0-b0-n2"} {
		if got := rf.Boots(id); len(got) != 1 || got[0] != "Pxe" {
			t.Errorf("%s booted from %q, want Pxe", id, got)
		}
	}
	if !strings.Contains(f.calls(t), "pxe s0-b0-n0 uefi\n") {
		t.Errorf("exec calls:\n%s", f.calls(t))
	}
	if _, res, _ := run("status", "s0-b0-n[1-3]"); res.Result[0].State != power.On || res.Result[2].State != power.On {
		t.Errorf("status: %+v", res.Result)
	}

	code, res, errs := run("identify", "s0-b0-n[0-2]", "on")
	want := map[string]power.Class{"s0-b0-n0": power.Failed, "s0-b0-n1": "", "s0-b0-n2": ""}
	for _, r := range res.Result {
		if r.Class != want[r.Node] || r.Op != power.OpIdentify {
			t.Errorf("identify %s: %q %s, want class %q", r.Node, r.Class, r.Error, want[r.Node])
		}
	}
	if code != 1 || !strings.Contains(errs, "1 of 3 nodes failed") || !rf.LED("s0-b0-n1") || !rf.LED("s0-b0-n2") {
		t.Errorf("identify on: exit %d %q, LEDs %v %v", code, errs, rf.LED("s0-b0-n1"), rf.LED("s0-b0-n2"))
	}
	if code, _, errs := run("identify", "s0-b0-n2", "off"); code != 0 || rf.LED("s0-b0-n2") || !rf.LED("s0-b0-n1") {
		t.Errorf("identify off: exit %d %s, LEDs %v %v", code, errs, rf.LED("s0-b0-n1"), rf.LED("s0-b0-n2"))
	}
	if n := rf.Sessions(); n != 0 {
		t.Errorf("%d Redfish sessions left open", n)
	}
}

// TestPowerRedfishBadInput checks that the Redfish options and identify's arguments are refused,
// one line naming what, before any BMC is asked.
func TestPowerRedfishBadInput(t *testing.T) {
	f := newPowerFixture(t)
	rfInv := testfix.WriteFile(t, filepath.Join(f.dir, "rf.csv"), []byte("name,mac,bmc,bmc_driver\ns0-b0-n0,52:54:00:00:00:01,127.0.0.1:1,redfish\n"))
	notPEM := testfix.WriteFile(t, filepath.Join(f.dir, "ca.pem"), []byte("not a certificate\n"))
	ctx := context.Background()
	base := []string{"--inventory", rfInv, "--topology", "mini", "--credentials", f.creds}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"CA not PEM", append([]string{"power", "on", "--redfish-ca", notPEM}, append(base, "s0-b0-n0")...), "--redfish-ca: redfish CA " + notPEM + ": no PEM certificate"},
		{"CA and insecure", append([]string{"power", "on", "--redfish-ca", notPEM, "--redfish-insecure-skip-verify"}, append(base, "s0-b0-n0")...), "give one, not both"},
		{"identify without on|off", append([]string{"power", "identify"}, append(base, "s0-b0-n0")...), "the last argument must be on or off"},
		{"identify with nothing", append([]string{"power", "identify"}, base...), "the last argument must be on or off"},
		{"identify with no nodes", append([]string{"power", "identify"}, append(base, "on")...), "give the NODES"},
		{"mode", append([]string{"power", "pxe", "--mode", "floppy"}, append(base, "s0-b0-n0")...), "floppy"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantBadInput(t, ctx, tc.args, tc.want) })
	}
}
