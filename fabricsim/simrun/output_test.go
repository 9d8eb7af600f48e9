package simrun

import (
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/topology"
)

// result is a hand-made two-node result: every figure the writers print is chosen, so the
// expected text is known without running the simulator.
func result(failure *fabricsim.FailureSummary) *fabricsim.FlowResult {
	return &fabricsim.FlowResult{
		Nodes: 2, ServersUsed: 1, BatchSeconds: 3.25,
		Files:       []fabricsim.File{{Name: "initrd", Bytes: 40e6, Protocol: fabricsim.TFTP}},
		Completion:  fabricsim.Distribution{Min: 1, P50: 2, P90: 3, P99: 3.25, Max: 3.25, Mean: 2.125},
		Segments:    []fabricsim.SegmentUsage{{Name: "N2", Channels: 4, CapacityMbps: 1000, Bytes: 80e6, PeakMbps: 500, PeakUtilisation: 0.5, BottleneckNodes: 2}},
		Bottlenecks: []fabricsim.BottleneckShare{{Limit: "N2", Nodes: 2}, {Limit: "tftp", Nodes: 1}},
		NodeResults: []fabricsim.NodeResult{
			{Name: "n0", Server: "bs0", DoneSeconds: 1, Bottleneck: "N2", BoundSeconds: 0.5},
			{Name: "n1", Server: "bs0", ArrivalSeconds: 0.5, DoneSeconds: 3.25, Bottleneck: "tftp", BoundSeconds: 2}},
		Failure: failure,
	}
}

func TestWriters(t *testing.T) {
	g, err := topology.Flat([]string{"n0", "n1"}, 1).Build()
	if err != nil {
		t.Fatal(err)
	}
	fail := &fabricsim.FailureSummary{DetectSeconds: 1, BatchSeconds: 4, BaselineBatchSeconds: 3.25, ExtraSeconds: 0.75,
		TakenOver: 1, Restarted: 1, Effect: true, Nodes: []fabricsim.NodeTakeover{{}, {Restarted: true, Servers: []string{"bs0", "bs1"}}},
		Servers: []fabricsim.ServerTakeover{{Server: "bs0", FailSeconds: 2, DetectedSeconds: 3, MidBoot: 1, Done: 1,
			NewOwners: []fabricsim.OwnerShare{{Server: "bs1", Nodes: 1}, {Server: "bs2", Nodes: 1}, {Server: "bs3", Nodes: 1}, {Server: "bs4", Nodes: 1}, {Server: "bs5", Nodes: 1}}}}}
	tests := []struct {
		name  string
		write func(*strings.Builder) error
		want  []string
	}{
		{"csv", func(b *strings.Builder) error {
			return WriteCSV(b, []Run{{Batch: "all", Algo: "bcda", Result: result(nil)}})
		},
			[]string{"batch,algo,node,server,arrival_seconds,done_seconds,bottleneck,bound_seconds\nall,bcda,n0,bs0,0,1,N2,0.5\nall,bcda,n1,bs0,0.5,3.25,tftp,2\n"}},
		{"csv with failures", func(b *strings.Builder) error {
			return WriteCSV(b, []Run{{Batch: "all", Algo: "bcda", Delivery: "unicast", Result: result(fail)}})
		}, []string{",bound_seconds,delivery,restarted,servers\n", "all,bcda,n0,bs0,0,1,N2,0.5,unicast,false,bs0\n", "n1,bs0,0.5,3.25,tftp,2,unicast,true,bs0 bs1\n"}},
		{"one run in full", func(b *strings.Builder) error {
			return WriteTable(b, g, []Run{{Batch: "all", Algo: "bcda", Result: result(nil)}})
		},
			[]string{": batch all (2 nodes, 1 servers used), bcda; files: initrd 40 MB tftp\nbatch time 3.250 s\n",
				"completion  1.000  2.000  3.000  3.250  3.250  2.125", "N2         4           1000", "tftp cap"}},
		{"summary", func(b *strings.Builder) error {
			return WriteTable(b, g, []Run{{Batch: "all", Algo: "bcda", Result: result(nil)}, {Batch: "all", Algo: "scda", Result: result(nil)}})
		}, []string{"2 nodes, 1 boot servers; completion times in seconds", "all      2  scda  1.000  2.000  3.000  3.250  3.250              N2 (2)"}},
		{"failures", func(b *strings.Builder) error {
			return WriteFailures(b, []Run{{Batch: "all", Algo: "bcda", Result: result(fail)}})
		},
			[]string{"detected after 1.000 s: batch time 4.000 s with them, 3.250 s without (+0.750 s); nodes taken over 1, restarted 1",
				"bs1 (1), bs2 (1), bs3 (1), bs4 (1), +1 more"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := tc.write(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestWriteHealthOncePerBatch(t *testing.T) {
	res, err := fabricsim.SimulateHealth(fabricsim.DefaultHealthConfig(fabricsim.HealthBinomial, 8))
	if err != nil {
		t.Fatal(err)
	}
	h := &Health{HealthResult: &res}
	var b strings.Builder
	runs := []Run{{Batch: "b0", Result: result(nil), Health: h}, {Batch: "b0", Result: result(nil), Health: h}}
	if err := WriteHealth(&b, runs); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "health aggregation of batch b0"); n != 1 {
		t.Errorf("%d health sections for one batch, want 1:\n%s", n, b.String())
	}
	if !strings.Contains(b.String(), "healthy 8, failed 0, unreachable 0") {
		t.Errorf("no counts of 8 healthy nodes:\n%s", b.String())
	}
}
