package main

import (
	"crypto/ed25519"
	"time"

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
