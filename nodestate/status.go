package nodestate

import (
	"encoding/json"
	"time"
)

// NodeStatus is one node's boot state as the API shows it and the state file keeps it.
type NodeStatus struct {
	Name     string `json:"name"`
	MAC      string `json:"mac"`
	IP       string `json:"ip,omitempty"`
	Position string `json:"position"`
	Profile  string `json:"profile"`
	State    State  `json:"state"`
	// Since is when the node entered State.
	Since time.Time `json:"since"`
	// Attempt counts boot attempts (each DISCOVER that starts the boot over).
	Attempt int `json:"attempt"`
	// Times holds when the node entered each state of the current attempt.
	Times map[State]time.Time `json:"times"`
	// LastEvent and LastSeen are the latest event (a transition or not) and its time.
	LastEvent Event     `json:"last_event,omitempty"`
	LastSeen  time.Time `json:"last_seen,omitzero"`
	// Error says why the node failed (health details or the failed transfer).
	Error  string  `json:"error,omitempty"`
	Health *Health `json:"health,omitempty"`
	// History holds the latest transitions, oldest first; HistoryDropped counts the older ones
	// let go (health.history bounds it).
	History        []Transition `json:"history,omitempty"`
	HistoryDropped int          `json:"history_dropped,omitempty"`
	// RebootRequested says the operator asked for a reboot (bootctl node reboot): the node's next
	// DISCOVER starts a new attempt even from booted or healthy.
	RebootRequested bool `json:"reboot_requested,omitempty"`
	// PoweredOff says the operator powered the node off through bootctl (which told this server)
	// and the node has not asked for an address since. The servers know a node's power only so:
	// false says nothing of a node powered off another way.
	PoweredOff bool `json:"powered_off,omitempty"`
	// Server is the boot server that holds the node now (in a fleet, the one answering it).
	Server string `json:"server,omitempty"`
	// Reported says the current attempt's health report came: the attempt's token is spent.
	Reported bool `json:"reported,omitempty"`
	// Served lists the files that carry the attempt's token and go to a node once per DHCP
	// exchange (its iPXE script, its overlay): a host that takes the node's address later cannot
	// fetch them again to learn the token.
	Served []TokenFile `json:"served,omitempty"`
}

// TokenFile is a file that carries a boot attempt's token.
type TokenFile string

// The files served once per attempt.
const (
	ScriptFile  TokenFile = "script"
	OverlayFile TokenFile = "overlay"
)

// Health is a node's latest health report.
type Health struct {
	Status  string          `json:"status"`
	Details json.RawMessage `json:"details,omitempty"`
	At      time.Time       `json:"at"`
}

// Transition is one state change of a node.
type Transition struct {
	From   State     `json:"from"`
	To     State     `json:"to"`
	Event  Event     `json:"event"`
	At     time.Time `json:"at"`
	Detail string    `json:"detail,omitempty"`
}

// historyLen bounds each node's kept transitions by default.
const historyLen = 32

// MaxDetailLen bounds a transition's detail and a node's error: a failed health report's details
// are kept whole in Health, not once more per transition.
const MaxDetailLen = 512

// AttemptOpen says whether the node is in a boot attempt whose health report is still to come: one
// that a DHCP exchange started (or, with DHCP off, a script fetch), not failed, and not reported.
func (st NodeStatus) AttemptOpen() bool {
	return st.Attempt > 0 && !st.Reported && st.State != Pending && st.State != Failed
}
