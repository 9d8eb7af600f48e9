package topology

// sunway is the paper's machine: 40 cabinets x 4 supernodes x 32 boards x 8 nodes, 160 boot
// servers, 20 on each of 8 cascade switches; segments N1..N5 as in the papers README. The paper
// gives no latencies; 10 us per hop is a typical store-and-forward Ethernet switch hop.
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
