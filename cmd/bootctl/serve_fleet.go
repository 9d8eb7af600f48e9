package main

import (
	"crypto/ed25519"
	"errors"
	"path/filepath"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"
)

// fleetServeFlags are serve's flags for a fleet member: everything else comes from etcd.
func fleetServeFlags() []cli.Flag {
	return append([]cli.Flag{
		fleetEtcdFlag(),
		&cli.StringFlag{Name: "name", EnvVars: []string{"BOOTCTL_NAME"}, Usage: "with --etcd: this server's name in the fleet's servers"},
		&cli.StringFlag{Name: "fleet", Value: "default", EnvVars: []string{"BOOTCTL_FLEET"}, Usage: "with --etcd: the fleet's name"},
		&cli.DurationFlag{Name: "lease-ttl", Value: fleet.DefaultTTL, EnvVars: []string{"BOOTCTL_LEASE_TTL"},
			Usage: "with --etcd: membership lease; a dead server's nodes move after about this long"},
		&cli.StringSliceFlag{Name: "config-key", EnvVars: []string{"BOOTCTL_CONFIG_KEY"},
			Usage: "with --etcd: the public keys (PEM, the .pub of bootctl fleet keygen) whose signatures make a configuration revision trusted; others are refused. " +
				"Repeat it (or list several keys in one file) while a key is replaced: every key given is trusted"},
		&cli.StringFlag{Name: "fleet-secret", EnvVars: []string{"BOOTCTL_FLEET_SECRET"},
			Usage: "with --etcd: the secret every server of the fleet shares (the .secret of bootctl fleet keygen, mode 600): it derives the node tokens, " +
				"and a server cut off from etcd believes only peers that prove themselves with it"},
	}, etcdSecurityFlags()...)
}

// fleetDefaults are a fleet member's local settings when no flag gives them.
func fleetDefaults() bootconfig.LocalSettings {
	return bootconfig.LocalSettings{StateDir: "/var/lib/bootfabric/state", Images: "/var/lib/bootfabric/images"}
}

// serveFleet runs this process as fleet member --name: it reads the fleet's configuration from
// etcd, fills the local image store from peers, joins, and serves; a new configuration revision
// restarts the boot server inside the process (the membership stays), and a revision that does
// not work here is logged and the running one kept.
func serveFleet(e *env, c *cli.Context) error {
	ctx := c.Context
	endpoints := etcdEndpoints(c)
	name := c.String("name")
	if name == "" {
		return badInput("--name: a fleet member needs its server name (one of the fleet's servers)")
	}
	if c.IsSet("config") {
		return badInput("--config: a fleet member takes its configuration from etcd (bootctl fleet apply); give --etcd or --config, not both")
	}
	if c.IsSet("server-id") {
		return badInput("--server-id: a fleet member is named by --name")
	}
	if err := fleet.ValidFleetName(c.String("fleet")); err != nil {
		return badInput("--fleet: %v", err)
	}
	trusted, secret, err := fleetKeys(c)
	if err != nil {
		return err
	}
	local, err := fleetLocal(c)
	if err != nil {
		return err
	}
	clientReg := prometheus.NewRegistry()
	fc, err := openFleetSecure(ctx, c, fleet.Options{Endpoints: endpoints, Fleet: c.String("fleet"), Log: e.log.Named("etcd"), Registerer: clientReg})
	if err != nil {
		return err
	}
	defer fc.Close()
	trust, err := fleet.OpenTrust(trusted, filepath.Join(local.StateDir, "fleet-applied.json"))
	if err != nil {
		return err
	}
	err = bootsrv.RunMember(ctx, bootsrv.MemberOptions{Client: fc, Name: name, Local: local, TTL: c.Duration("lease-ttl"),
		Trust: trust, FleetSecret: secret, Gatherer: clientReg, Logger: e.log})
	var se *bootsrv.SettingsError
	if errors.As(err, &se) {
		return asBadInput(err)
	}
	return configError(err)
}

// fleetLocal is a fleet member's local settings: fleetDefaults with serve's flags applied. A
// fleet-wide setting given as a flag is refused: it belongs in fleet.yaml.
func fleetLocal(c *cli.Context) (bootconfig.LocalSettings, error) {
	local := fleetDefaults()
	for flag, set := range map[string]func(string){
		"http": func(v string) { local.HTTPListen = v }, "url": func(v string) { local.URL = v },
		"tftp": func(v string) { local.TFTPListen = v }, "dhcp-listen": func(v string) { local.DHCPListen = v },
		"images": func(v string) { local.Images = v }, "ipxe-dir": func(v string) { local.IPXEDir = v },
		"state-dir": func(v string) { local.StateDir = v }, "tftp-root": func(v string) { local.TFTPRoot = v },
	} {
		if c.IsSet(flag) {
			set(c.String(flag))
		}
	}
	for _, f := range []string{"dhcp", "topology", "mapping", "inventory", "profile"} {
		if c.IsSet(f) {
			return local, badInput("--%s: a fleet-wide setting; change it in fleet.yaml and run bootctl fleet apply", f)
		}
	}
	if c.IsSet("interface") {
		local.Interfaces = c.StringSlice("interface")
	}
	if c.IsSet("operator-token-file") {
		var err error
		if local.OperatorTokenFile, err = filepath.Abs(c.String("operator-token-file")); err != nil {
			return local, badInput("--operator-token-file: %v", err)
		}
	}
	return local, nil
}

// refuseOtherMode refuses, naming it, a serve flag that the mode chosen (a fleet member with
// --etcd, or one server with --config) would otherwise ignore without a word.
func refuseOtherMode(c *cli.Context) error {
	if c.IsSet("etcd") {
		if c.IsSet("node-secret-file") {
			return badInput("--node-secret-file: a fleet member derives node tokens from --fleet-secret, which every server of the fleet shares")
		}
		if c.IsSet("recover") {
			return badInput("--recover: a fleet member keeps node states in etcd, not in a local state file; there is nothing local to recover")
		}
		return nil
	}
	return refuseWithoutEtcd(c, "name", "lease-ttl", "config-key", "fleet-secret")
}

// fleetKeys reads --config-key and --fleet-secret, which every fleet member needs.
func fleetKeys(c *cli.Context) ([]ed25519.PublicKey, []byte, error) {
	trusted, err := trustedKeys(c)
	if err != nil {
		return nil, nil, err
	}
	if len(trusted) == 0 {
		return nil, nil, badInput("--config-key: a fleet member needs the operator's public key: it applies only configuration revisions signed by it (bootctl fleet keygen)")
	}
	if c.String("fleet-secret") == "" {
		return nil, nil, badInput("--fleet-secret: a fleet member needs the secret the fleet's servers share (bootctl fleet keygen writes it beside the signing key)")
	}
	secret, err := fleet.LoadFleetSecret(c.String("fleet-secret"))
	if err != nil {
		return nil, nil, badInput("--fleet-secret: %w", err)
	}
	return trusted, secret, nil
}
