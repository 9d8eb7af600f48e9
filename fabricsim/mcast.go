package fabricsim

import (
	"context"
	"fmt"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/routing"
	"github.com/bootfabric/bootfabric/topology"
)

// MulticastTrees are the delivery trees of multicast boots: for each boot server (by index), the
// channels of its tree directed away from the server, or nil for a server that sends by unicast.
//
// In the flow model a tree is one flow: every channel of the tree carries one copy, so the tree's
// rate is limited by each of its channels (counted once) and it shares them max-min with the
// other trees and with unicast flows. Its members start together when they arrive together;
// members arriving at different events get copies of their own (one flow per arrival event),
// and a tree's members all go at the pace of its farthest member (protocol caps use that round
// trip).
type MulticastTrees struct {
	Algorithm routing.McastAlgorithm
	Channels  [][]topology.Channel
	// Links is the number of links of each server's tree (0 for unicast servers).
	Links []int
}

// BuildMulticastTrees builds one tree per boot server over the server and its nodes in batch
// under a, with algorithm alg on the hop tables h (nil: computed here; pass them when building
// several times on one graph). On a hierarchical machine, a tree graph, every algorithm gives the
// unique tree paths.
func BuildMulticastTrees(g *topology.Graph, h *routing.HopTable, a *mapping.Assignment, batch []int, alg routing.McastAlgorithm) (*MulticastTrees, error) {
	if h == nil {
		var err error
		if h, err = routing.NewHopTable(g, 0); err != nil {
			return nil, err
		}
	} else if h.Graph() != g {
		return nil, fmt.Errorf("multicast trees: hop tables of %s, not of %s", h.Graph().Name, g.Name)
	}
	groups, err := routing.ServerGroups(g, a.Server, batch)
	if err != nil {
		return nil, err
	}
	res, err := routing.RouteMulticast(h, groups, alg, routing.McastOptions{})
	if err != nil {
		return nil, err
	}
	mt := &MulticastTrees{Algorithm: alg, Channels: make([][]topology.Channel, len(g.Servers())), Links: make([]int, len(g.Servers()))}
	srvIdx := make(map[topology.VertexID]int, len(g.Servers()))
	for i, v := range g.Servers() {
		srvIdx[v] = i
	}
	for gi, t := range res.Trees {
		src := groups[gi].Members[0] // ServerGroups puts the server first
		ch, err := orientTree(g, src, t.Links)
		if err != nil {
			return nil, fmt.Errorf("multicast tree of %s: %w", groups[gi].Name, err)
		}
		mt.Channels[srvIdx[src]] = ch
		mt.Links[srvIdx[src]] = len(t.Links)
	}
	return mt, nil
}

// orientTree directs the tree links away from src, in breadth-first order.
func orientTree(g *topology.Graph, src topology.VertexID, links []topology.LinkID) ([]topology.Channel, error) {
	adj := make(map[topology.VertexID][]topology.LinkID, len(links)+1)
	for _, l := range links {
		lk := g.Link(l)
		adj[lk.A] = append(adj[lk.A], l)
		adj[lk.B] = append(adj[lk.B], l)
	}
	if _, ok := adj[src]; !ok {
		return nil, fmt.Errorf("source %s is not in the tree", g.VertexName(src))
	}
	seen := map[topology.VertexID]bool{src: true}
	queue := []topology.VertexID{src}
	out := make([]topology.Channel, 0, len(links))
	for i := 0; i < len(queue); i++ {
		v := queue[i]
		for _, l := range adj[v] {
			w := g.Other(l, v)
			if seen[w] {
				continue
			}
			seen[w] = true
			out = append(out, topology.ChannelOf(l, g.Link(l).A != v))
			queue = append(queue, w)
		}
	}
	if len(out) != len(links) {
		return nil, fmt.Errorf("%d links, %d reached from %s: not a tree", len(links), len(out), g.VertexName(src))
	}
	return out, nil
}

// SimulateMulticast is Simulate with the servers that have a tree in mc sending down it (see
// MulticastTrees); the others send by unicast along r's routes.
func SimulateMulticast(ctx context.Context, g *topology.Graph, r topology.Router, a *mapping.Assignment, batch []int, cfg FlowConfig,
	mc *MulticastTrees) (*FlowResult, error) {
	if mc == nil {
		return nil, fmt.Errorf("flow model: no multicast trees")
	}
	if len(mc.Channels) != len(g.Servers()) {
		return nil, fmt.Errorf("flow model: %d multicast trees for %d boot servers", len(mc.Channels), len(g.Servers()))
	}
	if len(a.Server) != len(g.Nodes()) {
		return nil, fmt.Errorf("flow model: assignment has %d nodes, machine %s has %d", len(a.Server), g.Name, len(g.Nodes()))
	}
	// Every node of a multicasting server must be in its tree.
	reached := make(map[topology.VertexID]int32)
	for srv, chs := range mc.Channels {
		for _, c := range chs {
			reached[g.ChannelTo(c)] = int32(srv) + 1
		}
	}
	for _, n := range batch {
		if n < 0 || n >= len(a.Server) {
			continue // simulate reports it
		}
		srv := a.Server[n]
		if srv < 0 || int(srv) >= len(mc.Channels) || mc.Channels[srv] == nil {
			continue
		}
		if v := g.Nodes()[n]; reached[v] != srv+1 {
			return nil, fmt.Errorf("flow model: node %s is not in the multicast tree of %s", g.VertexName(v), g.VertexName(g.Servers()[srv]))
		}
	}
	return simulateMC(ctx, g, r, a, batch, cfg, nil, mc)
}
