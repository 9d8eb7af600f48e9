package power

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNewController: each driver makes its controller; an unknown driver, or exec without
// templates, is an error naming it.
func TestNewController(t *testing.T) {
	tmpl := &ExecTemplates{On: "true", Off: "true", Cycle: "true", Status: "echo on", PXE: "true"}
	login := Credential{User: "admin", Password: "pw"}
	for _, tc := range []struct {
		bmc     BMC
		opts    ControllerOptions
		wantErr string
	}{
		{BMC{Node: "n0", Driver: "ipmi", Address: "10.0.0.1:623"}, ControllerOptions{}, ""},
		{BMC{Node: "n0", Driver: "redfish", Address: "https://10.0.0.1"}, ControllerOptions{}, ""},
		{BMC{Node: "n0", Driver: "exec", Address: "10.0.0.1"}, ControllerOptions{Exec: tmpl}, ""},
		{BMC{Node: "n0", Driver: "exec", Address: "10.0.0.1"}, ControllerOptions{}, "no command templates"},
		{BMC{Node: "n0", Driver: "snmp", Address: "10.0.0.1"}, ControllerOptions{}, `driver "snmp"`},
	} {
		c, err := NewController(tc.bmc, login, tc.opts)
		switch {
		case tc.wantErr == "" && (err != nil || c == nil):
			t.Errorf("%s: %v", tc.bmc.Driver, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: err %v, want %q", tc.bmc.Driver, err, tc.wantErr)
		}
	}
}

func TestLoadExecTemplates(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("on: ipmitool on\nstatus: ipmitool status\n"), 0o600)
	os.WriteFile(bad, []byte("on: [\n"), 0o600)
	if tp, err := LoadExecTemplates(good); err != nil || tp.On != "ipmitool on" || tp.Status != "ipmitool status" {
		t.Errorf("good: %+v, %v", tp, err)
	}
	if _, err := LoadExecTemplates(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad: err %v, want one naming %s", err, bad)
	}
	if _, err := LoadExecTemplates(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing file: no error")
	}
}

// TestReport: failures are counted, and the table shows each node's result and how many were done.
func TestReport(t *testing.T) {
	r := NewReport(OpOn, []Result{{Node: "n0", BMC: "b0", Op: OpOn, State: "on"}, {Node: "n1", BMC: "b1", Op: OpOn, Class: "auth", Error: "refused"}})
	if r.Nodes != 2 || r.Failed != 1 || !slices.Equal(r.Done(), []string{"n0"}) {
		t.Fatalf("report %+v, done %v", r, r.Done())
	}
	if got := TargetNodes([]Target{{Node: "n0"}, {Node: "n1"}}); !slices.Equal(got, []string{"n0", "n1"}) {
		t.Errorf("TargetNodes = %v", got)
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"auth: refused\n", " ok\n", "\n1 of 2 nodes done\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}
