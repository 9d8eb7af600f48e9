package main

import (
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/urfave/cli/v2"
)

// fleetAuthCommand is `bootctl fleet auth`: the fleet's etcd users and least-privilege roles.
func fleetAuthCommand(e *env) *cli.Command {
	return &cli.Command{
		Name: "auth",
		Usage: "make the fleet's etcd users and roles: each server may write only its own member key and the shared " +
			"records, addresses and events, the operator the whole fleet; run as etcd's root (a certificate with common name root, " +
			"or --etcd-user root), then once more with --enable to turn etcd's authentication on",
		Description: "Users authenticate by their client certificate's common name (etcd --client-cert-auth): a server's\n" +
			"certificate is issued for its name (bs1), the operator's for --operator. Running it again changes\n" +
			"nothing; with more --servers it adds them. The user given by --etcd-user, when created here, gets the\n" +
			"password of --etcd-password-file (so root may be created with a password before --enable).",
		Flags: append([]cli.Flag{
			fleetEtcdFlag(), fleetNameFlag(),
			&cli.StringSliceFlag{Name: "servers", Usage: "the fleet's servers, comma-separated: one etcd user each, named as in the fleet file"},
			&cli.StringFlag{Name: "operator", Usage: "the operator's etcd user: it applies configurations and reads the status"},
			&cli.BoolFlag{Name: "enable", Usage: "then turn etcd's authentication on (for every fleet of this etcd): from then on every request needs a user"},
			outputFlag("table", "json", "yaml"),
		}, etcdSecurityFlags()...),
		Action: func(c *cli.Context) error { return fleetAuth(c, e) },
	}
}

// authRoles checks the flags of fleet auth and returns the roles it makes, or a bad-input error
// naming the flag.
func authRoles(name string, servers []string, operator string) ([]fleet.AuthRole, error) {
	if err := fleet.ValidFleetName(name); err != nil {
		return nil, badInput("--fleet: %w", err)
	}
	if len(servers) == 0 && operator == "" {
		return nil, badInput("fleet auth: give --servers, --operator or both: the etcd users to set up")
	}
	if len(servers) > 0 {
		if _, err := fleet.AuthRoles(name, servers, ""); err != nil {
			return nil, badInput("--servers: %w", err)
		}
	}
	roles, err := fleet.AuthRoles(name, servers, operator)
	if err != nil {
		return nil, badInput("--operator: %w", err)
	}
	return roles, nil
}

func fleetAuth(c *cli.Context, e *env) error {
	format := c.String("output")
	name, servers, operator := c.String("fleet"), []string(nil), c.String("operator")
	for _, s := range c.StringSlice("servers") {
		servers = append(servers, splitList(s)...)
	}
	roles, err := authRoles(name, servers, operator)
	if err != nil {
		return err
	}
	cl, eps, err := openFleet(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	var passwords []fleet.UserPassword
	if sec, err := etcdSecurity(c); err == nil && sec.Username != "" {
		passwords = append(passwords, fleet.UserPassword{User: sec.Username, Password: sec.Password})
	}
	if err := cl.SetupAuth(c.Context, servers, operator, passwords...); err != nil {
		return &fleet.EtcdError{Endpoints: eps, Err: err}
	}
	res := fleet.AuthResult{Fleet: name, Roles: roles}
	if c.Bool("enable") {
		if err := cl.EnableAuth(c.Context); err != nil {
			return &fleet.EtcdError{Endpoints: eps, Err: err}
		}
		res.Enabled = true
	}
	return writeResult(e.stdout, format, res, res.WriteTable)
}
