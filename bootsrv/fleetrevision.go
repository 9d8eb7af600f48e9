package bootsrv

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/fleet"
)

// MemberRevisions is what one live server published about its configuration revisions.
type MemberRevisions struct {
	Name             string
	Running, Checked *RevisionInfo
}

// LiveRevisions reads what each live server runs and checked last (MemberInfo).
func LiveRevisions(ctx context.Context, cl *fleet.Client) ([]MemberRevisions, error) {
	members, _, err := cl.Members(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]MemberRevisions, 0, len(members))
	for _, mb := range members {
		info, _ := DecodeMemberInfo(mb)
		out = append(out, MemberRevisions{Name: mb.Name, Running: info.Running, Checked: info.Checked})
	}
	return out, nil
}

// newestRunning returns the live server that runs the newest revision (by serial), or nil.
func newestRunning(ms []MemberRevisions) *MemberRevisions {
	var best *MemberRevisions
	for i := range ms {
		if r := ms[i].Running; r != nil && (best == nil || r.Serial > best.Running.Serial) {
			best = &ms[i]
		}
	}
	return best
}

// RecoverHint tells the operator how to get past a current revision that must not be built on.
const RecoverHint = "restore the fleet with bootctl fleet apply -f FILE from your own files (it replaces the revision whole)"

// BaseProblem says why the servers refuse the fleet's current revision cur, or nil: not signed by
// a trusted key, its serial too far ahead, or older than one a live server runs. Whoever can
// write etcd can put any revision there, so nothing is built on one without this check.
func BaseProblem(cl *fleet.Client, cur *fleet.ConfigRevision, trusted []ed25519.PublicKey, ms []MemberRevisions) error {
	what := fmt.Sprintf("fleet %s: configuration %d (etcd revision %d)", cl.Fleet(), cur.Number, cur.Revision)
	if err := fleet.CheckRevision(*cur, trusted, time.Now()); err != nil {
		return fmt.Errorf("%s is refused: %w", what, err)
	}
	if m := newestRunning(ms); m != nil && (m.Running.Serial > cur.Serial || m.Running.Serial == cur.Serial && m.Running.SHA256 != cur.SHA256) {
		return fmt.Errorf("%s is refused: %w: its serial %s is below that of configuration %d (%s), which server %s runs",
			what, fleet.ErrRollback, fleet.SerialString(cur.Serial), m.Running.Number, fleet.SerialString(m.Running.Serial), m.Name)
	}
	return nil
}

// AfterSerial is the serial a new revision must exceed: the newest a live server runs.
func AfterSerial(ms []MemberRevisions) uint64 {
	if m := newestRunning(ms); m != nil {
		return m.Running.Serial
	}
	return 0
}

// Verdicts of a live server on a revision written, as the commands that write one report them.
const (
	VerdictApplied    = "applied"      // it runs it
	VerdictAccepted   = "accepted"     // trusted, not running yet (fetching its images)
	VerdictRefused    = "refused"      // Trust refused it; Refused says why
	VerdictSuperseded = "superseded"   // it has checked a newer revision since
	VerdictSilent     = "no answer"    // it said nothing of it within the wait
	VerdictUnknown    = "not reported" // its member record has no revisions (an older bootctl)
)

// ServerVerdict is what one live server made of the revision written.
type ServerVerdict struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Refused string `json:"refused,omitempty"`
}

// verdictOf is what m made of rev so far; final is false while it may still change.
func verdictOf(m MemberRevisions, rev fleet.ConfigRevision) (v ServerVerdict, final bool) {
	same := func(r *RevisionInfo) bool {
		return r != nil && r.Serial == rev.Serial && r.SHA256 == rev.SHA256
	}
	v.Name = m.Name
	switch {
	case same(m.Running):
		v.State = VerdictApplied
	case same(m.Checked) && m.Checked.Refused != "":
		v.State, v.Refused = VerdictRefused, m.Checked.Refused
	case same(m.Checked):
		return ServerVerdict{Name: m.Name, State: VerdictAccepted}, false
	case m.Checked != nil && m.Checked.Revision > rev.Revision:
		v.State = VerdictSuperseded
	case m.Checked == nil && m.Running == nil:
		v.State = VerdictUnknown
	default:
		return ServerVerdict{Name: m.Name, State: VerdictSilent}, false
	}
	return v, true
}

// ConfirmRevision waits up to wait for every live server to apply or refuse rev, reading their
// member records, and returns what each made of it.
func ConfirmRevision(ctx context.Context, cl *fleet.Client, rev fleet.ConfigRevision, wait time.Duration) ([]ServerVerdict, error) {
	deadline := time.Now().Add(wait)
	for {
		ms, err := LiveRevisions(ctx, cl)
		if err != nil {
			return nil, err
		}
		out, done := make([]ServerVerdict, 0, len(ms)), true
		for _, m := range ms {
			v, final := verdictOf(m, rev)
			out = append(out, v)
			done = done && final
		}
		if done || !time.Now().Before(deadline) {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RefusedError is the error of a revision written that live servers refuse: the command exits
// non-zero although etcd holds it, since what the servers run is unchanged.
func RefusedError(fleetName string, number, revision int64, vs []ServerVerdict) error {
	var refused []string
	for _, v := range vs {
		if v.State == VerdictRefused {
			refused = append(refused, fmt.Sprintf("%s (%s)", v.Name, v.Refused))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return fmt.Errorf("fleet %s: configuration %d (etcd revision %d) is in etcd, but refused by %s: those servers keep what they run",
		fleetName, number, revision, strings.Join(refused, "; "))
}

// DescribeVerdicts is one line on what the live servers made of the revision, for the tables.
func DescribeVerdicts(vs []ServerVerdict) string {
	if len(vs) == 0 {
		return "no live server to apply it yet"
	}
	by := map[string][]string{}
	var order []string
	for _, v := range vs {
		if by[v.State] == nil {
			order = append(order, v.State)
		}
		by[v.State] = append(by[v.State], v.Name)
	}
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = s + " by " + strings.Join(by[s], ", ")
	}
	return "servers: " + strings.Join(parts, "; ")
}

// FleetServerRow is one server of a revision as `fleet apply` shows it.
type FleetServerRow struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	Failed  bool   `json:"failed,omitempty"` // in failed_servers: dealt around
	Nodes   int    `json:"nodes"`            // owned with every other server live
}

// FleetProfileRow is one published profile.
type FleetProfileRow struct {
	Name  string `json:"name"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

// FleetApplyResult is what `fleet apply` reports.
type FleetApplyResult struct {
	Fleet    string `json:"fleet"`
	DryRun   bool   `json:"dry_run,omitempty"`
	Revision int64  `json:"revision,omitempty"` // etcd revision of the configuration
	// Number is the configuration's number in the fleet: 1 for the first applied.
	Number   int64             `json:"number,omitempty"`
	Changed  bool              `json:"changed"` // false: the same document was stored already
	SHA256   string            `json:"sha256"`
	Key      string            `json:"key,omitempty"` // the signing key's id (fleet.KeyID)
	Bytes    int               `json:"bytes"`         // the document, uncompressed
	Nodes    int               `json:"nodes"`
	Mapping  string            `json:"mapping"`
	Servers  []FleetServerRow  `json:"servers"`
	Profiles []FleetProfileRow `json:"profiles"`
	// Applied is what each live server made of the revision, as it reported within the wait.
	Applied []ServerVerdict `json:"applied_by,omitempty"`
}

// SummarizeFleetDoc describes a revision (enc, the encoded doc): its servers with their share,
// nodes and profiles.
func SummarizeFleetDoc(doc *bootconfig.FleetDoc, enc []byte) (*FleetApplyResult, error) {
	m, err := doc.Machine()
	if err != nil {
		return nil, err
	}
	own, err := doc.Ownership(m, doc.ServerNames())
	if err != nil {
		return nil, err
	}
	res := &FleetApplyResult{SHA256: doc.Hash(), Bytes: len(enc), Nodes: len(m.Inventory.Nodes), Mapping: doc.Mapping,
		Servers: []FleetServerRow{}, Profiles: []FleetProfileRow{}}
	for i, s := range doc.Servers {
		res.Servers = append(res.Servers, FleetServerRow{Name: s.Name, Address: s.Address, Nodes: own.Nodes[i], Failed: slices.Contains(doc.FailedServers, i)})
	}
	for _, p := range doc.Profiles {
		row := FleetProfileRow{Name: p.Name, Files: len(p.FileNames())}
		for _, b := range p.Files {
			row.Bytes += b.Size
		}
		res.Profiles = append(res.Profiles, row)
	}
	return res, nil
}

// StoreFleetRevision signs enc with key and stores it as the fleet's configuration, noting in res
// the revision, whether it changed and what the live servers made of it within wait. A current
// revision that the servers refuse (a forgery, a rollback) is replaced, and replaced says why:
// this is how the operator recovers from one, as the document comes whole from the operator's
// files. PublishConfig's errors come as they are; the other etcd failures as *fleet.EtcdError.
func StoreFleetRevision(ctx context.Context, cl *fleet.Client, res *FleetApplyResult, enc []byte, key ed25519.PrivateKey,
	trusted []ed25519.PublicKey, wait time.Duration) (replaced, err error) {
	ms, err := LiveRevisions(ctx, cl)
	if err != nil {
		return nil, &fleet.EtcdError{Endpoints: cl.Endpoints(), Err: err}
	}
	switch cur, err := cl.Config(ctx); {
	case err == nil:
		replaced = BaseProblem(cl, &cur, trusted, ms)
	case !errors.Is(err, fleet.ErrNoConfig):
		replaced = fmt.Errorf("fleet %s: the current configuration cannot be read (%v)", cl.Fleet(), err)
	}
	rev, changed, err := cl.PublishConfig(ctx, enc, key, fleet.PublishOptions{Trusted: trusted, After: AfterSerial(ms)})
	if err != nil {
		return replaced, err
	}
	res.Revision, res.Number, res.Changed = rev.Revision, rev.Number, changed
	if res.Applied, err = ConfirmRevision(ctx, cl, rev, wait); err != nil {
		return replaced, &fleet.EtcdError{Endpoints: cl.Endpoints(), Err: err}
	}
	return replaced, nil
}
