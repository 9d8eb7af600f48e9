package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/urfave/cli/v2"
)

// publishFlags are the flags of the commands that write a fleet's configuration (fleet apply,
// node add, set and delete with --etcd): the keys the servers trust, and how long to wait for
// them to say what they made of the new revision.
func publishFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "config-key", EnvVars: []string{"BOOTCTL_CONFIG_KEY"},
			Usage: "with --etcd: the public keys the servers trust (their serve --config-key; repeat for several files), besides --sign-key's own: " +
				"a current revision that none of them verifies is never built on"},
		&cli.DurationFlag{Name: "wait", Value: 5 * time.Second,
			Usage: "with --etcd: how long to wait for the live servers to report the revision written as applied or refused (0: do not wait)"},
	}
}

// trustedKeys reads every --config-key file: a repeated flag adds its keys to the others'.
func trustedKeys(c *cli.Context) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for _, p := range c.StringSlice("config-key") {
		k, err := fleet.LoadTrustedKeys(p)
		if err != nil {
			return nil, badInput("--config-key: %w", err)
		}
		keys = append(keys, k...)
	}
	return keys, nil
}

// operatorTrust is what a command that writes a revision trusts: the servers' keys and its own.
func operatorTrust(c *cli.Context, key ed25519.PrivateKey) ([]ed25519.PublicKey, error) {
	keys, err := trustedKeys(c)
	if err != nil {
		return nil, err
	}
	return append(keys, key.Public().(ed25519.PublicKey)), nil
}

// memberRevisions is what one live server published about its configuration revisions.
type memberRevisions struct {
	name             string
	running, checked *bootsrv.RevisionInfo
}

// liveRevisions reads what each live server runs and checked last (bootsrv.MemberInfo).
func liveRevisions(ctx context.Context, cl *fleet.Client) ([]memberRevisions, error) {
	members, _, err := cl.Members(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]memberRevisions, 0, len(members))
	for _, mb := range members {
		info, _ := bootsrv.DecodeMemberInfo(mb)
		out = append(out, memberRevisions{name: mb.Name, running: info.Running, checked: info.Checked})
	}
	return out, nil
}

// newestRunning returns the live server that runs the newest revision (by serial), or nil.
func newestRunning(ms []memberRevisions) *memberRevisions {
	var best *memberRevisions
	for i := range ms {
		if r := ms[i].running; r != nil && (best == nil || r.Serial > best.running.Serial) {
			best = &ms[i]
		}
	}
	return best
}

// recoverHint tells the operator how to get past a current revision that must not be built on.
const recoverHint = "restore the fleet with bootctl fleet apply -f FILE from your own files (it replaces the revision whole)"

// baseProblem says why the servers refuse the fleet's current revision cur, or nil: not signed by
// a trusted key, its serial too far ahead, or older than one a live server runs. Whoever can
// write etcd can put any revision there, so nothing is built on one without this check.
func baseProblem(cl *fleet.Client, cur *fleet.ConfigRevision, trusted []ed25519.PublicKey, ms []memberRevisions) error {
	what := fmt.Sprintf("fleet %s: configuration %d (etcd revision %d)", cl.Fleet(), cur.Number, cur.Revision)
	if err := fleet.CheckRevision(*cur, trusted, time.Now()); err != nil {
		return fmt.Errorf("%s is refused: %w", what, err)
	}
	if m := newestRunning(ms); m != nil && (m.running.Serial > cur.Serial || m.running.Serial == cur.Serial && m.running.SHA256 != cur.SHA256) {
		return fmt.Errorf("%s is refused: %w: its serial %s is below that of configuration %d (%s), which server %s runs",
			what, fleet.ErrRollback, fleet.SerialString(cur.Serial), m.running.Number, fleet.SerialString(m.running.Serial), m.name)
	}
	return nil
}

// afterSerial is the serial a new revision must exceed: the newest a live server runs.
func afterSerial(ms []memberRevisions) uint64 {
	if m := newestRunning(ms); m != nil {
		return m.running.Serial
	}
	return 0
}

// Verdicts of a live server on a revision written, as the commands that write one report them.
const (
	verdictApplied    = "applied"      // it runs it
	verdictAccepted   = "accepted"     // trusted, not running yet (fetching its images)
	verdictRefused    = "refused"      // Trust refused it; Refused says why
	verdictSuperseded = "superseded"   // it has checked a newer revision since
	verdictSilent     = "no answer"    // it said nothing of it within --wait
	verdictUnknown    = "not reported" // its member record has no revisions (an older bootctl)
)

// serverVerdict is what one live server made of the revision written.
type serverVerdict struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Refused string `json:"refused,omitempty"`
}

// verdictOf is what m made of rev so far; final is false while it may still change.
func verdictOf(m memberRevisions, rev fleet.ConfigRevision) (v serverVerdict, final bool) {
	same := func(r *bootsrv.RevisionInfo) bool {
		return r != nil && r.Serial == rev.Serial && r.SHA256 == rev.SHA256
	}
	v.Name = m.name
	switch {
	case same(m.running):
		v.State = verdictApplied
	case same(m.checked) && m.checked.Refused != "":
		v.State, v.Refused = verdictRefused, m.checked.Refused
	case same(m.checked):
		return serverVerdict{Name: m.name, State: verdictAccepted}, false
	case m.checked != nil && m.checked.Revision > rev.Revision:
		v.State = verdictSuperseded
	case m.checked == nil && m.running == nil:
		v.State = verdictUnknown
	default:
		return serverVerdict{Name: m.name, State: verdictSilent}, false
	}
	return v, true
}

// confirmRevision waits up to wait for every live server to apply or refuse rev, reading their
// member records, and returns what each made of it.
func confirmRevision(ctx context.Context, cl *fleet.Client, rev fleet.ConfigRevision, wait time.Duration) ([]serverVerdict, error) {
	deadline := time.Now().Add(wait)
	for {
		ms, err := liveRevisions(ctx, cl)
		if err != nil {
			return nil, err
		}
		out, done := make([]serverVerdict, 0, len(ms)), true
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

// refusedError is the error of a revision written that live servers refuse: the command exits
// non-zero although etcd holds it, since what the servers run is unchanged.
func refusedError(fleetName string, number, revision int64, vs []serverVerdict) error {
	var refused []string
	for _, v := range vs {
		if v.State == verdictRefused {
			refused = append(refused, fmt.Sprintf("%s (%s)", v.Name, v.Refused))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return fmt.Errorf("fleet %s: configuration %d (etcd revision %d) is in etcd, but refused by %s: those servers keep what they run",
		fleetName, number, revision, strings.Join(refused, "; "))
}

// describeVerdicts is one line on what the live servers made of the revision, for the tables.
func describeVerdicts(vs []serverVerdict) string {
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
