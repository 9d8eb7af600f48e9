package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
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

// fleetEtcdError is an etcd failure on one line that names the endpoints (fleet.EtcdError).
type fleetEtcdError struct {
	endpoints []string
	err       error
}

func (e *fleetEtcdError) Error() string {
	return (&fleet.EtcdError{Endpoints: e.endpoints, Err: e.err}).Error()
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

// fleetApplyResult is what `fleet apply` reports.
type fleetApplyResult = bootsrv.FleetApplyResult

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
	res, err := bootsrv.SummarizeFleetDoc(doc, enc)
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
	replaced, err := bootsrv.StoreFleetRevision(c.Context, cl, res, enc, key, trusted, c.Duration("wait"))
	if replaced != nil {
		fmt.Fprintf(e.stderr, "warning: %v; replacing it with %s\n", replaced, c.String("file"))
	}
	var etcdErr *fleet.EtcdError
	switch {
	case errors.Is(err, fleet.ErrConfigTooLarge):
		return badInput("%s: %w", c.String("file"), err)
	case errors.Is(err, fleet.ErrConflict):
		return fmt.Errorf("fleet %s: %w: run the command again", cl.Fleet(), err)
	case err != nil && !errors.As(err, &etcdErr):
		return &fleetEtcdError{eps, err}
	}
	return err
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

func fleetStatusAction(c *cli.Context, e *env) error {
	format, err := outputFormat(c, "table", "json", "yaml")
	if err != nil {
		return err
	}
	cl, _, err := openFleet(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	st, err := bootsrv.ReadFleetStatus(c.Context, cl)
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

// readFleetRevision reads the fleet's current revision and decodes its document and machine.
func readFleetRevision(ctx context.Context, cl *fleet.Client, _ []string) (*fleet.ConfigRevision, *bootconfig.FleetDoc, *bootconfig.FleetMachine, error) {
	return bootsrv.ReadFleetRevision(ctx, cl)
}

func writeFleetStatus(e *env, st *bootsrv.FleetStatus) error {
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

// fleetKeygen writes a new signing key pair. It never replaces a file: a lost private key would
// lock the operator out of every server that trusts it.
func fleetKeygen(c *cli.Context, e *env) error {
	format, err := outputFormat(c, "table", "json", "yaml")
	if err != nil {
		return err
	}
	res, err := fleet.WriteKeyFiles(c.String("out"))
	if errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrNotExist) {
		return badInput("--out: %w", err)
	}
	if err != nil {
		return err
	}
	if format != "table" {
		return writeData(e.stdout, format, res)
	}
	_, err = fmt.Fprintf(e.stdout, "key %s: private %s (keep it off the servers); to every server: %s (serve --config-key) and %s (serve --fleet-secret)\n",
		res.Key, res.Private, res.Public, res.Secret)
	return err
}
