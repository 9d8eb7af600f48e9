package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/internal/ipmisim"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/power"
)

// powerFixture is an inventory of the mini machine whose first nodes have BMCs driven by the exec
// driver through a script that logs every call, and a credentials file.
type powerFixture struct {
	dir, inv, creds, templates, log string
}

func newPowerFixture(t *testing.T) *powerFixture {
	t.Helper()
	dir := t.TempDir()
	f := &powerFixture{dir: dir, log: filepath.Join(dir, "calls.log")}
	script := testfix.WriteFile(t, filepath.Join(dir, "bmc.sh"), []byte(`#!/bin/sh
echo "$*" >> `+f.log+`
[ "$1" = status ] && echo "Chassis Power is off"
exit 0
`))
	os.Chmod(script, 0o755)
	f.inv = testfix.WriteFile(t, filepath.Join(dir, "inv.csv"), []byte("name,mac,bmc,bmc_driver,bmc_creds\n"+
		"s0-b0-n0,52:54:00:00:00:01,10.1.0.1,exec,\n"+
		"s0-b0-n1,52:54:00:00:00:02,10.1.0.2,exec,rack1\n"+
		"s0-b0-n2,52:54:00:00:00:03,10.1.0.3,exec,\n"+
		"s0-b0-n3,52:54:00:00:00:04,,,\n"))
	f.creds = filepath.Join(dir, "creds.yaml")
	os.WriteFile(f.creds, []byte("default: {user: admin, password: pw}\nrack1: {user: root, password: pw2}\n"), 0o600)
	f.templates = testfix.WriteFile(t, filepath.Join(dir, "exec.yaml"), []byte(
		"on: "+script+" on {{.Node}} {{.BMC}} {{.User}}\noff: "+script+" off {{.Node}}\ncycle: "+script+" cycle {{.Node}}\n"+
			"status: "+script+" status {{.Node}}\npxe: "+script+" pxe {{.Node}} {{.Mode}}\n"))
	return f
}

func (f *powerFixture) args(op, nodes string, more ...string) []string {
	return append([]string{"power", op, "--inventory", f.inv, "--topology", "mini", "--credentials", f.creds,
		"--exec-templates", f.templates, "--interval", "0s"}, append(more, nodes)...)
}

func (f *powerFixture) calls(t *testing.T) string {
	b, err := os.ReadFile(f.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestPower runs power on and status on a range through the exec driver: every node's command
// ran once with its BMC and login, and status reads the state.
func TestPower(t *testing.T) {
	f := newPowerFixture(t)
	ctx := context.Background()
	code, out, errs := runBootctl(t, ctx, f.args("on", "s0-b0-n[0-2]")...)
	if code != 0 {
		t.Fatalf("power on: %d %s", code, errs)
	}
	for _, want := range []string{"on s0-b0-n0 10.1.0.1 admin\n", "on s0-b0-n1 10.1.0.2 root\n", "on s0-b0-n2 10.1.0.3 admin\n"} {
		if c := f.calls(t); strings.Count(c, want) != 1 {
			t.Errorf("calls:\n%s\nwant %q once", c, want)
		}
	}
	if !strings.Contains(out, "3 of 3 nodes done") {
		t.Errorf("power on table:\n%s", out)
	}
	code, out, _ = runBootctl(t, ctx, f.args("status", "s0-b0-n0,s0-b0-n2", "-o", "json")...)
	res := decodeJSONOut[powerResult](t, out)
	if code != 0 || res.Nodes != 2 || res.Result[1].Node != "s0-b0-n2" || res.Result[1].State != power.Off {
		t.Errorf("status: %d %+v", code, res)
	}
	code, _, _ = runBootctl(t, ctx, f.args("pxe", "s0-b0-n1", "--mode", "uefi")...)
	if c := f.calls(t); code != 0 || !strings.Contains(c, "pxe s0-b0-n1 uefi\n") {
		t.Errorf("pxe: %d\n%s", code, c)
	}
}

// TestPowerBadInput: an unknown node or range, a credentials file others may read, a node without
// a BMC, a misspelt driver, a bad flag: one line, exit 2, and no BMC asked.
func TestPowerBadInput(t *testing.T) {
	f := newPowerFixture(t)
	open := filepath.Join(f.dir, "open.yaml")
	os.WriteFile(open, []byte("default: {user: a, password: b}\n"), 0o644)
	os.Chmod(open, 0o644)
	badInv := testfix.WriteFile(t, filepath.Join(f.dir, "bad.csv"), []byte("name,mac,bmc,bmc_driver\ns0-b0-n0,52:54:00:00:00:01,10.1.0.1,redfsh\n"))
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown node", f.args("on", "s0-b0-n0,s9-b0-n0"), `NODES: "s9-b0-n0": not in the inventory`},
		{"bad range", f.args("on", "s0-b0-n[3-1]"), "runs backwards"},
		{"no bmc", f.args("on", "s0-b0-n[0-3]"), "inv.csv:5: node s0-b0-n3 has no bmc"},
		{"credentials readable by others", []string{"power", "on", "--inventory", f.inv, "--topology", "mini", "--credentials", open, "s0-b0-n0"}, "mode 0644 lets others read it"},
		{"driver misspelt", []string{"power", "on", "--inventory", badInv, "--topology", "mini", "--credentials", f.creds, "s0-b0-n0"}, `bad.csv:2: bmc_driver: "redfsh" is not a driver`},
		{"no credentials", []string{"power", "on", "--inventory", f.inv, "--topology", "mini", "s0-b0-n0"}, "--credentials: required"},
		{"bad mode", f.args("pxe", "s0-b0-n0", "--mode", "efi"), `--mode: "efi": want legacy, uefi or uefi-http`},
		{"no nodes", []string{"power", "on", "--inventory", f.inv, "--topology", "mini", "--credentials", f.creds}, "give the NODES (ranges, comma lists, @FILE or all) or --group"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantBadInput(t, ctx, tc.args, tc.want) })
	}
	if c := f.calls(t); c != "" {
		t.Errorf("a BMC was asked after bad input:\n%s", c)
	}
}

// TestPowerIPMI drives real BMCs (OpenIPMI's ipmi_sim) over RMCP+: power on and a one-time PXE
// boot land on the machines, status and off agree with them, and a BMC with a wrong password and
// one that is down are classified while the run goes on for the others.
func TestPowerIPMI(t *testing.T) {
	bmcs := []*ipmisim.BMC{ipmisim.Start(t, ipmisim.Options{Password: "pw-node0"}), ipmisim.Start(t, ipmisim.Options{Password: "pw-node1"}),
		ipmisim.Start(t, ipmisim.Options{Password: "other"}), ipmisim.Start(t, ipmisim.Options{Password: "pw-node3"})}
	bmcs[3].Stop()
	dir := t.TempDir()
	var inv strings.Builder
	inv.WriteString("name,mac,bmc,bmc_creds\n")
	var creds strings.Builder
	for i, b := range bmcs {
		fmt.Fprintf(&inv, "s0-b0-n%d,52:54:00:00:00:0%d,%s,n%d\n", i, i+1, b.Addr(), i)
		fmt.Fprintf(&creds, "n%d: {user: %s, password: pw-node%d}\n", i, b.User, i)
	}
	invFile := testfix.WriteFile(t, filepath.Join(dir, "inv.csv"), []byte(inv.String()))
	credFile := filepath.Join(dir, "creds.yaml")
	os.WriteFile(credFile, []byte(creds.String()), 0o600)
	ctx := context.Background()
	run := func(op, nodes string, more ...string) (int, powerResult, string) {
		args := append([]string{"power", op, "--inventory", invFile, "--topology", "mini", "--credentials", credFile, "--timeout", "20s", "-o", "json"}, more...)
		code, out, errs := runBootctl(t, ctx, append(args, nodes)...)
		return code, decodeJSONOut[powerResult](t, out), errs
	}
	code, res, errs := run("pxe", "s0-b0-n[0-3]", "--mode", "uefi")
	want := map[string]power.Class{"s0-b0-n0": "", "s0-b0-n1": "", "s0-b0-n2": power.AuthRefused, "s0-b0-n3": power.Unreachable}
	for _, r := range res.Result {
		if r.Class != want[r.Node] || strings.Contains(r.Error, "other") {
			t.Errorf("pxe %s: %q %s, want class %q", r.Node, r.Class, r.Error, want[r.Node])
		}
	}
	if code != 1 || res.Failed != 2 || !strings.Contains(errs, "2 of 4 nodes failed") {
		t.Errorf("pxe: exit %d, %d failed, stderr %q", code, res.Failed, errs)
	}
	if code, _, errs := run("on", "s0-b0-n[0-1]"); code != 0 {
		t.Fatalf("on: %d %s", code, errs)
	}
	for _, b := range bmcs[:2] {
		if b.Power() != "on" || b.Boot() != "pxe" {
			t.Errorf("BMC %s after pxe and on: power %s, boot %s", b.Addr(), b.Power(), b.Boot())
		}
	}
	bmcs[1].SetPower("off") // the machine went down behind the BMC's back: status must say so
	if _, res, _ := run("status", "s0-b0-n[0-1]"); res.Result[0].State != power.On || res.Result[1].State != power.Off {
		t.Errorf("status: %+v", res.Result)
	}
	if code, _, errs := run("off", "s0-b0-n0"); code != 0 || bmcs[0].Power() != "off" {
		t.Errorf("off: %d %s, BMC says %s", code, errs, bmcs[0].Power())
	}
}

// wantBadInput runs bootctl with args and checks that it refuses them as bad input: exit 2 and
// one line naming want.
func wantBadInput(t *testing.T, ctx context.Context, args []string, want string) {
	t.Helper()
	code, _, errs := runBootctl(t, ctx, args...)
	if code != 2 || !strings.Contains(errs, want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
		t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, errs, want)
	}
}
