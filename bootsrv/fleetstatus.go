package bootsrv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/nodestate/etcdstore"
)

// FleetRecentTakeovers is how many of the latest takeovers FleetStatus lists.
const FleetRecentTakeovers = 5

// Server states in a FleetStatus.
const (
	FleetLive     = "live"    // a member, answering for the fleet
	FleetDead     = "dead"    // configured, not a member: its blocks moved to survivors
	FleetAbsent   = "absent"  // in failed_servers: dealt around
	FleetStranger = "unknown" // a member whose name is not in the revision's servers
)

// FleetServerStatus is one server of a fleet as `bootctl fleet status` shows it.
type FleetServerStatus struct {
	Name    string `json:"name"`
	Address string `json:"address,omitempty"`
	State   string `json:"state"`
	Nodes   int    `json:"nodes"` // owned now, by the ownership rule
	// Holds counts the nodes whose boot record names this server as the one answering them: a node
	// mid-boot stays with the server that took it over until its boot ends (or MaxKeep), so the
	// two counts differ while a returning owner waits.
	Holds int    `json:"holds"`
	URL   string `json:"url,omitempty"` // from its member info
	// Lease is the member's etcd lease (hex) and Joined the etcd revision at which it joined;
	// JoinedAt is when it joined, as the server published it.
	Lease    string    `json:"lease,omitempty"`
	Joined   int64     `json:"joined_revision,omitempty"`
	JoinedAt time.Time `json:"joined,omitzero"`
	// LastSeen, for a server that is not live, is when the fleet last knew it live: the latest
	// takeover of its nodes, which a survivor makes once its lease ran out (so at most one lease
	// TTL after its last renewal). Zero when no takeover of it is recorded.
	LastSeen time.Time `json:"last_seen,omitzero"`
	// LeaseLeft and LeaseTTL are the seconds the lease has left and its granted TTL (etcd counts
	// whole seconds): TTL - left is how long ago the server last renewed it.
	LeaseLeft float64 `json:"lease_left_seconds,omitempty"`
	LeaseTTL  float64 `json:"lease_ttl_seconds,omitempty"`
}

// FleetTakeover is one takeover event, as the servers write it.
type FleetTakeover struct {
	Seq int64 `json:"seq"`
	TakeoverEvent
}

// FleetStatus is the state of a fleet: its current revision, its servers and its takeovers.
type FleetStatus struct {
	Fleet     string              `json:"fleet"`
	Number    int64               `json:"number"` // the configuration's number: 1 for the first applied
	Revision  int64               `json:"revision"`
	SHA256    string              `json:"sha256"`
	Mapping   string              `json:"mapping"`
	Nodes     int                 `json:"nodes"`
	Live      int                 `json:"live"`
	Unowned   int                 `json:"unowned"` // nodes no server answers (no live server)
	Servers   []FleetServerStatus `json:"servers"`
	Takeovers int                 `json:"takeovers"`
	Recent    []FleetTakeover     `json:"recent_takeovers"` // the latest, oldest first
}

// ReadFleetStatus reads the current revision, the members and the takeovers, and applies the
// ownership rule to the live set as every server does. Etcd failures come as *fleet.EtcdError; a
// fleet without a configuration as fleet.ErrNoConfig.
func ReadFleetStatus(ctx context.Context, cl *fleet.Client) (*FleetStatus, error) {
	cur, doc, m, err := ReadFleetRevision(ctx, cl)
	if err != nil {
		return nil, err
	}
	eps := cl.Endpoints()
	members, _, err := cl.Members(ctx)
	if err != nil {
		return nil, &fleet.EtcdError{Endpoints: eps, Err: err}
	}
	events, err := cl.Events(ctx, "takeover")
	if err != nil {
		return nil, &fleet.EtcdError{Endpoints: eps, Err: err}
	}
	var live []string
	for _, mb := range members {
		live = append(live, mb.Name)
	}
	own, err := doc.Ownership(m, live)
	if err != nil {
		return nil, fmt.Errorf("revision %d: %w", cur.Revision, err)
	}
	st := &FleetStatus{Fleet: cl.Fleet(), Number: cur.Number, Revision: cur.Revision, SHA256: cur.SHA256, Mapping: doc.Mapping,
		Nodes: len(m.Inventory.Nodes), Unowned: own.Unowned, Takeovers: len(events), Recent: []FleetTakeover{}}
	st.Servers, st.Live = fleetServerRows(ctx, cl, doc, own, members)
	recs, err := etcdstore.LoadAll(ctx, cl)
	if err != nil {
		return nil, &fleet.EtcdError{Endpoints: eps, Err: err}
	}
	holds := map[string]int{}
	for _, r := range recs {
		holds[r.Server]++
	}
	for i := range st.Servers {
		st.Servers[i].Holds = holds[st.Servers[i].Name]
	}
	st.addTakeovers(events)
	return st, nil
}

// addTakeovers keeps the latest events and sets when each server not live was last seen: the
// latest takeover of its nodes.
func (st *FleetStatus) addTakeovers(events []fleet.Event) {
	gone := map[string]time.Time{}
	for i, ev := range events {
		tk := FleetTakeover{Seq: ev.Seq}
		_ = json.Unmarshal(ev.Rec, &tk) // a record this bootctl cannot read still counts
		tk.Seq = ev.Seq
		if tk.At.After(gone[tk.From]) {
			gone[tk.From] = tk.At
		}
		if i >= len(events)-FleetRecentTakeovers {
			st.Recent = append(st.Recent, tk)
		}
	}
	for i := range st.Servers {
		if s := &st.Servers[i]; s.State == FleetDead || s.State == FleetAbsent {
			s.LastSeen = gone[s.Name]
		}
	}
}

// ReadFleetRevision reads the fleet's current revision and decodes its document and machine.
func ReadFleetRevision(ctx context.Context, cl *fleet.Client) (*fleet.ConfigRevision, *bootconfig.FleetDoc, *bootconfig.FleetMachine, error) {
	cur, err := cl.Config(ctx)
	if errors.Is(err, fleet.ErrNoConfig) {
		return nil, nil, nil, err
	}
	if err != nil {
		return nil, nil, nil, &fleet.EtcdError{Endpoints: cl.Endpoints(), Err: err}
	}
	doc, err := bootconfig.DecodeFleetDoc(cur.Doc)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("revision %d: %w", cur.Revision, err)
	}
	m, err := doc.Machine()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("revision %d: %w", cur.Revision, err)
	}
	return &cur, doc, m, nil
}

// fleetServerRows returns a row per configured server (live with its lease, dead, or absent when
// in failed_servers), then one per member that is not a configured server, and the number of
// live configured servers.
func fleetServerRows(ctx context.Context, cl *fleet.Client, doc *bootconfig.FleetDoc, own bootconfig.FleetOwnership, members []fleet.Member) ([]FleetServerStatus, int) {
	byName := map[string]fleet.Member{}
	for _, mb := range members {
		byName[mb.Name] = mb
	}
	var rows []FleetServerStatus
	live := 0
	for i, s := range doc.Servers {
		row := FleetServerStatus{Name: s.Name, Address: s.Address, Nodes: own.Nodes[i], State: FleetDead}
		if mb, ok := byName[s.Name]; ok {
			fillMember(&row, mb)
			if left, ttl, err := cl.LeaseTTL(ctx, mb.LeaseID); err == nil {
				row.LeaseLeft, row.LeaseTTL = left.Seconds(), ttl.Seconds()
			}
			delete(byName, s.Name)
			live++
		} else if slices.Contains(doc.FailedServers, i) {
			row.State = FleetAbsent
		}
		rows = append(rows, row)
	}
	for _, mb := range members {
		if _, stranger := byName[mb.Name]; stranger {
			row := FleetServerStatus{Name: mb.Name}
			fillMember(&row, mb)
			row.State = FleetStranger
			rows = append(rows, row)
		}
	}
	return rows, live
}

// fillMember sets a server's row from its membership: live, as it holds its lease, which is what
// the other servers go by (its info, when readable, adds its URL and when it joined).
func fillMember(row *FleetServerStatus, mb fleet.Member) {
	row.State = FleetLive
	if info, ok := DecodeMemberInfo(mb); ok {
		row.URL = info.URL
		if row.Address == "" {
			row.Address = info.Address
		}
		row.JoinedAt = info.Joined
	}
	row.Lease = strconv.FormatInt(mb.LeaseID, 16)
	row.Joined = mb.Revision
}
