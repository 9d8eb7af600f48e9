package topology

import (
	"fmt"
	"slices"
)

// sunway is the paper's machine: 40 cabinets x 4 supernodes x 32 boards x 8 nodes, 160 boot
// servers, 20 on each of 8 cascade switches; segments N1..N5 as the SCDA/BCDA paper names them. The
// paper gives no latencies; 10 us per hop is a typical store-and-forward Ethernet switch hop.
func sunway() *Machine {
	return &Machine{
		Name:        "sunway",
		Description: "the SCDA/BCDA paper's machine: 40,960 nodes, 160 boot servers on 8 cascade switches",
		Levels: []LevelSpec{
			{Name: "cabinet", Prefix: "c", Count: 40},
			{Name: "supernode", Prefix: "s", Count: 4, Uplink: &LinkSpec{Segment: "N3", CapacityMbps: 20000, LatencyUS: 10}},
			{Name: "board", Prefix: "b", Count: 32, Uplink: &LinkSpec{Segment: "N2", CapacityMbps: 1000, LatencyUS: 10}},
			{Name: "node", Prefix: "n", Count: 8, Uplink: &LinkSpec{Segment: "N1", CapacityMbps: 1000, LatencyUS: 10}},
		},
		Servers: ServerSpec{
			Count: 160, PerCascade: 20,
			NIC:           LinkSpec{Segment: "N5", CapacityMbps: 1000, LatencyUS: 10},
			CascadeUplink: &LinkSpec{Segment: "N4", CapacityMbps: 20000, LatencyUS: 10},
		},
	}
}

// mini is a small machine of the same shape for tests and test clusters: 2 supernodes x 4 boards x
// 4 nodes = 32 nodes, 4 boot servers on 2 cascade switches. Capacities keep the paper's ratios
// between segments but at one tenth, so that a test cluster can shape them on one host.
func mini() *Machine {
	return &Machine{
		Name:        "mini",
		Description: "a small machine of the paper's shape for tests and test clusters",
		Levels: []LevelSpec{
			{Name: "supernode", Prefix: "s", Count: 2, Uplink: &LinkSpec{Segment: "N3", CapacityMbps: 2000, LatencyUS: 10}},
			{Name: "board", Prefix: "b", Count: 4, Uplink: &LinkSpec{Segment: "N2", CapacityMbps: 100, LatencyUS: 10}},
			{Name: "node", Prefix: "n", Count: 4, Uplink: &LinkSpec{Segment: "N1", CapacityMbps: 100, LatencyUS: 10}},
		},
		Servers: ServerSpec{
			Count: 4, PerCascade: 2,
			NIC:           LinkSpec{Segment: "N5", CapacityMbps: 100, LatencyUS: 10},
			CascadeUplink: &LinkSpec{Segment: "N4", CapacityMbps: 2000, LatencyUS: 10},
		},
	}
}

// FlatPerSwitch is how many nodes share one switch of a flat machine. 48 is the port count of the
// common top-of-rack switch (48 node ports and a few uplinks), so a flat machine's N2 links stand
// for real uplinks of a cluster that never described its network.
const FlatPerSwitch = 48

// Flat is the machine of a cluster with no topology file: its nodes dealt in order over
// ceil(len(names)/FlatPerSwitch) switches, as evenly as the equal counts of a hierarchy allow (a
// switch may have spare positions), each switch linked to a core that holds the boot servers.
// Links: 1 Gb/s node NICs (N1), 10 Gb/s switch uplinks (N2) and server NICs (N5), the usual
// Ethernet of a small cluster. Nodes are named by names (the inventory's), so that batches, tables
// and positions speak the admin's names; spare positions keep the level names (sw1-n11).
func Flat(names []string, servers int) *Machine {
	n := max(len(names), 1)
	switches := (n + FlatPerSwitch - 1) / FlatPerSwitch
	per := (n + switches - 1) / switches
	return &Machine{
		Name:        "flat",
		Description: fmt.Sprintf("a flat machine: %d nodes on %d switch(es) of up to %d, %d boot server(s) on the core", len(names), switches, FlatPerSwitch, servers),
		Levels: []LevelSpec{
			{Name: "switch", Prefix: "sw", Count: switches, Uplink: &LinkSpec{Segment: "N2", CapacityMbps: 10000, LatencyUS: 10}},
			{Name: "node", Prefix: "n", Count: per, Uplink: &LinkSpec{Segment: "N1", CapacityMbps: 1000, LatencyUS: 10}},
		},
		Servers:   ServerSpec{Count: servers, NIC: LinkSpec{Segment: "N5", CapacityMbps: 10000, LatencyUS: 10}},
		NodeNames: slices.Clone(names),
	}
}
