package bootapi

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/nodestate"
)

// Status is what `bootctl status` reports: the summary over every server asked, each server's own
// summary, and the nodes grouped by state (boot order, then name).
type Status struct {
	Summary nodestate.Summary       `json:"summary"`
	Servers []ServerStatus          `json:"servers"`
	Nodes   []nodestate.NodeStatus  `json:"nodes"`
	ByState map[nodestate.State]int `json:"by_state"`
	// Unreachable lists the server URLs that did not answer (their nodes are missing).
	Unreachable []ServerFailure `json:"unreachable,omitempty"`
	// Fleet and Members: read from a fleet's etcd, the fleet and its live members.
	Fleet   string        `json:"fleet,omitempty"`
	Members []FleetMember `json:"members,omitempty"`
	// Unknown lists the inventory nodes no answering server gave a state for, with their owner;
	// UnknownCount counts them before the state filter.
	Unknown      []UnknownNode `json:"unknown,omitempty"`
	UnknownCount int           `json:"unknown_count,omitempty"`
}

// ServerStatus is one server's summary.
type ServerStatus struct {
	URL     string            `json:"url"`
	Summary nodestate.Summary `json:"summary"`
}

// ServerFailure is a server that did not answer.
type ServerFailure struct {
	URL   string `json:"url"`
	Error string `json:"error"`
}

// FleetMember is one live member of a fleet, as the status read from etcd shows it.
type FleetMember struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// UnknownNode is an inventory node no answering server holds a state for, with the server that
// owns it: the inventory says it exists, nobody asked says how it is.
type UnknownNode struct {
	Name     string `json:"name"`
	MAC      string `json:"mac"`
	IP       string `json:"ip,omitempty"`
	Position string `json:"position"`
	Owner    string `json:"owner,omitempty"`
	Reason   string `json:"reason"`
}

// UnreachableError says which servers did not answer; the others' nodes were read.
type UnreachableError struct{ Failed []ServerFailure }

func (e *UnreachableError) Error() string {
	var parts []string
	for _, f := range e.Failed {
		parts = append(parts, fmt.Sprintf("%s: %s", f.URL, f.Error))
	}
	return fmt.Sprintf("%d boot server(s) did not answer: %s", len(e.Failed), strings.Join(parts, "; "))
}

// StatusRead is what a status read gives before the nodes are selected: the servers and their
// summary, every node some server holds a state for, the inventory with each node's owner (nil
// when the source lists none) and Why an inventory node has no state, given its owner.
type StatusRead struct {
	Status    *Status
	All       []nodestate.NodeStatus
	Inventory []InventoryEntry
	Why       func(owner string) string
}

// ReadServers asks every server for its nodes, the inventory and the summary; a node several
// servers hold is one row, by MergeNodes's rule. A server that does not answer is listed in
// Unreachable and the others are read; it is an *UnreachableError only when none answers.
func ReadServers(ctx context.Context, hc *http.Client, servers []string) (*StatusRead, error) {
	res := &Status{ByState: map[nodestate.State]int{}}
	rd := &StatusRead{Status: res}
	answered := map[string]bool{}
	var lists [][]nodestate.NodeStatus
	for _, s := range servers {
		cl := &Client{BaseURL: s, HTTP: hc}
		nodes, err := cl.NodesAndInventory(ctx)
		var sum *nodestate.Summary
		if err == nil {
			sum, err = cl.Summary(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			res.Unreachable = append(res.Unreachable, ServerFailure{URL: s, Error: err.Error()})
			continue
		}
		res.Servers = append(res.Servers, ServerStatus{URL: s, Summary: *sum})
		lists = append(lists, nodes.Nodes)
		answered[nodes.Server] = true
		if rd.Inventory == nil {
			rd.Inventory = nodes.Inventory // every server of a machine has the same inventory
		}
	}
	if len(res.Servers) == 0 {
		return nil, &UnreachableError{Failed: res.Unreachable}
	}
	rd.All = MergeNodes(lists) // a node two servers hold is shown once
	if len(res.Servers) == 1 && len(servers) == 1 {
		res.Summary = res.Servers[0].Summary
	} else {
		res.Summary = nodestate.Summarize(rd.All, "all", -1, time.Now())
	}
	rd.Why = func(owner string) string {
		switch {
		case owner == "":
			return "no live server owns it"
		case answered[owner]:
			return "its server " + owner + " holds no state for it"
		case len(res.Unreachable) > 0:
			return "its server " + owner + " was not asked or did not answer"
		}
		return "its server " + owner + " was not asked: add its --server"
	}
	return rd, nil
}

// Entries is the inventory the read's nodes are selected from: the servers' listing, or, from a
// server without one, its own nodes (all known).
func (rd *StatusRead) Entries() []InventoryEntry {
	if rd.Inventory == nil {
		return EntriesOf(rd.All)
	}
	return rd.Inventory
}

// EntriesOf makes inventory entries of the nodes a server holds.
func EntriesOf(nodes []nodestate.NodeStatus) []InventoryEntry {
	out := make([]InventoryEntry, len(nodes))
	for i, n := range nodes {
		out[i] = InventoryEntry{Name: n.Name, MAC: n.MAC, IP: n.IP, Position: n.Position, Owner: n.Server}
	}
	return out
}

// StatusFilter is which nodes a status keeps: Keep selects by name (every node of Entries it
// keeps, with All true when it keeps them all); Only keeps one state (nil: every state);
// UnknownOnly keeps only the nodes no server holds.
type StatusFilter struct {
	Keep        func(name string) bool
	All         bool
	Only        *nodestate.State
	UnknownOnly bool
}

// Select keeps the nodes f selects, adds the inventory nodes nobody holds as unknown, counts by
// state and keeps f.Only's. With a selection the summary is the selected nodes'.
func (rd *StatusRead) Select(f StatusFilter) *Status {
	res := rd.Status
	held := make(map[string]bool, len(rd.All))
	var kept []nodestate.NodeStatus
	for _, n := range rd.All {
		held[n.Name] = true
		if f.Keep(n.Name) {
			kept = append(kept, n)
		}
	}
	for _, e := range rd.Entries() {
		if !held[e.Name] && f.Keep(e.Name) {
			res.Unknown = append(res.Unknown, UnknownNode{Name: e.Name, MAC: e.MAC, IP: e.IP, Position: e.Position, Owner: e.Owner, Reason: rd.Why(e.Owner)})
		}
	}
	res.UnknownCount = len(res.Unknown)
	if !f.All {
		res.Summary = nodestate.Summarize(kept, res.Summary.Server, res.Summary.ServerID, time.Now())
	}
	res.finish(kept, f.Only)
	switch {
	case f.UnknownOnly:
		res.Nodes = nil
	case f.Only != nil:
		res.Unknown = nil
	}
	return res
}

// finish counts the nodes by state and keeps those in state only (all when nil), in boot order
// then by name.
func (res *Status) finish(all []nodestate.NodeStatus, only *nodestate.State) {
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
