package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/images"
	"github.com/urfave/cli/v2"
)

// nodeFieldFlags are the inventory columns node add and node set write, flag name -> column.
func nodeFieldFlags() [][2]string {
	return [][2]string{
		{"mac", "mac"}, {"ip", "ip"}, {"position", "node"}, {"profile", "profile"}, {"groups", "groups"},
		{"bmc", "bmc"}, {"bmc-driver", "bmc_driver"}, {"bmc-creds", "bmc_creds"},
	}
}

func nodeFieldCLIFlags() []cli.Flag {
	usage := map[string]string{
		"mac":        "MAC address of the NIC the node boots from",
		"ip":         "reserved IPv4 address (\"\" with node set: none)",
		"position":   "position in the topology, e.g. s0-b1-n2 (default: the name)",
		"profile":    "boot profile (\"\": the configuration's default)",
		"groups":     "groups, comma- or space-separated (replaces the node's groups)",
		"bmc":        "BMC address, host or host:port",
		"bmc-driver": "BMC driver: ipmi or exec",
		"bmc-creds":  "the BMC login's entry in the credentials file (never the login itself)",
	}
	var out []cli.Flag
	for _, f := range nodeFieldFlags() {
		out = append(out, &cli.StringFlag{Name: f[0], Usage: usage[f[0]]})
	}
	return out
}

// nodeEditResult is what node add, set and delete print as JSON.
type nodeEditResult struct {
	Inventory string   `json:"inventory"`
	Action    string   `json:"action"`
	Nodes     []string `json:"nodes"`
	Changed   bool     `json:"changed"`
	// Fleet, Number and Revision: with --etcd, the fleet and its new configuration (its number,
	// 1 for the first, and its etcd revision).
	Fleet    string `json:"fleet,omitempty"`
	Number   int64  `json:"configuration,omitempty"`
	Revision int64  `json:"etcd_revision,omitempty"`
	// Applied is what each live server made of the new revision, as it reported within --wait.
	Applied []bootsrv.ServerVerdict `json:"applied_by,omitempty"`
}

// editedFields returns the columns the flags set, by column name.
func editedFields(c *cli.Context) map[string]string {
	out := map[string]string{}
	for _, f := range nodeFieldFlags() {
		if c.IsSet(f[0]) {
			out[f[1]] = strings.TrimSpace(c.String(f[0]))
		}
	}
	return out
}

func nodeAdd(e *env, c *cli.Context) error {
	format := c.String("output")
	if c.NArg() != 1 {
		return badInput("give one node NAME (got %d arguments)", c.NArg())
	}
	name := c.Args().First()
	fields := editedFields(c)
	fields["name"] = name
	if fields["mac"] == "" {
		return badInput("%s: --mac: required: the MAC address the node boots from", name)
	}
	ni, ed, err := openInventoryEdit(c)
	if err != nil {
		return err
	}
	defer ni.close()
	if err := checkUnique(ni.inv, "", fields); err != nil {
		return err
	}
	if err := ed.Add(fields); err != nil {
		return asBadInput(err)
	}
	return saveEdit(e, c, format, ni, ed, nodeEditResult{Action: "added", Nodes: []string{name}, Changed: true})
}

// checkUnique refuses a name, MAC or IP another node of the inventory has (CheckUnique), naming
// the flag of a MAC or IP.
func checkUnique(inv *bootconfig.Inventory, self string, fields map[string]string) error {
	err := inv.CheckUnique(self, fields)
	var de *bootconfig.DuplicateError
	if errors.As(err, &de) && de.Field != "name" {
		return badInput("--%s: %w", de.Field, err)
	}
	return asBadInput(err)
}

func nodeSet(e *env, c *cli.Context) error {
	format := c.String("output")
	fields := editedFields(c)
	if len(fields) == 0 {
		return badInput("give a field to change: --%s", strings.Join(flagNames(), ", --"))
	}
	ni, ed, err := openInventoryEdit(c)
	if err != nil {
		return err
	}
	defer ni.close()
	nodes, err := pickForEdit(c, ni.inv, "set")
	if err != nil {
		return err
	}
	for _, k := range []string{"mac", "ip", "node"} {
		if _, ok := fields[k]; ok && len(nodes) > 1 && fields[k] != "" {
			return badInput("--%s: sets one node's value, and NODES names %d (%s)", flagOf(k), len(nodes), describeNodes(nodeNames(nodes)))
		}
	}
	if len(nodes) == 1 {
		if err := checkUnique(ni.inv, nodes[0].Name, fields); err != nil {
			return err
		}
	}
	for _, n := range nodes {
		if err := ed.Set(n.Name, fields); err != nil {
			return asBadInput(err)
		}
	}
	return saveEdit(e, c, format, ni, ed, nodeEditResult{Action: "set", Nodes: nodeNames(nodes)})
}

func nodeDelete(e *env, c *cli.Context) error {
	format := c.String("output")
	ni, ed, err := openInventoryEdit(c)
	if err != nil {
		return err
	}
	defer ni.close()
	nodes, err := pickForEdit(c, ni.inv, "delete")
	if err != nil {
		return err
	}
	if len(nodes) == len(ni.inv.Nodes) {
		return badInput("NODES names every node of %s, and an inventory needs one: edit the file by hand", ni.inv.File)
	}
	for _, n := range nodes {
		if err := ed.Delete(n.Name); err != nil {
			return asBadInput(err)
		}
	}
	return saveEdit(e, c, format, ni, ed, nodeEditResult{Action: "deleted", Nodes: nodeNames(nodes), Changed: true})
}

// pickForEdit returns the nodes node set or delete acts on: NODES or --group must be given, so
// that a missing argument never edits every node.
func pickForEdit(c *cli.Context, inv *bootconfig.Inventory, verb string) ([]*bootconfig.InventoryNode, error) {
	sel, err := parseSelection(c)
	if err != nil {
		return nil, err
	}
	if sel.all() {
		return nil, badInput("give the NODES to %s (ranges, comma lists, @FILE, all) or --group", verb)
	}
	nodes, err := sel.pick(inv)
	if err == nil && len(nodes) == 0 {
		err = badInput("no node is both in NODES and in --group %s", strings.Join(sel.groups, ","))
	}
	return nodes, err
}

// openInventoryEdit loads the inventory (checked as the server checks it) and opens it for
// editing: its file, or the text of the fleet's current revision. The caller closes ni.
func openInventoryEdit(c *cli.Context) (*nodeInventory, *bootconfig.InventoryEdit, error) {
	ni, err := loadNodeInventory(c)
	if err != nil {
		return nil, nil, err
	}
	var ed *bootconfig.InventoryEdit
	if ni.fleet != nil {
		if err = ni.fleet.checkBase(c); err == nil {
			ed, err = ni.fleet.editOf()
		}
	} else if ed, err = bootconfig.ReadInventoryEdit(ni.inv.File); err != nil {
		err = asBadInput(err)
	}
	if err != nil {
		ni.close()
		return nil, nil, err
	}
	return ni, ed, nil
}

// saveEdit checks the edited inventory as a server would read it, writes it (unless it is
// unchanged) and reports.
func saveEdit(e *env, c *cli.Context, format string, ni *nodeInventory, ed *bootconfig.InventoryEdit, res nodeEditResult) error {
	check := func() (*bootconfig.Inventory, error) { return ed.Check(ni.h) }
	if ni.flat {
		check = ed.CheckFlat
	}
	inv, err := check()
	if err != nil {
		return badInput("the inventory would be refused, nothing is written: %w", err)
	}
	if err := checkProfiles(ni.cfg, inv); err != nil {
		return err
	}
	data, err := ed.Bytes()
	if err != nil {
		return err
	}
	res.Inventory = ni.inv.File
	if !res.Changed {
		res.Changed = !ed.Unchanged(data)
	}
	if err := writeEdit(c, ni, ed, data, &res); err != nil {
		return err
	}
	if err := writeResult(e.stdout, format, res, res.writeText); err != nil {
		return err
	}
	return bootsrv.RefusedError(res.Fleet, res.Number, res.Revision, res.Applied)
}

// writeText says what the edit did and what happens next: a server restart, or what the fleet's
// servers made of the new revision.
func (res nodeEditResult) writeText(w io.Writer) error {
	what := fmt.Sprintf("%s: %s %s", res.Inventory, describeNodes(res.Nodes), res.Action)
	if !res.Changed {
		what = fmt.Sprintf("%s: %s unchanged (the values are already those)", res.Inventory, describeNodes(res.Nodes))
	}
	next := "A running boot server reads its inventory when it starts: restart it to serve the change."
	if res.Fleet != "" {
		next = "The fleet's servers apply it without a restart."
		if res.Changed {
			what += fmt.Sprintf("\nfleet %s: configuration %d applied (etcd revision %d)", res.Fleet, res.Number, res.Revision)
			next = bootsrv.DescribeVerdicts(res.Applied)
		}
	}
	_, err := fmt.Fprintf(w, "%s\n%s\n", what, next)
	return err
}

// checkProfiles refuses a profile that the configuration's image store lacks (with --config): the
// server would refuse to start on it. A fleet's revision is checked against its published
// profiles instead (bootconfig.FleetDoc.WithInventory).
func checkProfiles(cfg *bootconfig.Config, inv *bootconfig.Inventory) error {
	if cfg == nil {
		return nil
	}
	st, err := images.Open(cfg.Images)
	if err != nil {
		return badInput("%s: images: %w", cfg.File(), err)
	}
	if err := bootconfig.CheckNodeProfiles(inv, st, cfg.Images); err != nil {
		return badInput("the inventory would be refused, nothing is written: %w", err)
	}
	return nil
}

// writeEdit writes a changed inventory: over its file, or as the fleet's new revision.
func writeEdit(c *cli.Context, ni *nodeInventory, ed *bootconfig.InventoryEdit, data []byte, res *nodeEditResult) error {
	if ni.fleet != nil {
		res.Fleet = ni.fleet.cl.Fleet()
		if !res.Changed {
			return nil
		}
		return ni.fleet.apply(c, data, res)
	}
	if !res.Changed {
		return nil
	}
	return ed.Save()
}

func flagNames() []string {
	out := make([]string, len(nodeFieldFlags()))
	for i, f := range nodeFieldFlags() {
		out[i] = f[0]
	}
	return out
}

func flagOf(column string) string {
	for _, f := range nodeFieldFlags() {
		if f[1] == column {
			return f[0]
		}
	}
	return column
}
