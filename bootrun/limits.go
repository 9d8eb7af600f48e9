package bootrun

import (
	"fmt"
	"math"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// DefaultTransferSeconds makes the default floor: the rate at which a node's boot files arrive
// within a minute, well inside the time firmware and boot loaders wait before they give up and
// start over.
const DefaultTransferSeconds = 60

// DefaultFloorMbps is the default per-node floor for a node fetching the files of cfg: its files
// in DefaultTransferSeconds, and never below 1 Mb/s.
func DefaultFloorMbps(cfg fabricsim.FlowConfig) float64 {
	return max(1, totalBytes(cfg)*8/1e6/DefaultTransferSeconds)
}

// Limits is what admission needs from the machine: each node's resources and each resource's
// cap in nodes.
type Limits struct {
	// Caps and Names are by resource: a channel of a node's route (a bottleneck segment, or a
	// boot server's link) that more batch nodes cross than it can carry at the floor.
	// A channel that no cap binds is a resource too when it is some node's narrowest share (its
	// bottleneck): the run's limits start there and adapt to what it measures.
	Caps  []int    `json:"caps"`
	Names []string `json:"names"`
	// Users counts the batch nodes behind each resource: a cap below it binds.
	Users []int `json:"users"`
	// CapacityMbps is each resource's capacity: with the firmware's patience, once the run has
	// learned it, it bounds the nodes that can share the resource (Config.CapacityMbps).
	CapacityMbps []float64 `json:"capacity_mbps"`
	// Nodes holds each batch position's resources.
	Nodes [][]int32 `json:"-"`
	// FloorMbps is the per-node bandwidth the caps keep every node in flight above.
	FloorMbps float64 `json:"floor_mbps"`
}

// ComputeLimits makes the admission limits of booting batch under a on g with routes r (nil:
// g's tree routes). A channel's cap is how many nodes it carries at floorMbps each (or at a
// node's own rate alone, if that is less): every node in flight keeps at least the floor
// however many fetch at once, and the bottleneck stays full while the floor is well below what
// one node can take. floorMbps 0: DefaultFloorMbps.
func ComputeLimits(g *topology.Graph, r topology.Router, a *mapping.Assignment, batch []int, cfg fabricsim.FlowConfig, floorMbps float64) (*Limits, error) {
	if r == nil {
		if r = g.TreeRouter(); r == nil {
			return nil, fmt.Errorf("boot limits: %s is not a tree; a router is needed", g.Name)
		}
	}
	if !(floorMbps >= 0) || math.IsInf(floorMbps, 0) {
		return nil, fmt.Errorf("boot limits: floor %v Mb/s: want a non-negative number", floorMbps)
	}
	if floorMbps == 0 {
		floorMbps = DefaultFloorMbps(cfg)
	}
	routes, alone, err := batchRoutes(g, r, a, batch, cfg)
	if err != nil {
		return nil, err
	}
	lim := &Limits{FloorMbps: floorMbps, Nodes: make([][]int32, len(batch))}
	res := lim.channelCaps(g, routes, alone)
	for i, route := range routes {
		for _, c := range route {
			if res[c] >= 0 {
				lim.Nodes[i] = append(lim.Nodes[i], res[c])
			}
		}
	}
	lim.serverCaps(g, a, batch, cfg.ServerCapMbps)
	return lim, nil
}

// channelCaps adds a resource for every channel that more nodes cross than it carries at the
// floor, and returns each channel's resource (-1: none).
func (lim *Limits) channelCaps(g *topology.Graph, routes [][]topology.Channel, alone []float64) []int32 {
	// slow is the slowest node's rate alone: the channel's nodes each fetch at the floor or at
	// that, if it is less.
	users, slow := make([]int, g.NumChannels()), make([]float64, g.NumChannels())
	for i, route := range routes {
		for _, c := range route {
			if users[c] == 0 || alone[i] < slow[c] {
				slow[c] = alone[i]
			}
			users[c]++
		}
	}
	narrow := narrowest(g, routes, users)
	res := make([]int32, g.NumChannels())
	for c := range res {
		res[c] = -1
		if users[c] == 0 {
			continue
		}
		capacity := g.ChannelCapacity(topology.Channel(c))
		if cp := max(1, int(capacity/min(slow[c], lim.FloorMbps))); users[c] > cp || narrow[c] {
			res[c] = int32(len(lim.Caps))
			lim.Caps = append(lim.Caps, min(cp, users[c]))
			lim.Users = append(lim.Users, users[c])
			lim.Names = append(lim.Names, channelName(g, topology.Channel(c)))
			lim.CapacityMbps = append(lim.CapacityMbps, capacity)
		}
	}
	return res
}

// narrowest marks each node's narrowest share: the channel whose capacity per node (users) is
// least on its route.
func narrowest(g *topology.Graph, routes [][]topology.Channel, users []int) []bool {
	narrow := make([]bool, g.NumChannels())
	for _, route := range routes {
		best, share := topology.Channel(-1), math.Inf(1)
		for _, c := range route {
			if s := g.ChannelCapacity(c) / float64(users[c]); users[c] > 1 && s < share {
				best, share = c, s
			}
		}
		if best >= 0 {
			narrow[best] = true
		}
	}
	return narrow
}

// batchRoutes returns every batch node's route from its server and the rate it reaches alone:
// its route's narrowest link, or its protocol's cap on its largest file.
func batchRoutes(g *topology.Graph, r topology.Router, a *mapping.Assignment, batch []int, cfg fabricsim.FlowConfig) ([][]topology.Channel, []float64, error) {
	routes := make([][]topology.Channel, len(batch))
	alone := make([]float64, len(batch))
	for i, node := range batch {
		if node < 0 || node >= len(a.Server) || a.Server[node] < 0 {
			return nil, nil, fmt.Errorf("boot limits: batch node %d has no boot server", node)
		}
		route, err := r.Route(nil, g.Servers()[a.Server[node]], g.Nodes()[node])
		if err != nil {
			return nil, nil, fmt.Errorf("boot limits: node %s: %w", g.VertexName(g.Nodes()[node]), err)
		}
		routes[i] = route
		rate, lat := math.Inf(1), 0.0
		for _, c := range route {
			rate = min(rate, g.ChannelCapacity(c))
			lat += g.Link(c.Link()).LatencyUS
		}
		alone[i] = min(rate, protocolCap(cfg, 2*lat*1e-6+cfg.ServerSeconds))
	}
	return routes, alone, nil
}

// protocolCap is the rate (Mb/s) one node's largest file reaches alone at round trip rtt: what
// a TFTP window or an HTTP window allows.
func protocolCap(cfg fabricsim.FlowConfig, rtt float64) float64 {
	if cfg.RTTSeconds > 0 {
		rtt = cfg.RTTSeconds
	}
	var big fabricsim.File
	for _, f := range cfg.Files {
		if f.Bytes > big.Bytes {
			big = f
		}
	}
	if !(rtt > 0) || big.Bytes == 0 {
		return math.Inf(1)
	}
	switch big.Protocol {
	case fabricsim.TFTP:
		return float64(cfg.TFTPBlockSize*cfg.TFTPWindowSize) * 8 / rtt / 1e6
	case fabricsim.HTTP:
		return cfg.HTTPWindowBytes * 8 / rtt / 1e6
	}
	return math.Inf(1)
}

func channelName(g *topology.Graph, c topology.Channel) string {
	l := g.Link(c.Link())
	return fmt.Sprintf("%s %s>%s", g.Segment(l.Segment), g.VertexName(g.ChannelFrom(c)), g.VertexName(g.ChannelTo(c)))
}

// serverCaps adds a resource per boot server whose own cap (disk or CPU: FlowConfig's
// ServerCapMbps, times the headroom) binds before its links do.
func (lim *Limits) serverCaps(g *topology.Graph, a *mapping.Assignment, batch []int, capMbps float64) {
	if !(capMbps > 0) {
		return
	}
	users := make([]int, len(g.Servers()))
	for _, node := range batch {
		users[a.Server[node]]++
	}
	res := make([]int32, len(users))
	cp := max(1, int(capMbps/lim.FloorMbps))
	for s, n := range users {
		res[s] = -1
		if n > cp {
			res[s] = int32(len(lim.Caps))
			lim.Caps = append(lim.Caps, cp)
			lim.Users = append(lim.Users, n)
			lim.Names = append(lim.Names, "server "+g.VertexName(g.Servers()[s]))
			lim.CapacityMbps = append(lim.CapacityMbps, capMbps)
		}
	}
	for i, node := range batch {
		if r := res[a.Server[node]]; r >= 0 {
			lim.Nodes[i] = append(lim.Nodes[i], r)
		}
	}
}

func totalBytes(cfg fabricsim.FlowConfig) float64 {
	t := 0.0
	for _, f := range cfg.Files {
		t += f.Bytes
	}
	return t
}
