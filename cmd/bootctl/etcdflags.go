package main

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"

	"github.com/bootfabric/bootfabric/fleet"
	"github.com/urfave/cli/v2"
)

// etcdSecurityFlags are the flags of every command that talks to a fleet's etcd about TLS and the
// etcd user: a client certificate (whose common name is the etcd user once etcd's authentication
// is on), or a user and its password.
func etcdSecurityFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "etcd-ca", EnvVars: []string{"BOOTCTL_ETCD_CA"},
			Usage: "CA certificate (PEM) that signed etcd's certificates: talk TLS to etcd"},
		&cli.StringFlag{Name: "etcd-cert", EnvVars: []string{"BOOTCTL_ETCD_CERT"},
			Usage: "client certificate (PEM) for etcd's --client-cert-auth; its common name is the etcd user (with --etcd-key)"},
		&cli.StringFlag{Name: "etcd-key", EnvVars: []string{"BOOTCTL_ETCD_KEY"},
			Usage: "private key (PEM) of --etcd-cert; only its owner may read it (mode 600)"},
		&cli.StringFlag{Name: "etcd-user", EnvVars: []string{"BOOTCTL_ETCD_USER"},
			Usage: "etcd user to authenticate as by password (with --etcd-password-file), instead of the certificate's common name"},
		&cli.StringFlag{Name: "etcd-password-file", EnvVars: []string{"BOOTCTL_ETCD_PASSWORD_FILE"},
			Usage: "file holding --etcd-user's password (mode 600; one trailing newline is ignored)"},
	}
}

// etcdSecurity returns the fleet options that etcdSecurityFlags give (TLS, Username and
// Password; the others unset), or a bad-input error that names the flag at fault.
func etcdSecurity(c *cli.Context) (fleet.Options, error) {
	var opts fleet.Options
	tc, err := etcdTLS(c.String("etcd-ca"), c.String("etcd-cert"), c.String("etcd-key"))
	if err != nil {
		return opts, err
	}
	opts.TLS = tc
	user, pwFile := c.String("etcd-user"), c.String("etcd-password-file")
	switch {
	case user != "" && pwFile == "":
		return opts, badInput("--etcd-password-file: required with --etcd-user (the file holding its password)")
	case pwFile != "" && user == "":
		return opts, badInput("--etcd-user: required with --etcd-password-file (the user whose password it holds)")
	case user != "":
		pw, err := fleet.ReadSecretFile(pwFile)
		if err != nil {
			return opts, badInput("--etcd-password-file: %w", err)
		}
		opts.Username, opts.Password = user, pw
	}
	return opts, nil
}

// etcdTLS is the TLS configuration of --etcd-ca, --etcd-cert and --etcd-key (nil: plain), or a
// bad-input error naming the flag of the file that is wrong.
func etcdTLS(ca, cert, key string) (*tls.Config, error) {
	switch {
	case cert != "" && key == "":
		return nil, badInput("--etcd-key: required with --etcd-cert (the certificate's private key)")
	case key != "" && cert == "":
		return nil, badInput("--etcd-cert: required with --etcd-key (the key's certificate)")
	case ca == "" && cert == "":
		return nil, nil
	}
	cfg, err := fleet.LoadTLS(ca, cert, key)
	if err == nil {
		return cfg, nil
	}
	flag := "--etcd-ca, --etcd-cert, --etcd-key"
	var fe *fleet.FileError
	for _, f := range []struct{ name, path string }{{"--etcd-ca", ca}, {"--etcd-cert", cert}, {"--etcd-key", key}} {
		if errors.As(err, &fe) && fe.Path == f.path {
			flag = f.name
			break
		}
	}
	return nil, badInput("%s: %w", flag, err)
}

// openFleetSecure is fleet.Open with the TLS and user of etcdSecurityFlags added to opts. A flag
// that is wrong is a bad-input error naming it; etcd's own failures are Open's errors.
func openFleetSecure(ctx context.Context, c *cli.Context, opts fleet.Options) (*fleet.Client, error) {
	sec, err := etcdSecurity(c)
	if err != nil {
		return nil, err
	}
	opts.TLS, opts.Username, opts.Password = sec.TLS, sec.Username, sec.Password
	return fleet.Open(ctx, opts)
}

// fleetEtcdFlag is --etcd, the one flag of every command that reads or writes a fleet in etcd:
// every endpoint of the etcd cluster, so that the client fails over.
func fleetEtcdFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "etcd", EnvVars: []string{"BOOTCTL_ETCD"},
		Usage: "a fleet's etcd endpoints, comma-separated or repeated (host:port or http://host:port)"}
}

// etcdEndpoints is --etcd's endpoints, every one given, in order: the one parser of the flag.
func etcdEndpoints(c *cli.Context) []string {
	var eps []string
	for _, s := range c.StringSlice("etcd") {
		eps = append(eps, splitList(s)...)
	}
	return eps
}

// refuseWithoutEtcd refuses, naming it, a flag of a fleet's etcd (--fleet, the TLS and user
// flags, and more) given without --etcd: without it the command would ignore the flag silently.
func refuseWithoutEtcd(c *cli.Context, more ...string) error {
	if len(etcdEndpoints(c)) > 0 {
		return nil
	}
	names := []string{"fleet"}
	for _, f := range etcdSecurityFlags() {
		names = append(names, f.Names()[0])
	}
	for _, f := range append(names, more...) {
		if c.IsSet(f) {
			return badInput("--%s (or $BOOTCTL_%s): applies to a fleet (with --etcd); without --etcd it would be ignored", f, strings.ToUpper(strings.ReplaceAll(f, "-", "_")))
		}
	}
	return nil
}

// fleetEndpoints returns --etcd's endpoints, or a usage error when there are none.
func fleetEndpoints(c *cli.Context) ([]string, error) {
	eps := etcdEndpoints(c)
	if len(eps) == 0 {
		return nil, badInput("--etcd: required: the fleet's etcd endpoints, host:port,... (or BOOTCTL_ETCD)")
	}
	return eps, nil
}

// splitList splits a comma-separated flag value, dropping empty items and spaces.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
