package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"runtime/pprof"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/nodestate/boltstore"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/urfave/cli/v2"
)

// serveOverride is a serve flag that overrides a configuration file value (bootconfig's key);
// each also reads the environment variable BOOTCTL_<NAME>.
type serveOverride struct{ flag, env, key, usage string }

func serveOverrides() []serveOverride {
	return []serveOverride{
		{"http", "BOOTCTL_HTTP", "http.listen", "HTTP listen address (http.listen), e.g. :8080"},
		{"url", "BOOTCTL_URL", "http.url", "base URL nodes use to reach the HTTP endpoint (http.url)"},
		{"tftp", "BOOTCTL_TFTP", "tftp.listen", "TFTP listen address or off (tftp.listen)"},
		{"tftp-root", "BOOTCTL_TFTP_ROOT", "tftp.root", "directory served read-only over TFTP for names the profile store and ipxe_dir do not have (tftp.root)"},
		{"dhcp", "BOOTCTL_DHCP", "dhcp.mode", "DHCP mode: reservation, proxy or off (dhcp.mode)"},
		{"dhcp-listen", "BOOTCTL_DHCP_LISTEN", "dhcp.listen", "DHCP listen address (dhcp.listen)"},
		{"topology", "BOOTCTL_TOPOLOGY", "topology", "machine preset or description file (topology; none: the flat machine of the inventory)"},
		{"mapping", "BOOTCTL_MAPPING", "mapping", "block-cyclic mapping: scda, bcda, ncda, cyclic:LEVEL (mapping)"},
		{"inventory", "BOOTCTL_INVENTORY", "inventory", "inventory file, CSV or YAML (inventory)"},
		{"images", "BOOTCTL_IMAGES", "images", "image store directory (images)"},
		{"ipxe-dir", "BOOTCTL_IPXE_DIR", "ipxe_dir", "directory of the iPXE binaries (ipxe_dir)"},
		{"profile", "BOOTCTL_PROFILE", "profile", "default boot profile (profile)"},
		{"state-dir", "BOOTCTL_STATE_DIR", "state_dir", "directory of the boot states (state_dir)"},
		{"node-secret-file", "BOOTCTL_NODE_SECRET_FILE", "http.node_secret_file", "file of the secret node tokens derive from (http.node_secret_file)"},
		{"operator-token-file", "BOOTCTL_OPERATOR_TOKEN_FILE", "http.operator_token_file", "file of the operator API's bearer token (http.operator_token_file)"},
	}
}

// serveOverrideFlags are the flags of serveOverrides, --dhcp and --mapping with their choices.
func serveOverrideFlags() []cli.Flag {
	var modes []string
	for _, m := range dhcpd.Modes() {
		modes = append(modes, string(m))
	}
	choices := map[string][]string{"dhcp": modes, "mapping": {"scda", "bcda", "ncda"}}
	var flags []cli.Flag
	for _, o := range serveOverrides() {
		f := cli.StringFlag{Name: o.flag, EnvVars: []string{o.env}, Usage: o.usage}
		if c, ok := choices[o.flag]; ok {
			flags = append(flags, withChoices(f, c...))
			continue
		}
		flags = append(flags, &f)
	}
	return flags
}

func serveCommand(e *env) *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, EnvVars: []string{"BOOTCTL_CONFIG"},
			Usage: "boot server configuration file (YAML); required unless --etcd"},
		&cli.IntFlag{Name: "server-id", EnvVars: []string{"BOOTCTL_SERVER_ID"},
			Usage: "this server's index in the configuration's servers (server_id)"},
		&cli.StringSliceFlag{Name: "interface", EnvVars: []string{"BOOTCTL_INTERFACES"},
			Usage: "DHCP interface, repeatable or comma-separated (dhcp.interfaces)"},
		&cli.BoolFlag{Name: "check",
			Usage: "check the configuration and everything it names (topology, inventory, image store, profiles, iPXE binaries), print one line and exit: 0 when it would serve, 2 with the first problem"},
		&cli.BoolFlag{Name: "recover",
			Usage: "if the state file is damaged, keep it aside as nodes.db.damaged-TIME and start from the records that can be read"},
	}
	flags = append(flags, serveOverrideFlags()...)
	flags = append(flags, fleetServeFlags()...)
	flags = append(flags, &cli.StringFlag{Name: "cpu-profile", Usage: "write a Go CPU profile (pprof) of the whole run to `FILE` when the server stops"})
	return &cli.Command{
		Name:  "serve",
		Usage: "run a boot server: DHCP (PXE), TFTP and HTTP endpoints with per-node boot state",
		Description: "Runs until SIGINT or SIGTERM, then stops gracefully and saves the boot states.\n" +
			"Flags and BOOTCTL_* environment variables override the configuration file.\n" +
			"With --etcd and --name the server is a fleet member: its configuration comes from etcd\n" +
			"(bootctl fleet apply), and only local settings (listen addresses, directories) are flags.",
		Flags: flags,
		Action: func(c *cli.Context) error {
			if p := c.String("cpu-profile"); p != "" {
				stop, err := startCPUProfile(p)
				if err != nil {
					return err
				}
				defer stop()
			}
			if err := refuseOtherMode(c); err != nil {
				return err
			}
			if c.Bool("check") {
				return serveCheck(e, c)
			}
			if c.IsSet("etcd") {
				return serveFleet(e, c)
			}
			if !c.IsSet("config") {
				return badInput("--config (or $BOOTCTL_CONFIG) is required: the configuration of one server; a fleet member takes --etcd ENDPOINTS --name NAME instead")
			}
			cfg, err := serveConfig(c)
			if err != nil {
				return err
			}
			srv, err := bootsrv.New(cfg, bootsrv.Options{Logger: e.log, RecoverState: c.Bool("recover")})
			if err != nil {
				return configError(err)
			}
			return srv.Serve(c.Context)
		},
	}
}

// serveCheck is serve --check: the configuration with its flags, checked as the server would
// load it, and nothing started. Every failure here is in the admin's files, so it exits 2.
func serveCheck(e *env, c *cli.Context) error {
	if c.IsSet("etcd") {
		return badInput("--check: checks the configuration of --config; a fleet's configuration is checked by bootctl fleet apply before it is published")
	}
	if !c.IsSet("config") {
		return badInput("--check: give --config (or $BOOTCTL_CONFIG), the configuration to check")
	}
	cfg, err := serveConfig(c)
	if err != nil {
		return err
	}
	r, err := bootsrv.Check(cfg)
	if err != nil {
		return asBadInput(err)
	}
	fmt.Fprintln(e.stdout, r)
	return nil
}

// startCPUProfile profiles the process into path until the returned function is called: how
// bench/dhcp finds where bootctl serve spends its time under perfdhcp.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, badInput("--cpu-profile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// serveConfig loads the configuration file and applies the flags and environment variables.
func serveConfig(c *cli.Context) (*bootconfig.Config, error) {
	cfg, err := bootconfig.LoadConfig(c.String("config"))
	if err != nil {
		return nil, asBadInput(err)
	}
	if c.IsSet("server-id") {
		cfg.ServerID = c.Int("server-id")
	}
	if c.IsSet("interface") {
		cfg.DHCP.Interfaces = c.StringSlice("interface")
	}
	for _, o := range serveOverrides() {
		if c.IsSet(o.flag) {
			if err := checkListenFlag(o.flag, c.String(o.flag)); err != nil {
				return nil, err
			}
			if err := cfg.Override(o.key, c.String(o.flag)); err != nil {
				return nil, err
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, asBadInput(err)
	}
	return cfg, nil
}

// configError marks errors in the user's files (configuration, inventory, topology) as bad input.
func configError(err error) error {
	var be *bootconfig.Error
	var te *topology.Error
	var de *boltstore.DamagedError
	if errors.As(err, &be) || errors.As(err, &te) || errors.As(err, &de) || errors.Is(err, fs.ErrNotExist) {
		return asBadInput(err)
	}
	return err
}

// checkListenFlag refuses a listen-address flag that is not HOST:PORT, naming the flag: checked
// after it replaced the file's value, the error would blame the configuration's line.
func checkListenFlag(flag, v string) error {
	switch flag {
	case "http", "tftp", "dhcp-listen":
	default:
		return nil
	}
	if flag == "tftp" && v == "off" {
		return nil
	}
	if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
		return badInput("--%s: %q is not HOST:PORT (for example :8080 or 10.0.0.1:8080)", flag, v)
	}
	return nil
}
