package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/nodestate/etcdstore"
)

// fleetMemberView is one live member of a fleet as `bootctl status --etcd` shows it.
type fleetMemberView struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// fetchFleetStatus reads every node's record of a fleet (opts: its etcd, name, TLS and user) from
// etcd in one call: the nodes of every server, live or dead, grouped by the server that holds them.
func fetchFleetStatus(ctx context.Context, opts fleet.Options) (*statusRead, error) {
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
	res := &statusResult{ByState: map[nodestate.State]int{}, Fleet: fleetName}
	live := map[string]string{}
	for _, m := range members {
		info, _ := bootsrv.DecodeMemberInfo(m) // a member without a readable record still counts as live
		live[m.Name] = info.URL
		res.Members = append(res.Members, fleetMemberView{Name: m.Name, URL: info.URL})
	}
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
	for _, s := range names {
		url, ok := live[s]
		if !ok {
			url = "(not live)"
		}
		res.Servers = append(res.Servers, serverStatus{URL: url, Summary: nodestate.Summarize(byServer[s], s, -1, now)})
	}
	res.Summary = nodestate.Summarize(all, "fleet "+fleetName, -1, now)
	rd := &statusRead{res: res, all: all, why: func(owner string) string {
		if owner == "" {
			return "no live server owns it"
		}
		return "no record in etcd yet; its server is " + owner
	}}
	rd.inv, err = fleetInventory(ctx, c, opts.Endpoints, res.Members)
	return rd, err
}

// fleetInventory lists the inventory of the fleet's current revision with each node's owner among
// the live members; nil when the fleet has no configuration yet.
func fleetInventory(ctx context.Context, c *fleet.Client, eps []string, members []fleetMemberView) ([]bootapi.InventoryEntry, error) {
	_, doc, m, err := readFleetRevision(ctx, c, eps)
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
	return bootsrv.InventoryEntries(m.Inventory, func(n *bootconfig.InventoryNode) string { return owners[n.Name] }), nil
}

// finishStatus counts the nodes by state and keeps those in state only (all when nil), in boot
// order then by name.
func finishStatus(res *statusResult, all []nodestate.NodeStatus, only *nodestate.State) {
	for _, st := range nodestate.States() {
		res.ByState[st] = 0
	}
	for _, n := range all {
		res.ByState[n.State]++
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].State != all[j].State {
			return all[i].State < all[j].State
		}
		return all[i].Name < all[j].Name
	})
	res.Nodes = all[:0:0]
	for _, n := range all {
		if only == nil || n.State == *only {
			res.Nodes = append(res.Nodes, n)
		}
	}
}

// unreachableError says which servers did not answer; the others' nodes were shown.
type unreachableError struct{ failed []serverFailure }

func (e *unreachableError) Error() string {
	var parts []string
	for _, f := range e.failed {
		parts = append(parts, fmt.Sprintf("%s: %s", f.URL, f.Error))
	}
	return fmt.Sprintf("%d boot server(s) did not answer: %s", len(e.failed), strings.Join(parts, "; "))
}

// serverFailure is a server that did not answer `bootctl status`.
type serverFailure struct {
	URL   string `json:"url"`
	Error string `json:"error"`
}

// splitList splits a comma-separated flag value, dropping empty items and spaces.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
