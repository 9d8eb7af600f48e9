// Package routing computes and checks unicast forwarding tables on fabrics described by a
// topology.Graph: Dmodk (closed formula on intact PGFTs), Dmodc (the fault-resilient variant with
// costs and dividers), up*/down*, min-hop and VTFTR (2-D fat-trees with leaf-switch faults).
//
// Every engine returns Tables: for each switch and destination endpoint, the out port and the
// virtual channel, one byte per entry where ports fit. Tables implement topology.Router, so any
// engine can give the simulator its paths. Check verifies reachability, loops, up*/down* order and
// deadlock freedom (acyclic channel-dependency graph per virtual channel) and measures congestion.
package routing
