package bootsrv

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/nodestate/etcdstore"
)

// ReadFleetNodes reads every node's record of a fleet (opts: its etcd, name, TLS and user) from
// etcd in one call: the nodes of every server, live or dead, grouped by the server that holds
// them, with the inventory of the current revision and each node's owner among the live members.
func ReadFleetNodes(ctx context.Context, opts fleet.Options) (*bootapi.StatusRead, error) {
	fleetName := opts.Fleet
	c, err := fleet.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	all, err := etcdstore.LoadAll(ctx, c)
	if err != nil {
		return nil, err
	}
	members, _, err := c.Members(ctx)
	if err != nil {
		return nil, err
	}
	res := &bootapi.Status{ByState: map[nodestate.State]int{}, Fleet: fleetName}
	live := map[string]string{}
	for _, m := range members {
		info, _ := DecodeMemberInfo(m) // a member without a readable record still counts as live
		live[m.Name] = info.URL
		res.Members = append(res.Members, bootapi.FleetMember{Name: m.Name, URL: info.URL})
	}
	res.Servers = serverSummaries(all, live)
	res.Summary = nodestate.Summarize(all, "fleet "+fleetName, -1, time.Now())
	rd := &bootapi.StatusRead{Status: res, All: all, Why: func(owner string) string {
		if owner == "" {
			return "no live server owns it"
		}
		return "no record in etcd yet; its server is " + owner
	}}
	rd.Inventory, err = fleetInventory(ctx, c, res.Members)
	return rd, err
}

// serverSummaries summarizes the nodes by the server that holds them, in the order of the
// servers' names; live maps a live server to its URL.
func serverSummaries(all []nodestate.NodeStatus, live map[string]string) []bootapi.ServerStatus {
	byServer := map[string][]nodestate.NodeStatus{}
	for _, n := range all {
		byServer[n.Server] = append(byServer[n.Server], n)
	}
	names := make([]string, 0, len(byServer))
	for s := range byServer {
		names = append(names, s)
	}
	sort.Strings(names)
	now := time.Now()
	var out []bootapi.ServerStatus
	for _, s := range names {
		url, ok := live[s]
		if !ok {
			url = "(not live)"
		}
		out = append(out, bootapi.ServerStatus{URL: url, Summary: nodestate.Summarize(byServer[s], s, -1, now)})
	}
	return out
}

// fleetInventory lists the inventory of the fleet's current revision with each node's owner among
// the live members; nil when the fleet has no configuration yet.
func fleetInventory(ctx context.Context, c *fleet.Client, members []bootapi.FleetMember) ([]bootapi.InventoryEntry, error) {
	_, doc, m, err := ReadFleetRevision(ctx, c)
	if errors.Is(err, fleet.ErrNoConfig) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	live := make([]string, len(members))
	for i, mb := range members {
		live[i] = mb.Name
	}
	owners, err := doc.Owners(m, live)
	if err != nil {
		return nil, err
	}
	return InventoryEntries(m.Inventory, func(n *bootconfig.InventoryNode) string { return owners[n.Name] }), nil
}
