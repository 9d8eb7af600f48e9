package bootrun

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/nodestate"
)

// NodeState is a node's boot as the boot servers see it.
type NodeState struct {
	State   nodestate.State
	Attempt int
	Server  string // the server whose record this is ("" when unknown)
	// Reported: the attempt's health report came (a failed state is the node's word, not a
	// transfer its firmware gave up and may retry).
	Reported bool
	// Restarts and GaveUp count the firmware's restarts and given-up transfers of the node's
	// current boot; Transfer is its current (or last) transfer, LastGaveUp the last given up.
	Restarts, GaveUp     int
	Transfer, LastGaveUp *nodestate.Transfer
	// InState is how long the node has been in State, InAttempt how long since its attempt's
	// first DHCP request, in seconds as its server measured them at the read (0: unknown).
	InState, InAttempt float64
}

// ago is how long before the read the node entered run phase p, as its server measured it: the
// attempt's first DHCP request for Loading, the state's start otherwise (0: unknown).
func (st NodeState) ago(p Phase) float64 {
	if p == Loading && st.InAttempt > 0 {
		return st.InAttempt
	}
	return st.InState
}

// Servers is what a live run needs of the boot servers.
type Servers interface {
	// States returns the state of every node the servers know, by name.
	States(ctx context.Context) (map[string]NodeState, error)
	// ArmReboot makes the node's next DHCP request start a new boot attempt, even from booted
	// or healthy (a server keeps those states through a stray DISCOVER otherwise).
	ArmReboot(ctx context.Context, name, server string) error
}

// HTTPServers reads the status API of one boot server or of every server of a fleet.
type HTTPServers struct {
	URLs []string
	HTTP *http.Client
	// Tokens are the operator tokens that arming a reboot needs, by URL.
	Tokens map[string]string
}

// States asks every server for its compact progress view (GET /api/v1/progress; a server
// without it, for its node list); of a node several report, bootapi.Merge keeps one record (the
// latest attempt's). A server that does not answer is skipped while another does.
func (h *HTTPServers) States(ctx context.Context) (map[string]NodeState, error) {
	var lists [][]nodestate.LiveNode
	var from []string // the URL of each list
	var errs []error
	for _, u := range h.URLs {
		nodes, err := h.progress(ctx, u)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		lists, from = append(lists, nodes), append(from, u)
	}
	if len(errs) == len(h.URLs) {
		return nil, fmt.Errorf("boot servers: none answered: %w", errors.Join(errs...))
	}
	merged := bootapi.Merge(lists, func(n *nodestate.LiveNode) (string, int) { return n.Name, n.Attempt })
	out := make(map[string]NodeState, len(merged))
	for _, m := range merged {
		n := m.Node
		out[n.Name] = NodeState{State: n.State, Attempt: n.Attempt, Server: from[m.From], Reported: n.Reported,
			Restarts: n.Restarts, GaveUp: n.GaveUp, Transfer: n.Transfer, LastGaveUp: n.LastGaveUp,
			InState: float64(n.StateMs) / 1e3, InAttempt: float64(n.AttemptMs) / 1e3}
	}
	return out, nil
}

// progress reads one server's progress view, or its node list where it has none (404: an older
// server).
func (h *HTTPServers) progress(ctx context.Context, u string) ([]nodestate.LiveNode, error) {
	c := &bootapi.Client{BaseURL: u, HTTP: h.HTTP}
	res, err := c.Progress(ctx)
	if err == nil {
		return res.Nodes, nil
	}
	if !strings.Contains(err.Error(), " 404 ") {
		return nil, err
	}
	all, err := c.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]nodestate.LiveNode, len(all.Nodes))
	for i, n := range all.Nodes {
		out[i] = nodestate.LiveNode{Name: n.Name, State: n.State, Attempt: n.Attempt, Reported: n.Reported}
	}
	return out, nil
}

// RunAnnouncer is what Servers may also do: tell the servers a run's prediction, for their
// boot pages.
type RunAnnouncer interface {
	AnnounceRun(ctx context.Context, run *bootapi.RunPrediction) error
}

// AnnounceRun tells every server the run's prediction; each keeps its own nodes'. It fails only
// when no server took it.
func (h *HTTPServers) AnnounceRun(ctx context.Context, run *bootapi.RunPrediction) error {
	var errs []error
	for _, u := range h.URLs {
		if _, err := (&bootapi.Client{BaseURL: u, HTTP: h.HTTP}).AnnounceRun(ctx, run, h.Tokens[u]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == len(h.URLs) {
		return errors.Join(errs...)
	}
	return nil
}

// ArmReboot asks the server that holds the node, or every server when none is known.
func (h *HTTPServers) ArmReboot(ctx context.Context, name, server string) error {
	urls := h.URLs
	if server != "" {
		urls = []string{server}
	}
	var errs []error
	for _, u := range urls {
		if _, err := (&bootapi.Client{BaseURL: u, HTTP: h.HTTP}).Reboot(ctx, name, h.Tokens[u]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == len(urls) {
		return fmt.Errorf("arming the reboot of %s: %w", name, errors.Join(errs...))
	}
	return nil
}

// phaseOfNode is the run phase a node's state shows, and the one rule for a failed transfer:
// a failed state that no health report made is a transfer the firmware gave up and retries by
// itself (PXE ROMs and iPXE start over from DHCP), so it costs no power cycle: the node stays
// loading, its link is told (GaveUp), and the loading deadline catches firmware that stops.
func phaseOfNode(st NodeState) (Phase, bool) {
	if st.State == nodestate.Failed && !st.Reported {
		return Loading, true
	}
	return phaseOf(st.State)
}

// phaseOf is the run phase a server state shows: the node fetching (Loading), its files in
// (Booted: the initrd is the last file, and a booted kernel's DHCP comes after it), healthy or
// failed. ok is false for pending, a state that says nothing of the new attempt.
func phaseOf(s nodestate.State) (Phase, bool) {
	switch s {
	case nodestate.Discover, nodestate.Offered, nodestate.Bound, nodestate.NBP, nodestate.Kernel:
		return Loading, true
	case nodestate.Initrd, nodestate.Booted:
		return Booted, true
	case nodestate.Healthy:
		return Healthy, true
	case nodestate.Failed:
		return Failed, true
	}
	return 0, false
}
