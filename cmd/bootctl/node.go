package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/urfave/cli/v2"
)

// nodeCommand groups the node commands: the inventory's nodes (list, show, add, set, delete) and
// the operator's actions through a boot server's operator API (reboot).
func nodeCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "node",
		Usage: "list, show, add, set and delete the inventory's nodes; ask a server to reboot one",
		Subcommands: append(nodeInventoryCommands(e),
			&cli.Command{
				Name:      "reboot",
				Usage:     "let the node's next DHCP DISCOVER start a new boot, even if it is booted or healthy",
				ArgsUsage: "NAME",
				Description: "A DISCOVER from a booted or healthy node is only recorded: anyone on the boot network\n" +
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
					outputFlag("table", "json"),
				},
				Action: func(c *cli.Context) error { return nodeReboot(e, c) },
			}),
	}
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
		{Name: "show", Usage: "everything about one node: inventory, owner, BMC (never its login) and, with --server, its state, history and health",
			ArgsUsage: "NAME", Flags: withOutput(
				&cli.StringFlag{Name: "server", Aliases: []string{"s"}, EnvVars: []string{"BOOTCTL_SERVER"}, Usage: "boot server HTTP URL to read the node's state from"},
				&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "timeout of the request"}),
			Action: func(c *cli.Context) error { return nodeShow(e, c) }},
		{Name: "add", Usage: "add a node to the inventory file (checked as the server reads it; written by temp file and rename), or with --etcd to the fleet's as a new signed revision",
			ArgsUsage: "NAME", Flags: withOutput(append(nodeFieldCLIFlags(), signKeyFlag())...),
			Action: func(c *cli.Context) error { return nodeAdd(e, c) }},
		{Name: "set", Usage: "change fields of nodes in the inventory file", ArgsUsage: "[NODES...]",
			Description: nodesHelp, Flags: withOutput(append(nodeFieldCLIFlags(), groupFlag(), signKeyFlag())...),
			Action: func(c *cli.Context) error { return nodeSet(e, c) }},
		{Name: "delete", Usage: "delete nodes from the inventory file", ArgsUsage: "[NODES...]",
			Description: nodesHelp, Flags: withOutput(groupFlag(), signKeyFlag()),
			Action: func(c *cli.Context) error { return nodeDelete(e, c) }},
	}
}

func nodeReboot(e *env, c *cli.Context) error {
	format, err := outputFormat(c, "table", "json")
	if err != nil {
		return err
	}
	if c.NArg() != 1 {
		return badInput("node reboot: give one node NAME (got %d arguments)", c.NArg())
	}
	name := c.Args().First()
	if name == "" || strings.ContainsAny(name, "/?#% ") {
		return badInput("node reboot: %q is not a node name", name)
	}
	u, err := url.Parse(c.String("server"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return badInput("--server: %q is not an http:// URL", c.String("server"))
	}
	tok, err := bootsrv.ReadOperatorToken(c.String("token-file"))
	if err != nil {
		return badInput("--token-file: %v", err)
	}
	cl := &bootsrv.Client{BaseURL: c.String("server"), HTTP: &http.Client{Timeout: c.Duration("timeout")}}
	res, err := cl.Reboot(c.Context, name, tok)
	if err != nil {
		return err
	}
	if format == "json" {
		return writeJSON(e.stdout, res)
	}
	_, err = fmt.Fprintf(e.stdout, "node %s (%s): reboot requested; its next DHCP DISCOVER starts a new boot\n", res.Node, res.State)
	return err
}
