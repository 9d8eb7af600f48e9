package bootrun

import (
	"testing"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// Each node's narrowest link is a resource whether or not the plan's floor makes it bind (its
// limit then starts at every node behind it and adapts), and only that one: the wider board
// uplinks are not.
func TestLimitsNarrowLinks(t *testing.T) {
	m := &topology.Machine{
		Name: "two-boards",
		Levels: []topology.LevelSpec{
			{Name: "board", Prefix: "b", Count: 2, Uplink: &topology.LinkSpec{Segment: "N2", CapacityMbps: 1000, LatencyUS: 10}},
			{Name: "node", Prefix: "n", Count: 8, Uplink: &topology.LinkSpec{Segment: "N1", CapacityMbps: 1000, LatencyUS: 10}},
		},
		Servers: topology.ServerSpec{Count: 2, NIC: topology.LinkSpec{Segment: "N5", CapacityMbps: 100, LatencyUS: 10}},
	}
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]int, len(g.Nodes()))
	for i := range batch {
		batch[i] = i
	}
	al, err := mapping.ParseAlgo("bcda", g.Hierarchy())
	if err != nil {
		t.Fatal(err)
	}
	a, err := mapping.Assign(g, al, batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	flow := fabricsim.BootFlowConfig(4<<20, fabricsim.HTTP)
	for _, tc := range []struct {
		floor float64
		caps  []int
	}{
		{floor: 1, caps: []int{8, 8}},  // 100 nodes' worth at 1 Mb/s: nothing binds, the NICs adapt from 8
		{floor: 25, caps: []int{4, 4}}, // 100/25: the NICs bind at 4
	} {
		lim, err := ComputeLimits(g, nil, a, batch, flow, tc.floor)
		if err != nil {
			t.Fatal(err)
		}
		if len(lim.Caps) != len(tc.caps) || lim.Caps[0] != tc.caps[0] || lim.Caps[1] != tc.caps[1] {
			t.Fatalf("floor %v: caps %v (%v), want %v on the server NICs", tc.floor, lim.Caps, lim.Names, tc.caps)
		}
		for r, u := range lim.Users {
			if u != 8 {
				t.Errorf("floor %v: %s has %d nodes behind it, want 8", tc.floor, lim.Names[r], u)
			}
		}
		for i, res := range lim.Nodes {
			if len(res) != 1 {
				t.Errorf("floor %v: node %d holds %v, want its server's NIC alone", tc.floor, i, res)
			}
		}
	}
}
