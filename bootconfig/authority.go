package bootconfig

import (
	"cmp"
	"fmt"
	"net"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// Authority says which inventory nodes this server answers: exactly those the mapping assigns to
// it. Every server computes the same mapping from the same configuration, so each inventory MAC is
// answered by exactly one live server. It is immutable and safe for concurrent use.
type Authority struct {
	inv      *Inventory
	serverID int
	owner    []int32 // by inventory node
	owned    []int   // inventory indices of this server's nodes
	byMAC    map[string]int
}

// AssignServers computes the server of every topology node with the fleet's ownership rule,
// mapping.Owners: the block-cyclic algorithm algo dealt over the servers that are not absent, then the
// blocks of the dead servers moved to survivors with the least movement. absent are the servers that
// were never up (failed_servers in the YAML; in a fleet, servers not in the list or disabled), dead
// those that failed while the fleet runs (in a fleet, the servers not alive in etcd); a server in
// both counts as absent. It is the same function `bootctl plan --failed-servers ABSENT
// --failed-during-boot DEAD` uses, so a server owns exactly what plan predicts it serves.
func AssignServers(h *topology.Hierarchy, algo string, servers int, absent, dead []int) (*mapping.Assignment, error) {
	al, err := mapping.ParseAlgo(algo, h)
	if err != nil {
		return nil, err
	}
	if al.Balanced {
		return nil, fmt.Errorf("algorithm %q: a boot server needs a block-cyclic mapping", algo)
	}
	ab, err := serverSet("failed", absent, servers)
	if err != nil {
		return nil, err
	}
	de, err := serverSet("dead", dead, servers)
	if err != nil {
		return nil, err
	}
	a, _, err := mapping.Owners(h, al, servers, ab, de)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	return a, nil
}

// serverSet turns server indices into marks for mapping (nil when there are none).
func serverSet(kind string, list []int, servers int) ([]bool, error) {
	if len(list) == 0 {
		return nil, nil
	}
	set := make([]bool, servers)
	for _, s := range list {
		if s < 0 || s >= servers {
			return nil, fmt.Errorf("%s server %d: not one of the %d servers", kind, s, servers)
		}
		set[s] = true
	}
	return set, nil
}

// NewAuthority decides the owner of each inventory node from the assignment (indexed by topology
// node, see InventoryNode.Index).
func NewAuthority(inv *Inventory, a *mapping.Assignment, serverID int) (*Authority, error) {
	if serverID < 0 || serverID >= a.NumServers {
		return nil, fmt.Errorf("server id %d: not one of the %d servers", serverID, a.NumServers)
	}
	au := &Authority{inv: inv, serverID: serverID, owner: make([]int32, len(inv.Nodes)), byMAC: map[string]int{}}
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		if n.Index < 0 || n.Index >= len(a.Server) {
			return nil, fmt.Errorf("%s:%d: node %s: position %d outside the mapping's %d nodes", inv.File, n.Line, n.Name, n.Index, len(a.Server))
		}
		au.owner[i] = a.Server[n.Index]
		if int(au.owner[i]) == serverID {
			au.owned = append(au.owned, i)
			au.byMAC[macKey(n.MAC)] = i
		}
	}
	return au, nil
}

// ServerID returns this server's index.
func (a *Authority) ServerID() int { return a.serverID }

// Lookup returns the node with the given MAC when this server owns it.
func (a *Authority) Lookup(mac net.HardwareAddr) (*InventoryNode, bool) {
	i, ok := a.byMAC[macKey(mac)]
	if !ok {
		return nil, false
	}
	return &a.inv.Nodes[i], true
}

// Owner returns the server of an inventory node (-1: none).
func (a *Authority) Owner(n *InventoryNode) int {
	i, ok := a.inv.byName[n.Name]
	if !ok {
		return -1
	}
	return int(a.owner[i])
}

// Owns reports whether this server owns the node.
func (a *Authority) Owns(n *InventoryNode) bool { return a.Owner(n) == a.serverID }

// Owned returns this server's nodes in inventory order.
func (a *Authority) Owned() []*InventoryNode {
	out := make([]*InventoryNode, len(a.owned))
	for k, i := range a.owned {
		out[k] = &a.inv.Nodes[i]
	}
	return out
}

// Inventory returns the whole inventory.
func (a *Authority) Inventory() *Inventory { return a.inv }

// NodeOwners names the server that owns each node of inv by the configuration's mapping over h
// (failed_servers counted as absent), as every server computes it.
func (c *Config) NodeOwners(inv *Inventory, h *topology.Hierarchy) (map[string]string, error) {
	a, err := AssignServers(h, c.Mapping, len(c.Servers), c.FailedServers, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: mapping: %w", cmp.Or(c.File(), "configuration"), err)
	}
	au, err := NewAuthority(inv, a, 0)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(inv.Nodes))
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		if o := au.Owner(n); o >= 0 && o < len(c.Servers) {
			out[n.Name] = c.Servers[o].Name
		}
	}
	return out, nil
}
