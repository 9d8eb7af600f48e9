package main

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/urfave/cli/v2"
)

// inventoryFlags name the inventory a node command reads: a server's configuration, or an
// inventory file with its machine.
func inventoryFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, EnvVars: []string{"BOOTCTL_CONFIG"},
			Usage: "boot server configuration whose topology, inventory and servers are used (or --inventory with --topology)"},
		&cli.StringFlag{Name: "inventory", Usage: "inventory file (CSV; YAML is read but not edited)"},
		&cli.StringFlag{Name: "topology", Usage: "the inventory's machine: a preset name or a machine file"},
	}
}

// nodeInventory is the inventory a node command acts on, with its machine and, from --config, the
// servers that own its nodes.
type nodeInventory struct {
	inv   *bootconfig.Inventory
	h     *topology.Hierarchy
	flat  bool               // the machine is the inventory's own (no topology): it grows with it
	cfg   *bootconfig.Config // nil without --config
	owner map[string]string  // with --etcd: each node's owner among the live servers
	fleet *fleetSource       // with --etcd: the fleet read; nil for a file
}

// close lets go of the fleet's etcd client, if any.
func (ni *nodeInventory) close() {
	if ni != nil && ni.fleet != nil {
		ni.fleet.cl.Close()
	}
}

// loadNodeInventory loads the inventory of --config, of --inventory with --topology, or of the
// fleet's current revision (--etcd).
func loadNodeInventory(c *cli.Context) (*nodeInventory, error) {
	if len(etcdEndpoints(c)) > 0 {
		return loadFleetNodeInventory(c)
	}
	if err := refuseWithoutEtcd(c, "sign-key"); err != nil {
		return nil, err
	}
	topo, invFile := c.String("topology"), c.String("inventory")
	var cfg *bootconfig.Config
	if cfgPath := c.String("config"); cfgPath != "" {
		if topo != "" || invFile != "" {
			return nil, badInput("--config: gives the topology and the inventory; drop --topology and --inventory")
		}
		var err error
		if cfg, err = bootconfig.LoadConfig(cfgPath); err != nil {
			return nil, configError(err)
		}
		// As every server reads it: the mapping's default applied, the servers checked.
		if err := cfg.ValidateOwnership(); err != nil {
			return nil, configError(err)
		}
		topo, invFile = cfg.Topology, cfg.Inventory
	}
	if invFile == "" {
		return nil, badInput("give --config, --inventory (with --topology unless the machine is flat), or a fleet's --etcd: the inventory to act on")
	}
	m, err := bootconfig.LoadMachine(topo, invFile, 1)
	if err != nil {
		return nil, asBadInput(err)
	}
	return &nodeInventory{inv: m.Inventory, h: m.Graph.Hierarchy(), cfg: cfg, flat: m.Flat}, nil
}

// owners returns the name of the server that owns each node by the configuration's mapping
// (failed_servers counted as absent), as every server computes it; nil without --config.
func (ni *nodeInventory) owners() (map[string]string, error) {
	if ni.owner != nil || ni.cfg == nil {
		return ni.owner, nil
	}
	owners, err := ni.cfg.NodeOwners(ni.inv, ni.h)
	return owners, asBadInput(err)
}

// nodeView is one node as node list and node show print it: the inventory's fields, its owner and,
// from a server, its boot state. The BMC's login is never shown: only the name of its entry in the
// credentials file.
type nodeView struct {
	Name     string              `json:"name"`
	MAC      string              `json:"mac"`
	IP       string              `json:"ip,omitempty"`
	Position string              `json:"position"`
	Profile  string              `json:"profile,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	BMC      *bootconfig.NodeBMC `json:"bmc,omitempty"`
	Owner    string              `json:"owner,omitempty"`
	Line     int                 `json:"line"`
	// Status is the node's state as its server reports it (node show --server).
	Status *nodestate.NodeStatus `json:"status,omitempty"`
	// StatusError says why the server gave no state.
	StatusError string `json:"status_error,omitempty"`
}

func viewOf(n *bootconfig.InventoryNode, owners map[string]string) nodeView {
	v := nodeView{Name: n.Name, MAC: n.MAC.String(), Position: n.Position, Profile: n.Profile, Groups: n.Groups,
		BMC: n.BMC, Owner: owners[n.Name], Line: n.Line}
	if n.IP.IsValid() {
		v.IP = n.IP.String()
	}
	return v
}

// nodeListResult is what node list prints as JSON.
type nodeListResult struct {
	Inventory string     `json:"inventory"`
	Nodes     []nodeView `json:"nodes"`
}

func nodeList(e *env, c *cli.Context) error {
	format := c.String("output")
	sel, err := parseSelection(c)
	if err != nil {
		return err
	}
	ni, err := loadNodeInventory(c)
	if err != nil {
		return err
	}
	defer ni.close()
	nodes, err := sel.pick(ni.inv)
	if err != nil {
		return err
	}
	owners, err := ni.owners()
	if err != nil {
		return err
	}
	res := nodeListResult{Inventory: ni.inv.File, Nodes: make([]nodeView, 0, len(nodes))}
	for _, n := range nodes {
		res.Nodes = append(res.Nodes, viewOf(n, owners))
	}
	return writeResult(e.stdout, format, res, func(w io.Writer) error { return writeNodeTable(w, res.Nodes) })
}

func writeNodeTable(w io.Writer, nodes []nodeView) error {
	t := texttable.New(w)
	t.Row("NAME", "MAC", "IP", "POSITION", "PROFILE", "GROUPS", "BMC", "OWNER")
	for _, v := range nodes {
		bmc := "-"
		if v.BMC != nil {
			bmc = v.BMC.Address + " (" + v.BMC.Driver + ")"
		}
		t.Row(v.Name, v.MAC, texttable.OrDash(v.IP), v.Position, texttable.OrDash(v.Profile), texttable.OrDash(strings.Join(v.Groups, ",")), bmc, texttable.OrDash(v.Owner))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, texttable.Plural(len(nodes), "node"))
	return err
}

func nodeShow(e *env, c *cli.Context) error {
	format := c.String("output")
	if c.NArg() != 1 {
		return badInput("give one node NAME (got %d arguments)", c.NArg())
	}
	ni, err := loadNodeInventory(c)
	if err != nil {
		return err
	}
	defer ni.close()
	n, ok := ni.inv.ByName(c.Args().First())
	if !ok {
		return badInput("%q is not in the inventory %s", c.Args().First(), ni.inv.File)
	}
	owners, err := ni.owners()
	if err != nil {
		return err
	}
	v := viewOf(n, owners)
	switch {
	case c.IsSet("server"):
		err = fillServerStatus(c, &v)
	case ni.fleet != nil:
		err = ni.fleet.fillStatus(c, &v)
	}
	if err != nil {
		return err
	}
	return writeResult(e.stdout, format, v, func(w io.Writer) error { return writeNodeShow(w, &v) })
}

// fillServerStatus asks --server for the node's state. A server that does not hold the node, or
// does not answer, leaves the inventory's view with the reason: what the inventory says is still
// worth showing.
func fillServerStatus(c *cli.Context, v *nodeView) error {
	if err := checkServerURL(c.String("server")); err != nil {
		return err
	}
	cl := &bootapi.Client{BaseURL: c.String("server"), HTTP: &http.Client{Timeout: c.Duration("timeout")}}
	st, err := cl.Node(c.Context, v.Name)
	if err != nil {
		if c.Context.Err() != nil {
			return c.Context.Err()
		}
		v.StatusError = err.Error()
		return nil
	}
	v.Status = st
	v.Owner = cmp.Or(st.Server, v.Owner)
	return nil
}

// writeNodeShow writes one node, a field a line.
func writeNodeShow(w io.Writer, v *nodeView) error {
	bmc := "-"
	if v.BMC != nil {
		bmc = fmt.Sprintf("%s, driver %s, login %q of the credentials file", v.BMC.Address, v.BMC.Driver, cmp.Or(v.BMC.Creds, "default"))
	}
	for _, kv := range [][2]string{
		{"name", v.Name}, {"mac", v.MAC}, {"ip", texttable.OrDash(v.IP)}, {"position", v.Position},
		{"profile", cmp.Or(v.Profile, "(the configuration's default)")}, {"groups", texttable.OrDash(strings.Join(v.Groups, ", "))},
		{"bmc", bmc}, {"owner", texttable.OrDash(v.Owner)},
	} {
		if _, err := fmt.Fprintf(w, "%-9s %s\n", kv[0]+":", kv[1]); err != nil {
			return err
		}
	}
	return writeNodeState(w, v)
}

// writeNodeState writes what the server said of the node: state, health and history.
func writeNodeState(w io.Writer, v *nodeView) error {
	if v.StatusError != "" {
		_, err := fmt.Fprintf(w, "\nstate: unknown (%s)\n", v.StatusError)
		return err
	}
	if v.Status == nil {
		return nil
	}
	return v.Status.WriteText(w)
}
