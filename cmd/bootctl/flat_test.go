package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func flatInventory(t *testing.T, n int) string {
	var sb strings.Builder
	sb.WriteString("name,mac\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, "node%02d,52:54:00:00:01:%02x\n", i, i)
	}
	return writeFile(t, "inv.csv", sb.String())
}

// TestPlanSimulateInventory plans and simulates the flat machine of an inventory of plain names:
// no topology, ncda by default, batches by the admin's names, the same bytes every run.
func TestPlanSimulateInventory(t *testing.T) {
	inv := flatInventory(t, 12)
	code, out, errs := bootctl(t, "plan", "--inventory", inv)
	if code != 0 || !strings.HasPrefix(out, "flat: 12 nodes, 1 boot servers") || !strings.Contains(out, "ncda") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errs)
	}
	batch := writeFile(t, "batch.txt", "node03\nnode11\n")
	args := []string{"simulate", "--inventory", inv, "--servers", "2", "--batch", "@" + batch, "-o", "csv"}
	code, out, errs = bootctl(t, args...)
	if code != 0 || !strings.Contains(out, "node03") || !strings.Contains(out, "node11") || strings.Contains(out, "node01") {
		t.Fatalf("simulate: exit %d\n%s%s", code, out, errs)
	}
	if _, again, _ := bootctl(t, args...); again != out {
		t.Error("simulate: a second run wrote other bytes")
	}
	// 100 nodes: 3 switches of 34, 2 spare positions that no batch boots.
	code, out, errs = bootctl(t, "plan", "--inventory", flatInventory(t, 100), "--batch", "all", "-o", "csv")
	if code != 0 || !strings.Contains(out, ",100,") {
		t.Fatalf("plan 100: exit %d\n%s%s", code, out, errs)
	}
}

// TestInventoryFlagBadInput: each mistake is one line naming the flag or the file and line, exit 2.
func TestInventoryFlagBadInput(t *testing.T) {
	inv := flatInventory(t, 4)
	bad := writeFile(t, "bad.csv", "name,mac\nnode01,52:54:00:00:01:01\nnode02,zz\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--inventory", inv, "--topology", "mini"}, "--inventory: builds the flat machine of the inventory; drop --topology"},
		{[]string{"plan", "--servers", "2"}, "--servers: only with --inventory"},
		{[]string{"simulate", "--inventory", inv, "--servers", "0"}, "--servers: 0 is not 1-1024"},
		{[]string{"plan", "--inventory", bad}, bad + `:3: mac: "zz" is not a MAC address`},
		{[]string{"plan", "--inventory", inv, "--algo", "bcda"}, `no level "board" (levels: switch, node)`},
		{[]string{"plan", "--inventory", flatInventory(t, 49), "--batch", "49-49"}, "--batch: nodes 49-49: no node of the inventory's 49, only spare switch ports"},
	} {
		code, out, errs := bootctl(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestPowerFlatInventory: power takes an inventory of plain names without --topology (the flat
// machine), and ranges name its nodes.
func TestPowerFlatInventory(t *testing.T) {
	f := newPowerFixture(t)
	inv := writeFile(t, "flat.csv", "name,mac,bmc,bmc_driver\nnode01,52:54:00:00:00:01,10.1.0.1,exec\nnode02,52:54:00:00:00:02,10.1.0.2,exec\n")
	code, _, errs := runBootctl(t, context.Background(), "power", "on", "--inventory", inv, "--credentials", f.creds,
		"--exec-templates", f.templates, "--interval", "0s", "node[01-02]")
	if c := f.calls(t); code != 0 || !strings.Contains(c, "on node01 10.1.0.1 admin\n") || !strings.Contains(c, "on node02 10.1.0.2 admin\n") {
		t.Errorf("power on: exit %d %s\ncalls:\n%s", code, errs, c)
	}
}
