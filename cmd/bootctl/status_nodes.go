package main

import (
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/bootfabric/bootfabric/nodeset"
)

// complete selects the nodes of NODES and --group, adds the inventory nodes nobody holds as
// unknown, counts by state and keeps the --state ones.
func (q *statusQuery) complete(rd *bootapi.StatusRead) (*bootapi.Status, error) {
	keep, err := q.sel.filter(rd.Entries())
	if err != nil {
		return nil, err
	}
	return rd.Select(bootapi.StatusFilter{Keep: keep, All: q.sel.all(), Only: q.only, UnknownOnly: q.unknown}), nil
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
			return nil, badInput("--group: no inventory node is in group %q (groups: %s)", g, texttable.OrDash(strings.Join(slices.Compact(groups), ", ")))
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
