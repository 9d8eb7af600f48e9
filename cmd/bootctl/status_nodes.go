package main

import (
	"slices"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/nodeset"
	"github.com/bootfabric/bootfabric/nodestate"
)

// statusRead is what status read before it selects: the servers and their summary, every node
// some server holds a state for, the inventory with each node's owner (nil when the source lists
// none) and why an inventory node has no state, given its owner.
type statusRead struct {
	res *statusResult
	all []nodestate.NodeStatus
	inv []bootapi.InventoryEntry
	why func(owner string) string
}

// unknownNode is an inventory node no answering server holds a state for, with the server that
// owns it: the inventory says it exists, nobody asked says how it is.
type unknownNode struct {
	Name     string `json:"name"`
	MAC      string `json:"mac"`
	IP       string `json:"ip,omitempty"`
	Position string `json:"position"`
	Owner    string `json:"owner,omitempty"`
	Reason   string `json:"reason"`
}

// complete selects the nodes of NODES and --group, adds the inventory nodes nobody holds as
// unknown, counts by state and keeps the --state ones. With a selection the summary is the
// selected nodes'.
func (q *statusQuery) complete(rd *statusRead) (*statusResult, error) {
	res := rd.res
	inv := rd.inv
	if inv == nil {
		inv = entriesOf(rd.all) // a server without the inventory listing: its own nodes are all known
	}
	keep, err := q.sel.filter(inv)
	if err != nil {
		return nil, err
	}
	held := make(map[string]bool, len(rd.all))
	var kept []nodestate.NodeStatus
	for _, n := range rd.all {
		held[n.Name] = true
		if keep(n.Name) {
			kept = append(kept, n)
		}
	}
	for _, e := range inv {
		if !held[e.Name] && keep(e.Name) {
			res.Unknown = append(res.Unknown, unknownNode{Name: e.Name, MAC: e.MAC, IP: e.IP, Position: e.Position, Owner: e.Owner, Reason: rd.why(e.Owner)})
		}
	}
	res.UnknownCount = len(res.Unknown)
	if !q.sel.all() {
		res.Summary = nodestate.Summarize(kept, res.Summary.Server, res.Summary.ServerID, time.Now())
	}
	finishStatus(res, kept, q.only)
	switch {
	case q.unknown:
		res.Nodes = nil
	case q.only != nil:
		res.Unknown = nil
	}
	return res, nil
}

// entriesOf makes inventory entries of the nodes a server holds.
func entriesOf(nodes []nodestate.NodeStatus) []bootapi.InventoryEntry {
	out := make([]bootapi.InventoryEntry, len(nodes))
	for i, n := range nodes {
		out[i] = bootapi.InventoryEntry{Name: n.Name, MAC: n.MAC, IP: n.IP, Position: n.Position, Owner: n.Server}
	}
	return out
}

// filter returns which inventory nodes the selection keeps. A name that is not in the inventory,
// or a group no node is in, is bad input, as everywhere NODES are taken.
func (s nodeSelection) filter(inv []bootapi.InventoryEntry) (func(string) bool, error) {
	if s.all() {
		return func(string) bool { return true }, nil
	}
	byName := make(map[string]*bootapi.InventoryEntry, len(inv))
	var groups []string
	for i := range inv {
		byName[inv[i].Name] = &inv[i]
		groups = append(groups, inv[i].Groups...)
	}
	names, err := s.names(byName)
	if err != nil {
		return nil, err
	}
	for _, g := range s.groups {
		if !slices.Contains(groups, g) {
			slices.Sort(groups)
			return nil, badInput("--group: no inventory node is in group %q (groups: %s)", g, orDash(strings.Join(slices.Compact(groups), ", ")))
		}
	}
	return func(name string) bool {
		e := byName[name]
		if e == nil || (names != nil && !names[name]) {
			return false
		}
		return len(s.groups) == 0 || slices.ContainsFunc(s.groups, func(g string) bool { return slices.Contains(e.Groups, g) })
	}, nil
}

// names expands the NODES arguments (nil: every node), refusing names not in the inventory.
func (s nodeSelection) names(byName map[string]*bootapi.InventoryEntry) (map[string]bool, error) {
	expr := strings.Join(s.exprs, ",")
	if expr == "" || expr == "all" {
		return nil, nil
	}
	list, err := nodeset.Expand(expr)
	if err != nil {
		return nil, badInput("NODES: %w", err)
	}
	out := make(map[string]bool, len(list))
	var unknown []string
	for _, n := range list {
		if byName[n] == nil {
			unknown = append(unknown, n)
		}
		out[n] = true
	}
	if len(unknown) > 0 {
		return nil, badInput("NODES: %s: not in the inventory", describeNodes(unknown))
	}
	return out, nil
}
