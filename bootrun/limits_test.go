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
	for _, tc := range []struct {
		node, nic, floor float64
		caps             []int
	}{
		{node: 1000, nic: 100, floor: 1, caps: []int{8, 8}},  // 100 nodes' worth at 1 Mb/s: nothing binds, the NICs adapt from 8
		{node: 1000, nic: 100, floor: 25, caps: []int{4, 4}}, // 100/25: the NICs bind at 4
		{node: 10, nic: 100, floor: 25, caps: []int{8, 8}},   // each node alone gets 10 Mb/s: 10 of them fit
	} {
		g, a, batch := twoBoards(t, tc.node, tc.nic)
		lim, err := ComputeLimits(g, nil, a, batch, fabricsim.BootFlowConfig(4<<20, fabricsim.HTTP), tc.floor)
		if err != nil {
			t.Fatal(err)
		}
		if len(lim.Caps) != len(tc.caps) || lim.Caps[0] != tc.caps[0] || lim.Caps[1] != tc.caps[1] {
			t.Fatalf("%+v: caps %v (%v), want %v on the server NICs", tc, lim.Caps, lim.Names, tc.caps)
		}
		for r, u := range lim.Users {
			if u != 8 || lim.CapacityMbps[r] != tc.nic {
				t.Errorf("%+v: %s has %d nodes behind it and %v Mb/s, want 8 and the NIC's", tc, lim.Names[r], u, lim.CapacityMbps[r])
			}
		}
		for i, res := range lim.Nodes {
			if len(res) != 1 {
				t.Errorf("%+v: node %d holds %v, want its server's NIC alone", tc, i, res)
			}
		}
	}
}

// twoBoards is two boards of 8 nodes behind links of nodeMbps, each board's server behind a NIC
// of nicMbps, assigned bcda, and its batch of every node.
func twoBoards(t *testing.T, nodeMbps, nicMbps float64) (*topology.Graph, *mapping.Assignment, []int) {
	m := &topology.Machine{
		Name: "two-boards",
		Levels: []topology.LevelSpec{
			{Name: "board", Prefix: "b", Count: 2, Uplink: &topology.LinkSpec{Segment: "N2", CapacityMbps: 10000, LatencyUS: 10}},
			{Name: "node", Prefix: "n", Count: 8, Uplink: &topology.LinkSpec{Segment: "N1", CapacityMbps: nodeMbps, LatencyUS: 10}},
		},
		Servers: topology.ServerSpec{Count: 2, NIC: topology.LinkSpec{Segment: "N5", CapacityMbps: nicMbps, LatencyUS: 10}},
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
	return g, a, batch
}
