// Package mapping decides which boot server serves which compute node.
//
// SCDA and BCDA of the paper are one algorithm, block-cyclic at a hierarchy level: block b of that
// level goes to live server b mod (live servers). Balanced is batch-aware: given the nodes about to
// boot, it spreads them so that the predicted bottleneck (the largest sharers/capacity over all
// links) is as small as possible. Remap moves the nodes of failed servers and nothing else.
//
// Everything here is a pure function of the topology, the servers and the options.
package mapping

import (
	"fmt"
	"strings"

	"github.com/bootfabric/bootfabric/topology"
)

// Assignment maps each compute node (by index, see topology.Graph.Nodes) to a boot server (by
// index, see topology.Graph.Servers), or to -1 when no server serves it.
type Assignment struct {
	// Algo names the algorithm that made the assignment.
	Algo string
	// Level is the hierarchy level whose blocks were dealt out whole, or -1.
	Level int
	// Server holds the server of each node.
	Server []int32
	// NumServers is the number of servers of the machine, failed ones included.
	NumServers int
}

// Load returns the number of nodes of each server.
func (a *Assignment) Load() []int {
	load := make([]int, a.NumServers)
	for _, s := range a.Server {
		if s >= 0 {
			load[s]++
		}
	}
	return load
}

// Algo is a parsed algorithm name.
type Algo struct {
	// Name as the user gave it: scda, bcda, ncda, cyclic:LEVEL or balanced.
	Name string
	// Level is the block level of a block-cyclic algorithm.
	Level int
	// Balanced is set for the batch-aware algorithm.
	Balanced bool
}

// Names lists the algorithm names that every hierarchical machine with supernode and board levels
// accepts, in the order `--algo all` shows them.
func Names() []string { return []string{"scda", "bcda", "ncda", "balanced"} }

// ParseAlgo parses an algorithm name against the machine's levels: scda is block-cyclic at the level
// named supernode, bcda at board, ncda at the node level, cyclic:LEVEL at any level.
func ParseAlgo(name string, h *topology.Hierarchy) (Algo, error) {
	if h == nil {
		return Algo{}, fmt.Errorf("algorithm %q: the machine has no named levels", name)
	}
	level := ""
	switch {
	case name == "balanced":
		return Algo{Name: name, Level: -1, Balanced: true}, nil
	case name == "scda":
		level = "supernode"
	case name == "bcda":
		level = "board"
	case name == "ncda":
		return Algo{Name: name, Level: len(h.Levels()) - 1}, nil
	case strings.HasPrefix(name, "cyclic:"):
		level = strings.TrimPrefix(name, "cyclic:")
	default:
		return Algo{}, fmt.Errorf("unknown algorithm %q: want scda, bcda, ncda, balanced or cyclic:LEVEL", name)
	}
	l, ok := h.Index(level)
	if !ok {
		return Algo{}, fmt.Errorf("algorithm %q: the machine has no level %q (levels: %s)", name, level, levelNames(h))
	}
	return Algo{Name: name, Level: l}, nil
}

func levelNames(h *topology.Hierarchy) string {
	var names []string
	for _, l := range h.Levels() {
		names = append(names, l.Name)
	}
	return strings.Join(names, ", ")
}

// live returns the indices of the servers not marked failed, or an error when none is left.
func live(servers int, failed []bool) ([]int32, error) {
	if servers < 1 {
		return nil, fmt.Errorf("no boot servers")
	}
	if len(failed) > servers {
		return nil, fmt.Errorf("failed list has %d entries for %d servers", len(failed), servers)
	}
	var out []int32
	for s := 0; s < servers; s++ {
		if s >= len(failed) || !failed[s] {
			out = append(out, int32(s))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("all %d boot servers failed", servers)
	}
	return out, nil
}

// BlockCyclic deals the blocks of the given level to the live servers in turn: block b goes to the
// (b mod live)-th live server. failed[s] marks failed servers (nil: none).
func BlockCyclic(h *topology.Hierarchy, level, servers int, failed []bool) (*Assignment, error) {
	if level < 0 || level >= len(h.Levels()) {
		return nil, fmt.Errorf("block-cyclic: level %d out of range", level)
	}
	ls, err := live(servers, failed)
	if err != nil {
		return nil, err
	}
	n := h.NumNodes()
	a := &Assignment{Algo: "cyclic:" + h.Levels()[level].Name, Level: level, Server: make([]int32, n), NumServers: servers}
	span := h.Span(level)
	for i := 0; i < n; i++ {
		a.Server[i] = ls[(i/span)%len(ls)]
	}
	return a, nil
}

// Assign runs algorithm algo on graph g. batch (node indices) is used by balanced only.
func Assign(g *topology.Graph, algo Algo, batch []int, failed []bool) (*Assignment, error) {
	h := g.Hierarchy()
	if h == nil {
		return nil, fmt.Errorf("mapping %s: the machine has no named levels", algo.Name)
	}
	if algo.Balanced {
		a, err := Balanced(g, batch, failed)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	a, err := BlockCyclic(h, algo.Level, len(g.Servers()), failed)
	if err != nil {
		return nil, err
	}
	a.Algo = algo.Name
	return a, nil
}

// Remap moves the nodes of newly failed servers to live ones and returns the new assignment and the
// number of nodes moved. Only nodes whose server failed move, which is the least any remap can do;
// when the assignment dealt whole blocks, moved blocks stay whole and go to the least-loaded live
// server in turn, so loads stay within one block of each other where they were.
func Remap(a *Assignment, h *topology.Hierarchy, failed []bool) (*Assignment, int, error) {
	ls, err := live(a.NumServers, failed)
	if err != nil {
		return nil, 0, err
	}
	out := &Assignment{Algo: a.Algo, Level: a.Level, Server: append([]int32(nil), a.Server...), NumServers: a.NumServers}
	isFailed := func(s int32) bool { return s >= 0 && int(s) < len(failed) && failed[s] }
	load := a.Load()
	for s := range load {
		if isFailed(int32(s)) {
			load[s] = 0
		}
	}
	span := 1
	if a.Level >= 0 && h != nil && a.Level < len(h.Levels()) {
		span = h.Span(a.Level)
	}
	moved := 0
	for start := 0; start < len(out.Server); start += span {
		end := min(start+span, len(out.Server))
		// Move the block's nodes that sit on failed servers together.
		target := int32(-1)
		for i := start; i < end; i++ {
			if !isFailed(out.Server[i]) {
				continue
			}
			if target < 0 {
				target = ls[0]
				for _, s := range ls {
					if load[s] < load[target] {
						target = s
					}
				}
			}
			out.Server[i] = target
			load[target]++
			moved++
		}
	}
	return out, moved, nil
}
