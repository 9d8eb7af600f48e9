// Package mapping decides which boot server serves which compute node.
//
// SCDA and BCDA of the paper are one algorithm, block-cyclic at a hierarchy level: block b of that
// level goes to live server b mod (live servers). Balanced is batch-aware: given the nodes about to
// boot, it spreads them so that the predicted bottleneck (the largest sharers/capacity over all
// links) is as small as possible. Remap moves the nodes of dead servers and nothing else.
//
// # Ownership rule
//
// Owners is the one ownership function of the fleet: `bootctl plan`, `bootctl simulate` and every
// boot server call it (through AssignOwners and bootconfig.AssignServers), so that what plan predicts
// is what the servers do. It knows two kinds of failed servers, because a failure before the boot
// and a failure during it call for different trade-offs:
//
//   - ABSENT servers were never up when the fleet started: in a fleet, servers missing from the
//     fleet's server list or marked disabled; `bootctl plan --failed-servers`; `failed_servers:` in a
//     boot server's YAML. Nothing was served from them, so nothing needs to stay put, and the
//     blocks are dealt around them: the block-cyclic deal runs over the live list only (block b goes
//     to live[b mod |live|]), which keeps neighbouring blocks on different servers (BlockCyclic).
//   - DEAD servers failed during the boot or while the fleet runs: `bootctl plan
//     --failed-during-boot`, and the servers a fleet server no longer sees alive in etcd. The other
//     servers are busy with their own nodes, so only the dead servers' blocks move (Remap): least
//     movement, blocks stay whole, balanced over the survivors (least-loaded survivor first; among
//     equally loaded ones the farthest from the dead server in cyclic index order, so that a moved
//     block does not land on the server of its neighbouring block).
//
// A server that is both absent and dead counts as absent. Ownership depends only on the static
// mapping and the two sets, never on the order in which servers died: every server computes the
// same owners from the same view. The price: when a second server dies, the first dead server's
// blocks are dealt again together with the second's and some may change survivor (survivors' own
// blocks never move).
//
// Everything here is a pure function of the topology, the servers and the options.
package mapping

import (
	"fmt"
	"strconv"
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

// Default is the mapping a machine gets when none is named: bcda, or ncda on a flat machine (an
// inventory without a topology), which has no boards; dealing its nodes one by one balances the
// servers, and moves no traffic off a link there, where every server is on the core.
func Default(flat bool) string {
	if flat {
		return "ncda"
	}
	return "bcda"
}

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

// live returns the indices of the servers not marked down (absent, or dead too for Remap), or an
// error when none is left.
func live(servers int, down []bool) ([]int32, error) {
	if servers < 1 {
		return nil, fmt.Errorf("no boot servers")
	}
	if len(down) > servers {
		return nil, fmt.Errorf("failed list has %d entries for %d servers", len(down), servers)
	}
	var out []int32
	for s := 0; s < servers; s++ {
		if s >= len(down) || !down[s] {
			out = append(out, int32(s))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("all %d boot servers failed", servers)
	}
	return out, nil
}

// BlockCyclic deals the blocks of the given level to the live servers in turn: block b goes to the
// (b mod live)-th live server. absent[s] marks the servers never up (nil: none).
func BlockCyclic(h *topology.Hierarchy, level, servers int, absent []bool) (*Assignment, error) {
	if level < 0 || level >= len(h.Levels()) {
		return nil, fmt.Errorf("block-cyclic: level %d out of range", level)
	}
	ls, err := live(servers, absent)
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

// Assign runs algorithm algo on graph g over the servers not absent. batch (node indices) is used
// by balanced only.
func Assign(g *topology.Graph, algo Algo, batch []int, absent []bool) (*Assignment, error) {
	h := g.Hierarchy()
	if h == nil {
		return nil, fmt.Errorf("mapping %s: the machine has no named levels", algo.Name)
	}
	if algo.Balanced {
		a, err := Balanced(g, batch, absent)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	a, err := BlockCyclic(h, algo.Level, len(g.Servers()), absent)
	if err != nil {
		return nil, err
	}
	a.Algo = algo.Name
	return a, nil
}

// Remap moves the nodes of the dead servers (dead[s], nil: none) to live ones and returns the new
// assignment and the number of nodes moved. Only nodes whose server died move, which is the least any remap can do;
// when the assignment dealt whole blocks, moved blocks stay whole and go to the least-loaded live
// server in turn, so loads stay within one block of each other where they were.
//
// Among equally loaded survivors the block goes to the one farthest from its dead server in
// cyclic index order (distance d(s,t) = min((s-t) mod S, (t-s) mod S) over the assignment's S
// servers), ties to the lowest index. Block-cyclic mappings put neighbouring blocks on neighbouring
// servers, and a batch is usually a run of neighbouring blocks: taking the nearest survivor (as the
// lowest index did for server 0) would put a moved block on the server of the block next to it and
// halve both blocks' bandwidth at that server's NIC; the farthest one serves blocks half the machine
// away. Blocks are visited in node order, so the result is deterministic.
func Remap(a *Assignment, h *topology.Hierarchy, dead []bool) (*Assignment, int, error) {
	ls, err := live(a.NumServers, dead)
	if err != nil {
		return nil, 0, err
	}
	out := &Assignment{Algo: a.Algo, Level: a.Level, Server: append([]int32(nil), a.Server...), NumServers: a.NumServers}
	isDead := func(s int32) bool { return s >= 0 && int(s) < len(dead) && dead[s] }
	load := a.Load()
	for s := range load {
		if isDead(int32(s)) {
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
		// Move the block's nodes that sit on dead servers together.
		target := int32(-1)
		for i := start; i < end; i++ {
			if !isDead(out.Server[i]) {
				continue
			}
			if target < 0 {
				target = remapTarget(ls, load, out.Server[i], a.NumServers)
			}
			out.Server[i] = target
			load[target]++
			moved++
		}
	}
	return out, moved, nil
}

// remapTarget picks the survivor for a block of dead server from: the least loaded, then the
// farthest from from in cyclic index order over servers, then the lowest index (ls is ascending).
func remapTarget(ls []int32, load []int, from int32, servers int) int32 {
	dist := func(s int32) int {
		d := ((int(s)-int(from))%servers + servers) % servers
		return min(d, servers-d)
	}
	best := ls[0]
	for _, s := range ls[1:] {
		if load[s] < load[best] || load[s] == load[best] && dist(s) > dist(best) {
			best = s
		}
	}
	return best
}

// Owners is the fleet's ownership function (see the package doc): the block-cyclic algorithm algo
// dealt over the servers that are not absent, then the blocks of the dead servers moved by Remap.
// absent[s] and dead[s] mark server s (nil: none); a server in both counts as absent. moved is the
// number of nodes the dead servers had. Balanced is refused: it depends on the batch, and a fleet
// needs owners that every server computes alike before any batch is known.
func Owners(h *topology.Hierarchy, algo Algo, servers int, absent, dead []bool) (a *Assignment, moved int, err error) {
	if h == nil {
		return nil, 0, fmt.Errorf("mapping %s: the machine has no named levels", algo.Name)
	}
	if algo.Balanced {
		return nil, 0, fmt.Errorf("algorithm %q: ownership needs a block-cyclic mapping (balanced depends on the batch)", algo.Name)
	}
	if len(dead) > servers {
		return nil, 0, fmt.Errorf("dead list has %d entries for %d servers", len(dead), servers)
	}
	if a, err = BlockCyclic(h, algo.Level, servers, absent); err != nil {
		return nil, 0, err
	}
	a.Algo = algo.Name
	down, anyDead := union(servers, absent, dead)
	if !anyDead {
		return a, 0, nil
	}
	return Remap(a, h, down)
}

// AssignOwners is Assign with both kinds of failed servers (absent and dead), for plan and
// simulate: Owners for the block-cyclic algorithms; for balanced, which is batch-aware and so
// cannot be the fleet's rule, the batch is balanced over the servers that are not absent and the
// dead servers' nodes are then moved by Remap, as a fleet would move them.
func AssignOwners(g *topology.Graph, algo Algo, batch []int, absent, dead []bool) (*Assignment, int, error) {
	h := g.Hierarchy()
	if !algo.Balanced {
		return Owners(h, algo, len(g.Servers()), absent, dead)
	}
	servers := len(g.Servers())
	if len(dead) > servers {
		return nil, 0, fmt.Errorf("dead list has %d entries for %d servers", len(dead), servers)
	}
	a, err := Assign(g, algo, batch, absent)
	if err != nil {
		return nil, 0, err
	}
	down, anyDead := union(servers, absent, dead)
	if !anyDead {
		return a, 0, nil
	}
	return Remap(a, h, down)
}

// union returns absent OR dead over the servers, and whether some dead server is not absent.
func union(servers int, absent, dead []bool) ([]bool, bool) {
	down := make([]bool, servers)
	copy(down, absent)
	anyDead := false
	for s, d := range dead {
		if d && !down[s] {
			down[s], anyDead = true, true
		}
	}
	return down, anyDead
}

// ParseAlgos parses a comma-separated list of algorithms (ParseAlgo), or "all": every name of
// Names that the machine's levels accept.
func ParseAlgos(s string, h *topology.Hierarchy) ([]Algo, error) {
	names := strings.Split(s, ",")
	if s == "all" {
		names = nil
		for _, n := range Names() {
			if _, err := ParseAlgo(n, h); err == nil {
				names = append(names, n)
			}
		}
	}
	var out []Algo
	for _, n := range names {
		a, err := ParseAlgo(strings.TrimSpace(n), h)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// ParseServerSet reads a comma-separated list of server indices or bsN names into a set over
// servers (nil when s is empty).
func ParseServerSet(s string, servers int) ([]bool, error) {
	if s == "" {
		return nil, nil
	}
	set := make([]bool, servers)
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		i, err := strconv.Atoi(strings.TrimPrefix(item, "bs"))
		if err != nil || i < 0 || i >= servers {
			return nil, fmt.Errorf("%q is not a server (0-%d or bs0-bs%d)", item, servers-1, servers-1)
		}
		set[i] = true
	}
	return set, nil
}
