package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/nodeset"
	"github.com/urfave/cli/v2"
)

// nodeCommand groups the node commands: the inventory's nodes (list, show, add, set, delete) and
// the operator's actions through a boot server's operator API (reboot).
func nodeCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "node",
		Usage: "list, show, add, set and delete the inventory's nodes; ask their server to reboot them",
		Subcommands: append(nodeInventoryCommands(e),
			&cli.Command{
				Name:      "reboot",
				Usage:     "let the nodes' next DHCP DISCOVER start a new boot, even if they are booted or healthy",
				ArgsUsage: "[NODES...]",
				Description: nodesHelp + "\n" +
					"A DISCOVER from a booted or healthy node is only recorded: anyone on the boot network\n" +
					"can send one with the node's MAC. This tells the boot server the reboot is wanted; power-cycle\n" +
					"the node yourself (IPMI, virsh, ...). The server accepts it from its own host only, unless\n" +
					"http.operator_remote is set, with the token of http.operator_token_file\n" +
					"(default STATE_DIR/operator.token).",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "server", Aliases: []string{"s"}, EnvVars: []string{"BOOTCTL_SERVER"}, Value: "http://127.0.0.1:80",
						Usage: "boot server HTTP URL"},
					&cli.StringFlag{Name: "token-file", EnvVars: []string{"BOOTCTL_TOKEN_FILE"}, Required: true,
						Usage: "file holding the operator token (the server's http.operator_token_file)"},
					&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "timeout of the request"},
					groupFlag(),
					outputFlag("table", "json"),
				},
				Action: func(c *cli.Context) error { return nodeReboot(e, c) },
			}),
	}
}

// checkServerURL refuses a --server value that is not an http:// or https:// URL with a host.
func checkServerURL(s string) error {
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return badInput("--server: %q is not an http:// URL", s)
	}
	return nil
}

// nodesHelp says what NODES may be, for every command that takes them.
const nodesHelp = "NODES: names with ranges (node[001-128], s0-b[0-3]-n[0-7]), comma-separated, @FILE (a file of\n" +
	"such lists), or all; several arguments add up. --group GROUP keeps the nodes of that group (the\n" +
	"inventory's groups column): a flag, not @GROUP, since @ already means a file."

// nodeInventoryCommands are the node commands that read or edit the inventory.
func nodeInventoryCommands(e *env) []*cli.Command {
	withOutput := func(flags ...cli.Flag) []cli.Flag {
		out := append(inventoryFlags(), nodeFleetFlags()...)
		return append(append(out, flags...), outputFlag("table", "json", "yaml"))
	}
	return []*cli.Command{
		{Name: "list", Usage: "list the inventory's nodes, with their owner server (with --config)", ArgsUsage: "[NODES...]",
			Description: nodesHelp, Flags: withOutput(groupFlag()),
			Action: func(c *cli.Context) error { return nodeList(e, c) }},
		{Name: "show", Usage: "everything about one node: inventory, owner, BMC (never its login) and, with --server or --etcd, its state, history and health",
			ArgsUsage: "NAME", Flags: withOutput(
				&cli.StringFlag{Name: "server", Aliases: []string{"s"}, EnvVars: []string{"BOOTCTL_SERVER"}, Usage: "boot server HTTP URL to read the node's state from"},
				&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "timeout of the request"}),
			Action: func(c *cli.Context) error { return nodeShow(e, c) }},
		{Name: "add", Usage: "add a node to the inventory file (checked as the server reads it; written by temp file and rename), or with --etcd to the fleet's as a new signed revision",
			ArgsUsage: "NAME", Flags: withOutput(append(nodeFieldCLIFlags(), signFlags()...)...),
			Action: func(c *cli.Context) error { return nodeAdd(e, c) }},
		{Name: "set", Usage: "change fields of nodes in the inventory file", ArgsUsage: "[NODES...]",
			Description: nodesHelp, Flags: withOutput(append(append(nodeFieldCLIFlags(), groupFlag()), signFlags()...)...),
			Action: func(c *cli.Context) error { return nodeSet(e, c) }},
		{Name: "delete", Usage: "delete nodes from the inventory file", ArgsUsage: "[NODES...]",
			Description: nodesHelp, Flags: withOutput(append([]cli.Flag{groupFlag()}, signFlags()...)...),
			Action: func(c *cli.Context) error { return nodeDelete(e, c) }},
	}
}

func nodeReboot(e *env, c *cli.Context) error {
	format := c.String("output")
	sel, err := parseSelection(c)
	if err != nil {
		return err
	}
	if sel.all() {
		return badInput("give the NODES (ranges, comma lists, @FILE, all) or --group")
	}
	if err := checkServerURL(c.String("server")); err != nil {
		return err
	}
	tok, err := bootsrv.ReadOperatorToken(c.String("token-file"))
	if err != nil {
		return badInput("--token-file: %v", err)
	}
	cl := &bootapi.Client{BaseURL: c.String("server"), HTTP: &http.Client{Timeout: c.Duration("timeout")}}
	names, err := rebootNames(c, cl, sel)
	if err != nil {
		return err
	}
	res, err := cl.RebootAll(c.Context, names, tok)
	if err != nil {
		return err
	}
	if err := writeResult(e.stdout, format, res, res.WriteText); err != nil {
		return err
	}
	if len(res.Failed) > 0 {
		return fmt.Errorf("%d of %d nodes not rebooted; %s: %s", len(res.Failed), len(names), res.Failed[0].Node, res.Failed[0].Error)
	}
	return nil
}

// rebootNames are the nodes NODES and --group name, checked against the server's inventory so
// that a typo is refused before any reboot is asked: in the order given, else the inventory's.
func rebootNames(c *cli.Context, cl *bootapi.Client, sel nodeSelection) ([]string, error) {
	nr, err := cl.NodesAndInventory(c.Context)
	if err != nil {
		return nil, err
	}
	inv := nr.Inventory
	if inv == nil {
		inv = bootapi.EntriesOf(nr.Nodes)
	}
	keep, err := sel.filter(inv)
	if err != nil {
		return nil, err
	}
	order := make([]string, len(inv))
	for i, n := range inv {
		order[i] = n.Name
	}
	if expr := strings.Join(sel.exprs, ","); expr != "" && expr != "all" {
		if order, err = nodeset.Expand(expr); err != nil {
			return nil, badInput("NODES: %w", err)
		}
	}
	var out []string
	for _, n := range order {
		if keep(n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, badInput("no node is both in NODES and in --group %s", strings.Join(sel.groups, ","))
	}
	return out, nil
}
