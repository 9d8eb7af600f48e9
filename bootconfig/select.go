package bootconfig

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/nodeset"
)

// Select returns the inventory nodes a node-set expression names ("all": every one), in its
// order. An expression that names no node, or names nodes the inventory lacks (the first three
// quoted, then how many more), is an error.
func (inv *Inventory) Select(expr string) ([]*InventoryNode, error) {
	if expr == "all" {
		out := make([]*InventoryNode, len(inv.Nodes))
		for i := range inv.Nodes {
			out[i] = &inv.Nodes[i]
		}
		return out, nil
	}
	names, err := nodeset.Expand(expr)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%q names no node", expr)
	}
	var unknown []string
	out := make([]*InventoryNode, 0, len(names))
	for _, name := range names {
		n, ok := inv.ByName(name)
		if !ok {
			unknown = append(unknown, strconv.Quote(name))
			continue
		}
		out = append(out, n)
	}
	if len(unknown) > 0 {
		more := ""
		if len(unknown) > 3 {
			more = fmt.Sprintf(" and %d more", len(unknown)-3)
			unknown = unknown[:3]
		}
		return nil, fmt.Errorf("%s%s: not in the inventory %s", strings.Join(unknown, ", "), more, inv.File)
	}
	return out, nil
}
