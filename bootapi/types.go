package bootapi

import (
	"encoding/json"

	"github.com/bootfabric/bootfabric/nodestate"
)

// HealthReport is the body of POST /api/v1/nodes/{name}/health.
type HealthReport struct {
	// Status is "ok" or "failed".
	Status string `json:"status"`
	// Details is any JSON value the node wants to report (a message, check results).
	Details json.RawMessage `json:"details,omitempty"`
}

// HealthResponse answers a health report.
type HealthResponse struct {
	Node  string          `json:"node"`
	State nodestate.State `json:"state"`
}

// NodesResponse is the body of GET /api/v1/nodes.
type NodesResponse struct {
	Server   string                 `json:"server"`
	ServerID int                    `json:"server_id"`
	Nodes    []nodestate.NodeStatus `json:"nodes"`
	// Inventory lists every inventory node with the server that owns it now, when asked for
	// (?inventory=1): the nodes other servers hold are in no server's Nodes but this one.
	Inventory []InventoryEntry `json:"inventory,omitempty"`
}

// InventoryEntry is one inventory node as the status API lists it: its fields, its groups and the
// server that owns it now ("" when no server does).
type InventoryEntry struct {
	Name     string   `json:"name"`
	MAC      string   `json:"mac"`
	IP       string   `json:"ip,omitempty"`
	Position string   `json:"position"`
	Profile  string   `json:"profile,omitempty"`
	Groups   []string `json:"groups,omitempty"`
	Owner    string   `json:"owner,omitempty"`
}

// ProgressResponse is the body of GET /api/v1/progress: what a boot run reads every poll, per
// node only its state, attempt, current transfer and the counts of its current boot's
// stumbles (nodestate.LiveNode), never the history /api/v1/nodes carries.
type ProgressResponse struct {
	Server string               `json:"server"`
	Nodes  []nodestate.LiveNode `json:"nodes"`
}

// RebootResponse answers an operator's reboot request.
type RebootResponse struct {
	Node            string          `json:"node"`
	State           nodestate.State `json:"state"`
	RebootRequested bool            `json:"reboot_requested"`
}

// PowerOffResponse answers an operator's word that a node was powered off.
type PowerOffResponse struct {
	Node       string          `json:"node"`
	State      nodestate.State `json:"state"`
	PoweredOff bool            `json:"powered_off"`
}

// MembershipView is what GET /api/v1/fleet/membership?nonce=HEX answers: whether this server acts
// for the fleet now, and the proof that this server said so (MAC, hex; empty without a key).
type MembershipView struct {
	Server string `json:"server"`
	Valid  bool   `json:"valid"`
	Nonce  string `json:"nonce,omitempty"`
	MAC    string `json:"mac,omitempty"`
}

// ErrorBody is every API error's body.
type ErrorBody struct {
	Error string `json:"error"`
}

// RunPath is where a bootctl boot run announces its prediction (POST, operator token).
const RunPath = "/api/v1/run"

// RunPrediction is the body of POST /api/v1/run: a bootctl boot run's predicted time to healthy
// of each node it boots. Times count from the run's start; ElapsedSeconds says how long ago, by
// the sender's clock, the run started, so that the server places the start on its own clock and
// a skew between the two clocks moves nothing.
type RunPrediction struct {
	// Run names the run for the page (its journal's file name).
	Run            string    `json:"run"`
	ElapsedSeconds float64   `json:"elapsed_seconds"`
	Nodes          []RunNode `json:"nodes"`
}

// RunNode is one node of a run and its predicted seconds from the run's start to healthy.
type RunNode struct {
	Name      string  `json:"name"`
	HealthyAt float64 `json:"healthy_at"`
}

// RunResponse answers a run's prediction: how many of its nodes the server keeps (its own) and
// how many it left to other servers.
type RunResponse struct {
	Server   string `json:"server"`
	Accepted int    `json:"accepted"`
	Ignored  int    `json:"ignored"`
}
