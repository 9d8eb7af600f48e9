package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/nodestate/etcdstore"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

// fleetRecentTakeovers is how many of the latest takeovers `fleet status` lists.
const fleetRecentTakeovers = 5

// fleetNameFlag is --fleet: one etcd can hold several fleets, each under /bootfabric/NAME/.
func fleetNameFlag() cli.Flag {
	return &cli.StringFlag{Name: "fleet", EnvVars: []string{"BOOTCTL_FLEET"}, Value: "default",
		Usage: "fleet name (a-z, 0-9, '-'): its keys live under /bootfabric/NAME/ in etcd"}
}

func fleetCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "fleet",
		Usage: "configure a fleet of boot servers that share etcd, and show its servers",
		Subcommands: []*cli.Command{
			{
				Name: "apply",
				Usage: "check a fleet file as every server would and store it in etcd as the fleet's new configuration " +
					"revision (the servers pick it up without a restart); a bad file is refused with file:line and nothing is written",
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Required: true,
						Usage: "fleet file: a boot server's YAML without its per-server settings; images: names the store whose profiles are published"},
					fleetEtcdFlag(), fleetNameFlag(),
					&cli.StringFlag{Name: "sign-key", EnvVars: []string{"BOOTCTL_SIGN_KEY"},
						Usage: "the operator's private key (bootctl fleet keygen): servers apply only revisions signed by a key they trust (serve --config-key)"},
					&cli.BoolFlag{Name: "dry-run", Usage: "check the file and show the revision; do not contact etcd"},
					outputFlag("table", "json", "yaml"),
				}, append(publishFlags(), etcdSecurityFlags()...)...),
				Action: func(c *cli.Context) error { return fleetApply(c, e) },
			},
			{
				Name: "keygen",
				Usage: "make a fleet's keys: FILE (private, mode 600) signs revisions (fleet apply --sign-key) and stays with the operator; " +
					"FILE.pub (serve --config-key) and FILE.secret (mode 600, serve --fleet-secret) go to every server",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "out", Required: true, Usage: "private key file to create; FILE.pub and FILE.secret beside it"},
					outputFlag("table", "json", "yaml"),
				},
				Action: func(c *cli.Context) error { return fleetKeygen(c, e) },
			},
			fleetAuthCommand(e),
			{
				Name: "status",
				Usage: "show the servers of the fleet's current revision: liveness, the nodes each owns now " +
					"(by the ownership rule, from the live members), and the takeovers so far",
				Flags:  append([]cli.Flag{fleetEtcdFlag(), fleetNameFlag(), outputFlag("table", "json", "yaml")}, etcdSecurityFlags()...),
				Action: func(c *cli.Context) error { return fleetStatusAction(c, e) },
			},
		},
	}
}

// fleetEtcdError is an etcd failure on one line that names the endpoints: errors.Join in the
// client's probe spans lines, and bootctl reports every failure on one.
type fleetEtcdError struct {
	endpoints []string
	err       error
}

func (e *fleetEtcdError) Error() string {
	msg := strings.ReplaceAll(e.err.Error(), "\n", "; ")
	for _, ep := range e.endpoints {
		if !strings.Contains(msg, ep) {
			return fmt.Sprintf("etcd at %s: %s", strings.Join(e.endpoints, ","), msg)
		}
	}
	return msg // names every endpoint already
}

func (e *fleetEtcdError) Unwrap() error { return e.err }

// openFleet connects to the fleet's etcd.
func openFleet(c *cli.Context) (*fleet.Client, []string, error) {
	eps, err := fleetEndpoints(c)
	if err != nil {
		return nil, nil, err
	}
	if err := fleet.ValidFleetName(c.String("fleet")); err != nil {
		return nil, nil, badInput("--fleet: %w", err)
	}
	// No client log: its warnings (an endpoint unreachable) would repeat the error on more lines,
	// and a one-shot command has nothing else to say.
	cl, err := openFleetSecure(c.Context, c, fleet.Options{Endpoints: eps, Fleet: c.String("fleet"), Log: zap.NewNop()})
	var bad *badInputError
	if errors.As(err, &bad) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, &fleetEtcdError{eps, err}
	}
	return cl, eps, nil
}

// fleetServerRow is one server of a revision as `fleet apply` shows it.
type fleetServerRow struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	Failed  bool   `json:"failed,omitempty"` // in failed_servers: dealt around
	Nodes   int    `json:"nodes"`            // owned with every other server live
}

// fleetProfileRow is one published profile.
type fleetProfileRow struct {
	Name  string `json:"name"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

// fleetApplyResult is what `fleet apply` reports.
type fleetApplyResult struct {
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
	Servers  []fleetServerRow  `json:"servers"`
	Profiles []fleetProfileRow `json:"profiles"`
	// Applied is what each live server made of the revision, as it reported within --wait.
	Applied []serverVerdict `json:"applied_by,omitempty"`
}

func fleetApply(c *cli.Context, e *env) error {
	format, err := outputFormat(c, "table", "json", "yaml")
	if err != nil {
		return err
	}
	key, err := signingKey(c)
	if err != nil {
		return err
	}
	doc, err := bootconfig.LoadFleetFile(c.String("file"))
	if err != nil {
		return asBadInput(err)
	}
	enc, err := doc.Encode()
	if err != nil {
		return err
	}
	res, err := fleetSummary(doc, enc)
	if err != nil {
		return asBadInput(err)
	}
	res.Fleet, res.DryRun = c.String("fleet"), c.Bool("dry-run")
	if key != nil {
		res.Key = fleet.KeyID(key.Public().(ed25519.PublicKey))
	}
	if err := fleet.ValidFleetName(res.Fleet); err != nil {
		return badInput("--fleet: %w", err)
	}
	if !res.DryRun {
		if err := storeRevision(c, e, res, enc, key); err != nil {
			return err
		}
	}
	if format != "table" {
		err = writeData(e.stdout, format, res)
	} else {
		err = writeFleetApply(e, res)
	}
	if err != nil {
		return err
	}
	return refusedError(res.Fleet, res.Number, res.Revision, res.Applied)
}

// signingKey reads --sign-key, which every apply but a dry run needs.
func signingKey(c *cli.Context) (ed25519.PrivateKey, error) {
	switch {
	case c.String("sign-key") != "":
		key, err := fleet.LoadSigningKey(c.String("sign-key"))
		if err != nil {
			return nil, badInput("--sign-key: %w", err)
		}
		return key, nil
	case !c.Bool("dry-run"):
		return nil, badInput("--sign-key: required: the operator's private key that signs the revision (make one with bootctl fleet keygen)")
	}
	return nil, nil
}

// storeRevision signs enc with key and stores it as the fleet's configuration, noting in res the
// revision, whether it changed and what the live servers made of it. A current revision that the
// servers refuse (a forgery, a rollback) is replaced, with a warning: this is how the operator
// recovers from one, as the document comes whole from the operator's files.
func storeRevision(c *cli.Context, e *env, res *fleetApplyResult, enc []byte, key ed25519.PrivateKey) error {
	trusted, err := operatorTrust(c, key)
	if err != nil {
		return err
	}
	cl, eps, err := openFleet(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ms, err := liveRevisions(c.Context, cl)
	if err != nil {
		return &fleetEtcdError{eps, err}
	}
	switch cur, err := cl.Config(c.Context); {
	case err == nil:
		if perr := baseProblem(cl, &cur, trusted, ms); perr != nil {
			fmt.Fprintf(e.stderr, "warning: %v; replacing it with %s\n", perr, c.String("file"))
		}
	case !errors.Is(err, fleet.ErrNoConfig):
		fmt.Fprintf(e.stderr, "warning: fleet %s: the current configuration cannot be read (%v); replacing it with %s\n", cl.Fleet(), err, c.String("file"))
	}
	rev, changed, err := cl.PublishConfig(c.Context, enc, key, fleet.PublishOptions{Trusted: trusted, After: afterSerial(ms)})
	if err != nil {
		if errors.Is(err, fleet.ErrConfigTooLarge) {
			return badInput("%s: %w", c.String("file"), err)
		}
		if errors.Is(err, fleet.ErrConflict) {
			return fmt.Errorf("fleet %s: %w: run the command again", cl.Fleet(), err)
		}
		return &fleetEtcdError{eps, err}
	}
	res.Revision, res.Number, res.Changed = rev.Revision, rev.Number, changed
	if res.Applied, err = confirmRevision(c.Context, cl, rev, c.Duration("wait")); err != nil {
		return &fleetEtcdError{eps, err}
	}
	return nil
}

// fleetSummary describes a revision: its servers with their share, nodes and profiles.
func fleetSummary(doc *bootconfig.FleetDoc, enc []byte) (*fleetApplyResult, error) {
	m, err := doc.Machine()
	if err != nil {
		return nil, err
	}
	own, err := doc.Ownership(m, doc.ServerNames())
	if err != nil {
		return nil, err
	}
	res := &fleetApplyResult{SHA256: doc.Hash(), Bytes: len(enc), Nodes: len(m.Inventory.Nodes), Mapping: doc.Mapping,
		Servers: []fleetServerRow{}, Profiles: []fleetProfileRow{}}
	for i, s := range doc.Servers {
		res.Servers = append(res.Servers, fleetServerRow{Name: s.Name, Address: s.Address, Nodes: own.Nodes[i], Failed: slices.Contains(doc.FailedServers, i)})
	}
	for _, p := range doc.Profiles {
		row := fleetProfileRow{Name: p.Name, Files: len(p.FileNames())}
		for _, b := range p.Files {
			row.Bytes += b.Size
		}
		res.Profiles = append(res.Profiles, row)
	}
	return res, nil
}

func writeFleetApply(e *env, r *fleetApplyResult) error {
	switch {
	case r.DryRun:
		fmt.Fprintf(e.stdout, "fleet %s: dry run, nothing written; sha256 %s (%d bytes)\n", r.Fleet, r.SHA256, r.Bytes)
	case r.Changed:
		fmt.Fprintf(e.stdout, "fleet %s: configuration %d applied (etcd revision %d), signed by key %s; sha256 %s (%d bytes)\n", r.Fleet, r.Number, r.Revision, r.Key, r.SHA256, r.Bytes)
	default:
		fmt.Fprintf(e.stdout, "fleet %s: configuration %d unchanged (the same is stored, etcd revision %d); sha256 %s\n", r.Fleet, r.Number, r.Revision, r.SHA256)
	}
	if !r.DryRun {
		fmt.Fprintln(e.stdout, describeVerdicts(r.Applied))
	}
	fmt.Fprintf(e.stdout, "%s, %s (%s), %s\n\n", fleetPlural(len(r.Servers), "server"), fleetPlural(r.Nodes, "node"), r.Mapping, fleetPlural(len(r.Profiles), "profile"))
	t := newTable(e.stdout)
	t.row("SERVER", "ADDRESS", "NODES", "")
	for _, s := range r.Servers {
		note := ""
		if s.Failed {
			note = "failed_servers"
		}
		t.row(s.Name, s.Address, s.Nodes, note)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	t = newTable(e.stdout)
	t.row("PROFILE", "FILES", "BYTES")
	for _, p := range r.Profiles {
		t.row(p.Name, p.Files, p.Bytes)
	}
	return t.flush()
}

// Server states in `fleet status`.
const (
	fleetLive     = "live"    // a member, answering for the fleet
	fleetDead     = "dead"    // configured, not a member: its blocks moved to survivors
	fleetAbsent   = "absent"  // in failed_servers: dealt around
	fleetStranger = "unknown" // a member whose name is not in the revision's servers
)

// fleetServerStatus is one server in `fleet status`.
type fleetServerStatus struct {
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

// fleetTakeover is one takeover event (written by the servers as bootsrv.TakeoverEvent).
type fleetTakeover struct {
	Seq int64 `json:"seq"`
	bootsrv.TakeoverEvent
}

// fleetStatusResult is what `fleet status` reports.
type fleetStatusResult struct {
	Fleet     string              `json:"fleet"`
	Number    int64               `json:"number"` // the configuration's number: 1 for the first applied
	Revision  int64               `json:"revision"`
	SHA256    string              `json:"sha256"`
	Mapping   string              `json:"mapping"`
	Nodes     int                 `json:"nodes"`
	Live      int                 `json:"live"`
	Unowned   int                 `json:"unowned"` // nodes no server answers (no live server)
	Servers   []fleetServerStatus `json:"servers"`
	Takeovers int                 `json:"takeovers"`
	Recent    []fleetTakeover     `json:"recent_takeovers"` // the latest, oldest first
}

func fleetStatusAction(c *cli.Context, e *env) error {
	format, err := outputFormat(c, "table", "json", "yaml")
	if err != nil {
		return err
	}
	cl, eps, err := openFleet(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	st, err := fleetStatus(c.Context, cl, eps)
	if errors.Is(err, fleet.ErrNoConfig) {
		return fmt.Errorf("fleet %s: %w", cl.Fleet(), err)
	}
	if err != nil {
		return err
	}
	if format != "table" {
		err = writeData(e.stdout, format, st)
	} else {
		err = writeFleetStatus(e, st)
	}
	if err == nil && st.Live == 0 {
		// As a health check, a fleet with no live server is down: exit 1, the report printed.
		err = fmt.Errorf("fleet %s: none of its %d servers is live: no node is answered", st.Fleet, len(st.Servers))
	}
	return err
}

// fleetStatus reads the current revision, the members and the takeovers, and applies the
// ownership rule to the live set as every server does.
func fleetStatus(ctx context.Context, cl *fleet.Client, eps []string) (*fleetStatusResult, error) {
	cur, doc, m, err := readFleetRevision(ctx, cl, eps)
	if err != nil {
		return nil, err
	}
	members, _, err := cl.Members(ctx)
	if err != nil {
		return nil, &fleetEtcdError{eps, err}
	}
	events, err := cl.Events(ctx, "takeover")
	if err != nil {
		return nil, &fleetEtcdError{eps, err}
	}
	var live []string
	for _, mb := range members {
		live = append(live, mb.Name)
	}
	own, err := doc.Ownership(m, live)
	if err != nil {
		return nil, fmt.Errorf("revision %d: %w", cur.Revision, err)
	}
	st := &fleetStatusResult{Fleet: cl.Fleet(), Number: cur.Number, Revision: cur.Revision, SHA256: cur.SHA256, Mapping: doc.Mapping,
		Nodes: len(m.Inventory.Nodes), Unowned: own.Unowned, Takeovers: len(events), Recent: []fleetTakeover{}}
	st.Servers, st.Live = fleetServerRows(ctx, cl, doc, own, members)
	recs, err := etcdstore.LoadAll(ctx, cl)
	if err != nil {
		return nil, &fleetEtcdError{eps, err}
	}
	holds := map[string]int{}
	for _, r := range recs {
		holds[r.Server]++
	}
	for i := range st.Servers {
		st.Servers[i].Holds = holds[st.Servers[i].Name]
	}
	gone := map[string]time.Time{}
	for i, ev := range events {
		tk := fleetTakeover{Seq: ev.Seq}
		_ = json.Unmarshal(ev.Rec, &tk) // a record this bootctl cannot read still counts
		tk.Seq = ev.Seq
		if tk.At.After(gone[tk.From]) {
			gone[tk.From] = tk.At
		}
		if i >= len(events)-fleetRecentTakeovers {
			st.Recent = append(st.Recent, tk)
		}
	}
	for i := range st.Servers {
		if s := &st.Servers[i]; s.State == fleetDead || s.State == fleetAbsent {
			s.LastSeen = gone[s.Name]
		}
	}
	return st, nil
}

// readFleetRevision reads the fleet's current revision and decodes its document and machine.
func readFleetRevision(ctx context.Context, cl *fleet.Client, eps []string) (*fleet.ConfigRevision, *bootconfig.FleetDoc, *bootconfig.FleetMachine, error) {
	cur, err := cl.Config(ctx)
	if errors.Is(err, fleet.ErrNoConfig) {
		return nil, nil, nil, err
	}
	if err != nil {
		return nil, nil, nil, &fleetEtcdError{eps, err}
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
func fleetServerRows(ctx context.Context, cl *fleet.Client, doc *bootconfig.FleetDoc, own bootconfig.FleetOwnership, members []fleet.Member) ([]fleetServerStatus, int) {
	byName := map[string]fleet.Member{}
	for _, mb := range members {
		byName[mb.Name] = mb
	}
	var rows []fleetServerStatus
	live := 0
	for i, s := range doc.Servers {
		row := fleetServerStatus{Name: s.Name, Address: s.Address, Nodes: own.Nodes[i], State: fleetDead}
		if mb, ok := byName[s.Name]; ok {
			fillMember(&row, mb)
			if left, ttl, err := cl.LeaseTTL(ctx, mb.LeaseID); err == nil {
				row.LeaseLeft, row.LeaseTTL = left.Seconds(), ttl.Seconds()
			}
			delete(byName, s.Name)
			live++
		} else if slices.Contains(doc.FailedServers, i) {
			row.State = fleetAbsent
		}
		rows = append(rows, row)
	}
	for _, mb := range members {
		if _, stranger := byName[mb.Name]; stranger {
			row := fleetServerStatus{Name: mb.Name}
			fillMember(&row, mb)
			row.State = fleetStranger
			rows = append(rows, row)
		}
	}
	return rows, live
}

// fillMember sets a server's row from its membership: live, as it holds its lease, which is what
// the other servers go by (its info, when readable, adds its URL and when it joined).
func fillMember(row *fleetServerStatus, mb fleet.Member) {
	row.State = fleetLive
	if info, ok := bootsrv.DecodeMemberInfo(mb); ok {
		row.URL = info.URL
		if row.Address == "" {
			row.Address = info.Address
		}
		row.JoinedAt = info.Joined
	}
	row.Lease = strconv.FormatInt(mb.LeaseID, 16)
	row.Joined = mb.Revision
}

func writeFleetStatus(e *env, st *fleetStatusResult) error {
	fmt.Fprintf(e.stdout, "fleet %s: configuration %d (etcd revision %d), sha256 %s; %d nodes (%s), %d of %d servers live\n",
		st.Fleet, st.Number, st.Revision, st.SHA256[:min(12, len(st.SHA256))], st.Nodes, st.Mapping, st.Live, len(st.Servers))
	if st.Unowned > 0 {
		fmt.Fprintf(e.stdout, "no live server owns %d of the %d nodes: nobody answers them until a server joins\n", st.Unowned, st.Nodes)
	}
	fmt.Fprintln(e.stdout)
	t := newTable(e.stdout)
	t.row("SERVER", "ADDRESS", "STATE", "NODES", "HOLDS", "URL", "JOINED", "LAST SEEN", "LEASE")
	for _, s := range st.Servers {
		url, lease := orDash(s.URL), "-"
		if s.LeaseTTL > 0 {
			lease = fmt.Sprintf("renewed %gs ago, %gs left of %gs", s.LeaseTTL-s.LeaseLeft, s.LeaseLeft, s.LeaseTTL)
		}
		t.row(s.Name, s.Address, s.State, s.Nodes, s.Holds, url, fmtTime(s.JoinedAt), fmtTime(s.LastSeen), lease)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "\ntakeovers: %d\n", st.Takeovers)
	if len(st.Recent) == 0 {
		return nil
	}
	t = newTable(e.stdout)
	t.row("SEQ", "AT", "FROM", "TO", "NODES", "MID-BOOT")
	for _, tk := range st.Recent {
		at := "-"
		if !tk.At.IsZero() {
			at = tk.At.UTC().Format(time.RFC3339)
		}
		t.row(tk.Seq, at, tk.From, tk.To, tk.Nodes, tk.MidBoot)
	}
	return t.flush()
}

// fleetPlural writes a count with its noun: "1 profile", "2 profiles".
func fleetPlural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// fleetKeygenResult is what `fleet keygen` reports.
type fleetKeygenResult struct {
	Private string `json:"private"`
	Public  string `json:"public"`
	Secret  string `json:"secret"`
	Key     string `json:"key"` // fleet.KeyID of the public key
}

// fleetKeygen writes a new signing key pair. It never replaces a file: a lost private key would
// lock the operator out of every server that trusts it.
func fleetKeygen(c *cli.Context, e *env) error {
	format, err := outputFormat(c, "table", "json", "yaml")
	if err != nil {
		return err
	}
	res := fleetKeygenResult{Private: c.String("out"), Public: c.String("out") + ".pub", Secret: c.String("out") + ".secret"}
	priv, pub, err := fleet.GenerateSigningKey(nil)
	if err != nil {
		return err
	}
	keys, err := fleet.ParseTrustedKeys(pub)
	if err != nil {
		return err
	}
	res.Key = fleet.KeyID(keys[0])
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{res.Private, priv, 0o600}, {res.Public, pub, 0o644}, {res.Secret, fleet.GenerateFleetSecret(), 0o600}} {
		if err := writeNewFile(f.path, f.data, f.mode); err != nil {
			if errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrNotExist) {
				return badInput("--out: %w", err)
			}
			return err
		}
	}
	if format != "table" {
		return writeData(e.stdout, format, res)
	}
	_, err = fmt.Fprintf(e.stdout, "key %s: private %s (keep it off the servers); to every server: %s (serve --config-key) and %s (serve --fleet-secret)\n",
		res.Key, res.Private, res.Public, res.Secret)
	return err
}

// writeNewFile creates path with data and mode, failing if it exists.
func writeNewFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
