package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

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
		return nil, nil, &fleet.EtcdError{Endpoints: eps, Err: err}
	}
	return cl, eps, nil
}

func fleetApply(c *cli.Context, e *env) error {
	format := c.String("output")
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
	if err := writeResult(e.stdout, format, res, res.WriteTable); err != nil {
		return err
	}
	return bootsrv.RefusedError(res.Fleet, res.Number, res.Revision, res.Applied)
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
func storeRevision(c *cli.Context, e *env, res *bootsrv.FleetApplyResult, enc []byte, key ed25519.PrivateKey) error {
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
		return &fleet.EtcdError{Endpoints: eps, Err: err}
	}
	return err
}

func fleetStatusAction(c *cli.Context, e *env) error {
	format := c.String("output")
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
	err = writeResult(e.stdout, format, st, st.WriteTable)
	if err == nil && st.Live == 0 {
		// As a health check, a fleet with no live server is down: exit 1, the report printed.
		err = fmt.Errorf("fleet %s: none of its %d servers is live: no node is answered", st.Fleet, len(st.Servers))
	}
	return err
}

// fleetKeygen writes a new signing key pair. It never replaces a file: a lost private key would
// lock the operator out of every server that trusts it.
func fleetKeygen(c *cli.Context, e *env) error {
	format := c.String("output")
	res, err := fleet.WriteKeyFiles(c.String("out"))
	if errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrNotExist) {
		return badInput("--out: %w", err)
	}
	if err != nil {
		return err
	}
	return writeResult(e.stdout, format, res, res.WriteText)
}
