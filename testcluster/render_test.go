package testcluster

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap"
)

// TestSummariesTable: cluster status in table mode is a table, one row per server.
func TestSummariesTable(t *testing.T) {
	sums := []ServerSummary{
		{Server: "bs0", IP: "10.0.0.1", Summary: json.RawMessage(`{"server":"bs0","nodes":16,"health":{"status":"healthy","healthy":16},"boot_seconds":{"count":16,"min":1.23,"median":2.5,"max":3.75}}`)},
		{Server: "bs1", IP: "10.0.0.2", Summary: json.RawMessage(`{"server":"bs1","nodes":16,"health":{"status":"booting","healthy":3,"booting":13}}`)},
	}
	var b strings.Builder
	if err := WriteSummaries(&b, sums); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || strings.Contains(b.String(), "{") {
		t.Fatalf("not a table of 2 servers:\n%s", b.String())
	}
	for i, want := range []string{"server ip nodes health healthy failed booting pending boot s min median max",
		"bs0 10.0.0.1 16 healthy 16 0 0 0 1.2 2.5 3.8", "bs1 10.0.0.2 16 booting 3 0 13 0 - - -"} {
		if got := strings.Join(strings.Fields(lines[i]), " "); got != want {
			t.Errorf("line %d: %q, want %q", i, got, want)
		}
	}
}

// TestMeasurementsTable: a row per mapping, the speed-up of the second over the first, and with
// nodes a table per mapping.
func TestMeasurementsTable(t *testing.T) {
	rs := []*Measurement{{Algo: "scda", Measured: 20, Predicted: 10, Nodes: []NodeCompare{{Node: "n0", Measured: 20}}}, {Algo: "bcda", Measured: 10, Predicted: 10}}
	for _, tc := range []struct {
		nodes bool
		want  string
	}{{false, "bcda/scda speed-up: measured 2.00, predicted 1.00 (+100.0%)\n"}, {true, "\nscda\n"}} {
		var b strings.Builder
		if err := WriteMeasurements(&b, rs, tc.nodes); err != nil || !strings.Contains(b.String(), tc.want) || strings.Contains(b.String(), "\nbcda\n") != tc.nodes {
			t.Errorf("nodes %v: %v, no %q in\n%s", tc.nodes, err, tc.want, b.String())
		}
	}
}

// TestLabBMCReportText: a VM's BMC names its console and QMP socket, a --command BMC its systems
// and where their output goes, and a Redfish BMC its certificate.
func TestLabBMCReportText(t *testing.T) {
	for _, tc := range []struct {
		r    LabBMCReport
		want []string
	}{
		{LabBMCReport{Endpoint: "ipmi://127.0.0.1:623", BMC: "127.0.0.1:623", BMCDriver: "ipmi", System: "vm0", User: "admin", QMP: "/d/qmp.sock", Console: "/d/console.log"},
			[]string{"IPMI BMC for system vm0 at ipmi://127.0.0.1:623 (user admin)\n", "inventory columns: bmc=127.0.0.1:623 bmc_driver=ipmi\n", "QMP socket: /d/qmp.sock\n"}},
		{LabBMCReport{BMCDriver: "redfish", CA: "/d/ca.pem", Systems: []string{"n0", "n1"}, Logs: map[string]string{"n0": "/d/n0.log"}},
			[]string{"Redfish BMC", "its certificate (for --redfish-ca): /d/ca.pem\n", "systems: n0, n1 (each one's output: /d)\n"}},
	} {
		var b strings.Builder
		if err := tc.r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		for _, s := range tc.want {
			if !strings.Contains(b.String(), s) {
				t.Errorf("no %q in\n%s", s, b.String())
			}
		}
	}
}

// TestWriteUp: the line on the cluster, then how to drive its lab BMCs by their protocol.
func TestWriteUp(t *testing.T) {
	m, err := topology.Load("mini")
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Name: "t1", Machine: m, Scale: 0.5, Subnet: netip.MustParsePrefix("10.99.0.0/16")}
	cl := newCluster(spec, g, t.TempDir(), nil, zap.NewNop())
	for _, tc := range []struct {
		labs *LabBMCs
		want string
	}{
		{nil, "shaped at x0.5; mapping bcda\n"},
		{&LabBMCs{CA: "/d/ca.pem", Config: "/d/c.yaml", Credentials: "/d/creds", BMCs: map[string]string{"n0": "b"}}, "--redfish-ca /d/ca.pem\n"},
		{&LabBMCs{Config: "/d/c.yaml", Credentials: "/d/creds"}, "0 VMs behind IPMI BMCs"},
	} {
		var b strings.Builder
		if err := cl.WriteUp(&b, "bcda", tc.labs); err != nil || !strings.HasPrefix(b.String(), "cluster t1 up: ") || !strings.Contains(b.String(), tc.want) {
			t.Errorf("%v: no %q in\n%s", err, tc.want, b.String())
		}
	}
}
