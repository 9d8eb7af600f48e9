package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/power"
	"github.com/urfave/cli/v2"
)

// powerCommand is `bootctl power on|off|cycle|status|pxe NODES`: out-of-band power through the
// nodes' BMCs, as the inventory names them.
func powerCommand(e *env) *cli.Command {
	var subs []*cli.Command
	for _, s := range []struct {
		op    power.Op
		usage string
	}{
		{power.OpOn, "power the nodes on"},
		{power.OpOff, "power the nodes off at once (as the power button held down)"},
		{power.OpCycle, "power the nodes off and on again (a node that is off is powered on)"},
		{power.OpStatus, "show the nodes' power state"},
		{power.OpPXE, "make the nodes' next boot, and only the next, a network boot (--mode legacy|uefi|uefi-http)"},
	} {
		desc := nodesHelp + "\n" +
			"Each node's BMC comes from the inventory's bmc, bmc_driver and bmc_creds columns; its login from\n" +
			"--credentials. Every node and BMC is checked before any is asked: a bad one powers nothing."
		flags := powerFlags()
		switch s.op {
		case power.OpOff:
			desc += "\nWith --server (and --token-file) the boot servers are told of every node powered off: it\n" +
				"is pending there, no longer healthy, so that bootctl boot boots it again."
			flags = append(flags, tellServerFlags()...)
		case power.OpOn, power.OpCycle:
			desc += "\nWith --server (and --token-file) each node's reboot is armed on the boot servers first, so\n" +
				"that its next DHCP request starts a new boot attempt even if they show it booted or healthy."
			flags = append(flags, tellServerFlags()...)
		}
		subs = append(subs, &cli.Command{
			Name: string(s.op), Usage: s.usage, ArgsUsage: "[NODES...]",
			Description: desc,
			Flags:       flags,
			Action:      func(c *cli.Context) error { return powerAction(e, c, s.op) },
		})
	}
	subs = append(subs, identifyCommand(e))
	return &cli.Command{Name: "power", Usage: "power nodes on, off or cycle them through their BMCs (IPMI, Redfish, or a command per action)", Subcommands: subs}
}

func powerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, EnvVars: []string{"BOOTCTL_CONFIG"},
			Usage: "boot server configuration whose topology and inventory list the nodes (or --inventory with --topology)"},
		&cli.StringFlag{Name: "inventory", Usage: "inventory file (CSV or YAML) with the bmc columns"},
		&cli.StringFlag{Name: "topology", Usage: "the inventory's machine: a preset name or a machine file (none: the flat machine of the inventory's names)"},
		&cli.StringFlag{Name: "credentials", EnvVars: []string{"BOOTCTL_BMC_CREDENTIALS"},
			Usage: "BMC logins (YAML: NAME: {user: U, password: P}; mode 600), by the inventory's bmc_creds (default: default)"},
		&cli.StringFlag{Name: "exec-templates", Usage: "command templates of the exec driver (YAML: on, off, cycle, status, pxe)"},
		&cli.StringFlag{Name: "redfish-ca", EnvVars: []string{"BOOTCTL_REDFISH_CA"},
			Usage: "PEM file of the CA certificates that sign the Redfish BMCs' (default: the system's)"},
		&cli.BoolFlag{Name: "redfish-insecure-skip-verify",
			Usage: "accept any certificate a Redfish BMC presents (anyone on the management network could take its place and learn its password)"},
		&cli.StringFlag{Name: "http-boot-uri", Usage: "pxe --mode uefi-http: the URI the firmware boots, where the BMC takes one (else DHCP says)"},
		&cli.IntFlag{Name: "fan-out", Value: 50, Usage: "BMCs asked at once"},
		&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "least time between two actions on one BMC"},
		&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "time one node's action may take"},
		withChoices(cli.StringFlag{Name: "mode", Value: string(power.Legacy), Usage: "pxe: the firmware, legacy, uefi or uefi-http (Redfish)"},
			string(power.Legacy), string(power.UEFI), string(power.UEFIHTTP)),
		groupFlag(),
		outputFlag("table", "json", "yaml"),
	}
}

// powerResult is what a power command reports.
type powerResult struct {
	power.Report
	// Servers says which boot servers were told of the nodes powered off (power off --server).
	Servers *bootapi.Told `json:"servers,omitempty"`
}

func tellServerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "server", Aliases: []string{"s"}, EnvVars: []string{"BOOTCTL_SERVER"},
			Usage: "boot server HTTP URL to tell of the nodes powered (repeat for a fleet)"},
		&cli.StringSliceFlag{Name: "token-file", EnvVars: []string{"BOOTCTL_TOKEN_FILE"},
			Usage: "operator token file (a server's http.operator_token_file): one for all servers, or one per --server in order"},
	}
}

// newServerTeller reads --server and --token-file; nil when no server is given. A server without
// a token is bad input, found before any BMC is asked.
func newServerTeller(c *cli.Context) (*bootapi.Teller, error) {
	if len(c.StringSlice("server")) == 0 {
		return nil, nil
	}
	urls := c.StringSlice("server")
	if len(c.StringSlice("token-file")) == 0 {
		return nil, badInput("--token-file: required with --server: the servers' operator token (http.operator_token_file), with which they are told of the nodes powered off")
	}
	tokens, err := bootTokens(c.StringSlice("token-file"), urls)
	if err != nil {
		return nil, err
	}
	return &bootapi.Teller{URLs: urls, Tokens: tokens, HTTP: &http.Client{Timeout: 10 * time.Second}}, nil
}

func powerAction(e *env, c *cli.Context, op power.Op) error {
	format := c.String("output")
	opts, err := powerRunOptions(c)
	if err != nil {
		return err
	}
	sel, err := parseSelection(c)
	if err != nil {
		return err
	}
	targets, err := powerTargets(c, sel)
	if err != nil {
		return err
	}
	var teller *bootapi.Teller
	if op == power.OpOff || op == power.OpOn || op == power.OpCycle {
		if teller, err = newServerTeller(c); err != nil {
			return err
		}
	}
	return runPower(c.Context, e, op, targets, opts, format, teller)
}

// runPower runs op on the targets and reports it; teller, when not nil, is told of the nodes
// powered off.
func runPower(ctx context.Context, e *env, op power.Op, targets []power.Target, opts power.RunOptions, format string, teller *bootapi.Teller) error {
	var armed *bootapi.Told
	if teller != nil && op != power.OpOff {
		armed = teller.ArmReboots(ctx, power.TargetNodes(targets))
	}
	bar := e.progressBar("power "+string(op), len(targets), "nodes")
	opts.Progress = bar.Func()
	res := powerResult{Report: power.NewReport(op, power.Run(ctx, targets, op, opts)), Servers: armed}
	bar.Done()
	if teller != nil && op == power.OpOff {
		res.Servers = teller.PoweredOff(ctx, res.Done())
	}
	err := writeResult(e.stdout, format, res, func(io.Writer) error { return writePowerTable(e, res) })
	if err == nil && res.Failed > 0 {
		err = fmt.Errorf("power %s: %d of %d nodes failed", op, res.Failed, res.Nodes)
	}
	if err == nil && res.Servers != nil && len(res.Servers.Errors) > 0 {
		err = fmt.Errorf("power %s: the boot servers were not told of %d nodes (they still show them as before): %s",
			op, len(res.Servers.Errors), res.Servers.Errors[0])
	}
	return err
}

func powerRunOptions(c *cli.Context) (power.RunOptions, error) {
	o := power.RunOptions{FanOut: c.Int("fan-out"), MinInterval: c.Duration("interval"), Timeout: c.Duration("timeout"), Mode: power.BootMode(c.String("mode"))}
	switch {
	case o.FanOut < 1 || o.FanOut > 10000:
		return o, badInput("--fan-out: %d: want 1 to 10000", o.FanOut)
	case o.MinInterval < 0:
		return o, badInput("--interval: %v is negative", o.MinInterval)
	case o.Timeout <= 0:
		return o, badInput("--timeout: %v: want a positive duration", o.Timeout)
	case o.Mode != power.Legacy && o.Mode != power.UEFI && o.Mode != power.UEFIHTTP:
		return o, badInput("--mode: %q: want legacy, uefi or uefi-http", c.String("mode"))
	}
	if o.MinInterval == 0 {
		o.MinInterval = power.NoInterval // the flag's 0 is none, not power's default
	}
	return o, nil
}

// powerTargets resolves the selected nodes to their controllers, checking everything before any
// BMC is asked.
func powerTargets(c *cli.Context, sel nodeSelection) ([]power.Target, error) {
	if sel.all() {
		return nil, badInput("give the NODES (ranges, comma lists, @FILE or all) or --group")
	}
	ni, err := loadNodeInventory(c)
	if err != nil {
		return nil, err
	}
	inv := ni.inv
	nodes, err := sel.pick(inv)
	if err != nil {
		return nil, err
	}
	return nodeTargets(c, inv, nodes)
}

// nodeTargets makes the controllers of nodes of inv, checking every node's BMC, login and
// driver before any is asked.
func nodeTargets(c *cli.Context, inv *bootconfig.Inventory, nodes []*bootconfig.InventoryNode) ([]power.Target, error) {
	if c.String("credentials") == "" {
		return nil, badInput("--credentials: required: the BMC logins file (YAML, mode 600)")
	}
	creds, err := power.LoadCredentials(c.String("credentials"))
	if err != nil {
		return nil, badInput("--credentials: %w", err)
	}
	opts := power.ControllerOptions{Timeout: c.Duration("timeout")}
	rf := false
	targets := make([]power.Target, 0, len(nodes))
	for _, n := range nodes {
		if n.BMC == nil {
			return nil, badInput("%s:%d: node %s has no bmc: give its BMC's address in the inventory's bmc column", inv.File, n.Line, n.Name)
		}
		login, err := creds.Get(cmp.Or(n.BMC.Creds, "default"))
		if err != nil {
			return nil, badInput("%s:%d: node %s: %w", inv.File, n.Line, n.Name, err)
		}
		if n.BMC.Driver == "exec" && opts.Exec == nil {
			if opts.Exec, err = loadExecTemplates(c.String("exec-templates")); err != nil {
				return nil, err
			}
		}
		if n.BMC.Driver == "redfish" && !rf {
			if err = loadRedfishTrust(c, &opts); err != nil {
				return nil, err
			}
			rf = true
		}
		ctl, err := power.NewController(power.BMC{Node: n.Name, Driver: n.BMC.Driver, Address: n.BMC.Address}, login, opts)
		if err != nil {
			return nil, badInput("%s:%d: node %s: %w", inv.File, n.Line, n.Name, err)
		}
		targets = append(targets, power.Target{Node: n.Name, BMC: n.BMC.Address, Controller: ctl})
	}
	return targets, nil
}

// loadExecTemplates reads --exec-templates.
func loadExecTemplates(path string) (*power.ExecTemplates, error) {
	if path == "" {
		return nil, badInput("--exec-templates: required: a node's bmc_driver is exec")
	}
	t, err := power.LoadExecTemplates(path)
	if err != nil {
		return nil, badInput("--exec-templates: %w", err)
	}
	return t, nil
}

func writePowerTable(e *env, r powerResult) error {
	err := r.WriteTable(e.stdout)
	if err == nil && r.Servers != nil {
		what := "reboots armed"
		if r.Op == power.OpOff {
			what = "nodes powered off"
		}
		_, err = fmt.Fprintf(e.stdout, "boot servers told: %d %s\n", r.Servers.Told, what)
	}
	return err
}
