package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/urfave/cli/v2"
)

// groupFlag is --group: nodes are chosen by group with a flag rather than ClusterShell's @group,
// because @NAME already means a node list file (@FILE) in every NODES argument.
func groupFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "group", Aliases: []string{"g"},
		Usage: "only the nodes in this group (the inventory's groups column); repeat or comma-separate for any of several"}
}

// nodeSelection is which inventory nodes a command was given: NODES arguments (ranges, comma
// lists, @FILE, all), narrowed to the --group groups.
type nodeSelection struct {
	exprs  []string // the NODES arguments; none means every node
	groups []string
}

// parseSelection reads NODES arguments and --group.
func parseSelection(c *cli.Context) (nodeSelection, error) {
	s := nodeSelection{exprs: c.Args().Slice()}
	for i, e := range s.exprs {
		// An empty argument (an unset shell variable) must not read as "no NODES", which some
		// commands take as every node.
		if strings.Trim(e, ", \t") == "" {
			return s, badInput("NODES: argument %d is empty", i+1)
		}
	}
	for _, g := range c.StringSlice("group") {
		gs, err := bootconfig.SplitGroups(g)
		if err != nil {
			return s, badInput("--group: %w", err)
		}
		s.groups = append(s.groups, gs...)
	}
	return s, nil
}

// all reports whether the selection is every node.
func (s nodeSelection) all() bool { return len(s.exprs) == 0 && len(s.groups) == 0 }

// pick returns the selected nodes: those the NODES arguments name, in their order (in the
// inventory's order with none), that are in one of the groups when groups are given. A name not in
// the inventory, or a group no node is in, is bad input: a typo must not act on nothing quietly.
func (s nodeSelection) pick(inv *bootconfig.Inventory) ([]*bootconfig.InventoryNode, error) {
	nodes, err := inv.Select(cmp.Or(strings.Join(s.exprs, ","), "all"))
	if err != nil {
		return nil, badInput("NODES: %w", err)
	}
	if len(s.groups) == 0 {
		return nodes, nil
	}
	if err := inv.CheckGroups(s.groups); err != nil {
		return nil, badInput("--group: %w", err)
	}
	kept := nodes[:0]
	for _, n := range nodes {
		if slices.ContainsFunc(s.groups, n.InGroup) {
			kept = append(kept, n)
		}
	}
	return kept, nil
}

// nodeNames lists the names of nodes.
func nodeNames(nodes []*bootconfig.InventoryNode) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return out
}

// describeNodes names a few nodes for a message: "s0-b0-n0, s0-b0-n1 and 3 more".
func describeNodes(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}
