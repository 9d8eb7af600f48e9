// Package topology describes a machine as a graph: compute nodes and boot servers as endpoints,
// switches with a level, and links with a capacity (Mb/s), a latency and a segment label such as
// N1..N5. Hierarchical machines also carry named levels (cabinet, supernode, board, node) so that a
// node's position can be named at any level and mapping can speak of blocks.
//
// The package is pure data: it imports nothing of bootfabric's. Routes are asked of a Router; on a
// tree the route between two vertices is unique and Graph.TreeRouter supplies it, on fabrics with
// choices the routing package does.
package topology
