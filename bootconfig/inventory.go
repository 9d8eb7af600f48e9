package bootconfig

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/internal/yamlerr"
	"github.com/bootfabric/bootfabric/topology"
	"gopkg.in/yaml.v3"
)

// Error is a problem in a configuration or inventory file, located by file, line and field where
// known: the same as a machine description's.
type Error = topology.Error

// InventoryNode is one machine of the inventory.
type InventoryNode struct {
	// Name is the host name handed out by DHCP and the name of the node in the API.
	Name string `json:"name"`
	// MAC is the address of the NIC the node boots from.
	MAC net.HardwareAddr `json:"-"`
	// IP is the node's reserved address; invalid (zero) when the inventory gives none.
	IP netip.Addr `json:"ip,omitzero"`
	// Position is the node's name in the topology (e.g. s0-b1-n2); Index is its index there.
	Position string `json:"position"`
	Index    int    `json:"index"`
	// Profile is the boot profile; empty means the configured default.
	Profile string `json:"profile,omitempty"`
	// BMC is the node's out-of-band controller, when the inventory gives one.
	BMC *NodeBMC `json:"bmc,omitempty"`
	// Groups are the names the node is selected by (bootctl --group), in the file's order.
	Groups []string `json:"groups,omitempty"`
	// Line is the node's line in the inventory file.
	Line int `json:"-"`
}

// NodeBMC is how a node is powered: its controller's address, the driver that speaks to it
// (package power) and the name of its login in the credentials file (never the login itself).
type NodeBMC struct {
	Address string `json:"address"`         // host or host:port
	Driver  string `json:"driver"`          // ipmi, redfish, exec
	Creds   string `json:"creds,omitempty"` // the credentials file's entry; "" is "default"
}

// BMCDrivers are the drivers an inventory may name (package power's).
var BMCDrivers = []string{"ipmi", "redfish", "exec"}

// Inventory is the list of machines a boot server may be asked about, indexed by MAC, name and IP.
type Inventory struct {
	File  string
	Nodes []InventoryNode

	byMAC  map[string]int
	byName map[string]int
	byIP   map[netip.Addr]int
}

// ByMAC returns the node with the given MAC address.
func (inv *Inventory) ByMAC(mac net.HardwareAddr) (*InventoryNode, bool) {
	i, ok := inv.byMAC[macKey(mac)]
	if !ok {
		return nil, false
	}
	return &inv.Nodes[i], true
}

// ByName returns the node with the given name.
func (inv *Inventory) ByName(name string) (*InventoryNode, bool) {
	i, ok := inv.byName[name]
	if !ok {
		return nil, false
	}
	return &inv.Nodes[i], true
}

// ByIP returns the node with the given reserved address.
func (inv *Inventory) ByIP(ip netip.Addr) (*InventoryNode, bool) {
	i, ok := inv.byIP[ip.Unmap()]
	if !ok {
		return nil, false
	}
	return &inv.Nodes[i], true
}

// FlatHierarchy returns the hierarchy of the flat machine (topology.Flat) an inventory parsed
// without a topology describes: node k is the inventory's k-th row, under its name. The number of
// servers does not change the hierarchy, only the graph, so one stands for any.
func FlatHierarchy(inv *Inventory) (*topology.Hierarchy, error) {
	g, err := FlatMachine(inv, 1).Build()
	if err != nil {
		return nil, fmt.Errorf("%s: flat machine: %w", inv.File, err)
	}
	return g.Hierarchy(), nil
}

// LoadFlatInventory reads an inventory served without a topology file and the flat machine's
// hierarchy it describes.
func LoadFlatInventory(path string) (*Inventory, *topology.Hierarchy, error) {
	m, err := LoadMachine("", path, 1)
	if err != nil {
		return nil, nil, err
	}
	return m.Inventory, m.Graph.Hierarchy(), nil
}

func macKey(mac net.HardwareAddr) string { return strings.ToLower(mac.String()) }

// LoadInventory reads an inventory file: CSV when its name ends in .csv, YAML otherwise. Node
// positions are checked against h; a nil h is the flat machine of a cluster without a topology
// file, where nodes have no positions and take their rows' order (see FlatHierarchy).
func LoadInventory(path string, h *topology.Hierarchy) (*Inventory, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		return ParseInventoryCSV(data, path, h)
	}
	return ParseInventoryYAML(data, path, h)
}

// inventory columns / keys.
var inventoryFields = []string{"name", "mac", "ip", "node", "profile", "bmc", "bmc_driver", "bmc_creds", "groups"}

// ParseInventoryCSV parses a CSV inventory. The first row names the columns: name, mac, ip, node
// (alias position), profile, bmc, bmc_driver, bmc_creds and groups (names separated by commas or
// spaces), in any order; name and mac are required. Lines starting with # are
// comments. A node without a node/position column is placed by its name. file names the source in
// errors.
func ParseInventoryCSV(data []byte, file string, h *topology.Hierarchy) (*Inventory, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.TrimLeadingSpace = true
	r.ReuseRecord = false
	header, err := r.Read()
	if err == io.EOF {
		return nil, &Error{File: file, Msg: "empty inventory: want a header row such as name,mac,ip,node"}
	}
	if err != nil {
		return nil, csvError(err, file)
	}
	hline, _ := r.FieldPos(0)
	col := map[string]int{}
	for i, c := range header {
		c = strings.ToLower(strings.TrimSpace(c))
		if c == "position" {
			c = "node"
		}
		if !slices.Contains(inventoryFields, c) {
			return nil, &Error{File: file, Line: hline, Field: "header", Msg: fmt.Sprintf("unknown column %q (columns: %s)", header[i], strings.Join(inventoryFields, ", "))}
		}
		if _, dup := col[c]; dup {
			return nil, &Error{File: file, Line: hline, Field: "header", Msg: fmt.Sprintf("column %q given twice", c)}
		}
		col[c] = i
	}
	for _, c := range []string{"name", "mac"} {
		if _, ok := col[c]; !ok {
			return nil, &Error{File: file, Line: hline, Field: "header", Msg: fmt.Sprintf("missing column %q", c)}
		}
	}
	b := newInventoryBuilder(file, h)
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(err, file)
		}
		line, _ := r.FieldPos(0)
		get := func(c string) string {
			if i, ok := col[c]; ok {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		f := invFields{name: get("name"), mac: get("mac"), ip: get("ip"), pos: get("node"), profile: get("profile"),
			bmc: get("bmc"), bmcDriver: get("bmc_driver"), bmcCreds: get("bmc_creds"), groups: get("groups")}
		if err := b.add(line, f); err != nil {
			return nil, err
		}
	}
	return b.done()
}

func csvError(err error, file string) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &Error{File: file, Line: pe.Line, Msg: pe.Err.Error()}
	}
	return &Error{File: file, Msg: err.Error()}
}

// inventoryEntry is one node of a YAML inventory as written. Decoding into it with the shared strict
// decoder (internal/yamlerr) is what makes a misspelt key or a list where a value belongs an error in
// the file's words ("nodes[3]: unknown field \"mca\" (did you mean mac?)"), like every other YAML
// file of the project.
type inventoryEntry struct {
	Name      string `yaml:"name"`
	MAC       string `yaml:"mac"`
	IP        string `yaml:"ip"`
	Node      string `yaml:"node"`
	Position  string `yaml:"position"` // alias of node
	Profile   string `yaml:"profile"`
	BMC       string `yaml:"bmc"`
	BMCDriver string `yaml:"bmc_driver"`
	BMCCreds  string `yaml:"bmc_creds"`
	Groups    string `yaml:"groups"` // as in the CSV: names separated by commas or spaces
}

// ParseInventoryYAML parses a YAML inventory: a list of nodes, or a mapping whose key "nodes" holds
// the list. Each node is a mapping with the keys name and mac (required), ip, node (alias
// position) and profile. file names the source in errors.
func ParseInventoryYAML(data []byte, file string, h *topology.Hierarchy) (*Inventory, error) {
	entries, list, err := decodeInventoryYAML(data, file)
	if err != nil {
		return nil, err
	}
	b := newInventoryBuilder(file, h)
	for i, e := range entries {
		item := list.Content[i]
		if e.Node != "" && e.Position != "" {
			return nil, &Error{File: file, Line: item.Line, Field: fmt.Sprintf("nodes[%d].position", i), Msg: "given with node, its alias: keep one"}
		}
		t := strings.TrimSpace
		f := invFields{name: t(e.Name), mac: t(e.MAC), ip: t(e.IP), pos: t(cmp.Or(e.Node, e.Position)), profile: t(e.Profile),
			bmc: t(e.BMC), bmcDriver: t(e.BMCDriver), bmcCreds: t(e.BMCCreds), groups: t(e.Groups)}
		if err := b.add(item.Line, f); err != nil {
			return nil, err
		}
	}
	return b.done()
}

// decodeInventoryYAML decodes a YAML inventory's entries, and returns with them the list's node,
// whose items give each entry's line.
func decodeInventoryYAML(data []byte, file string) ([]inventoryEntry, *yaml.Node, error) {
	// The node tree comes first: it says which of the two forms the file has (the strict decode
	// needs the matching type) and gives each node's line for the checks after decoding.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, yamlError(err, file)
	}
	if len(root.Content) == 0 {
		return nil, nil, &Error{File: file, Msg: "empty inventory: want a list of nodes"}
	}
	list := root.Content[0]
	var entries []inventoryEntry
	if list.Kind == yaml.MappingNode {
		var err error
		if entries, list, err = decodeNodesKey(data, file, list); err != nil {
			return nil, nil, err
		}
	}
	if list.Kind != yaml.SequenceNode {
		return nil, nil, &Error{File: file, Line: list.Line, Msg: "want a list of nodes"}
	}
	for i, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			return nil, nil, &Error{File: file, Line: item.Line, Field: fmt.Sprintf("nodes[%d]", i), Msg: "want a mapping with name, mac, ip, node"}
		}
	}
	if list == root.Content[0] {
		if _, err := yamlerr.Decode(data, &entries); err != nil {
			err = yamlError(err, file)
			// The list is the document: yamlerr names its items [i]; this file calls them nodes.
			if e, ok := errors.AsType[*Error](err); ok && strings.HasPrefix(e.Field, "[") {
				e.Field = "nodes" + e.Field
			}
			return nil, nil, err
		}
	}
	return entries, list, nil
}

// decodeNodesKey decodes the entries of an inventory that is a mapping (doc, the document's node)
// whose key "nodes" holds the list, and returns them with the list's node.
func decodeNodesKey(data []byte, file string, doc *yaml.Node) ([]inventoryEntry, *yaml.Node, error) {
	var v struct {
		Nodes []inventoryEntry `yaml:"nodes"`
	}
	if _, err := yamlerr.Decode(data, &v); err != nil {
		return nil, nil, yamlError(err, file)
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "nodes" {
			return v.Nodes, doc.Content[i+1], nil
		}
	}
	return nil, nil, &Error{File: file, Line: doc.Line, Field: "nodes", Msg: "missing list of nodes"}
}

type inventoryBuilder struct {
	file string
	h    *topology.Hierarchy
	inv  *Inventory
	pos  map[int]int // topology index -> node
}

func newInventoryBuilder(file string, h *topology.Hierarchy) *inventoryBuilder {
	return &inventoryBuilder{file: file, h: h, pos: map[int]int{}, inv: &Inventory{
		File: file, byMAC: map[string]int{}, byName: map[string]int{}, byIP: map[netip.Addr]int{},
	}}
}

// invFields are one node's fields as written in the inventory.
type invFields struct {
	name, mac, ip, pos, profile string
	bmc, bmcDriver, bmcCreds    string
	groups                      string
}

// add checks one node of the inventory, found on line, against the nodes before it and adds it.
func (b *inventoryBuilder) add(line int, f invFields) error {
	name, pos := f.name, f.pos
	n := InventoryNode{Name: name, Profile: f.profile, Line: line}
	if err := b.checkName(line, name); err != nil {
		return err
	}
	hw, err := b.parseMAC(line, f.mac)
	if err != nil {
		return err
	}
	n.MAC = hw
	if n.IP, err = b.parseIP(line, f.ip); err != nil {
		return err
	}
	if n.BMC, err = b.parseBMC(line, f); err != nil {
		return err
	}
	if n.Groups, err = b.parseGroups(line, f.groups); err != nil {
		return err
	}
	if n.Index, n.Position, err = b.place(line, name, pos); err != nil {
		return err
	}
	inv := b.inv
	k := len(inv.Nodes)
	inv.Nodes = append(inv.Nodes, n)
	inv.byName[name] = k
	inv.byMAC[macKey(hw)] = k
	if n.IP.IsValid() {
		inv.byIP[n.IP] = k
	}
	b.pos[n.Index] = k
	return nil
}

// parseBMC checks a node's controller: an address (host or host:port) with a known driver, or
// nothing at all. A driver or credentials without an address are an error, not a silent "no BMC".
func (b *inventoryBuilder) parseBMC(line int, f invFields) (*NodeBMC, error) {
	if f.bmc == "" {
		switch {
		case f.bmcDriver != "":
			return nil, b.errAt(line, "bmc", "missing: bmc_driver %q is given without the BMC's address", f.bmcDriver)
		case f.bmcCreds != "":
			return nil, b.errAt(line, "bmc", "missing: bmc_creds %q is given without the BMC's address", f.bmcCreds)
		}
		return nil, nil
	}
	host := f.bmc
	if h, port, err := net.SplitHostPort(f.bmc); err == nil {
		if p, perr := strconv.Atoi(port); perr != nil || p < 1 || p > 65535 {
			return nil, b.errAt(line, "bmc", "%q: port %q is not 1-65535", f.bmc, port)
		}
		host = h
	}
	if host == "" || strings.HasPrefix(host, "-") || strings.ContainsAny(host, " /@[]") {
		return nil, b.errAt(line, "bmc", "%q is not a host or host:port", f.bmc)
	}
	drv := cmp.Or(f.bmcDriver, "ipmi")
	if !slices.Contains(BMCDrivers, drv) {
		return nil, b.errAt(line, "bmc_driver", "%q is not a driver (drivers: %s)", f.bmcDriver, strings.Join(BMCDrivers, ", "))
	}
	return &NodeBMC{Address: f.bmc, Driver: drv, Creds: f.bmcCreds}, nil
}

// parseGroups splits a node's groups column: names separated by commas or spaces, each a name
// like a host name's, none twice.
func (b *inventoryBuilder) parseGroups(line int, s string) ([]string, error) {
	groups, err := SplitGroups(s)
	if err != nil {
		return nil, b.errAt(line, "groups", "%v", err)
	}
	return groups, nil
}

// SplitGroups splits a list of group names separated by commas or spaces ("" gives none). A name
// is letters, digits, '-', '_' and '.', as a node's; a name given twice is an error.
func SplitGroups(s string) ([]string, error) {
	var out []string
	for _, g := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if !validHostName(g) {
			return nil, fmt.Errorf("%q is not a group name (letters, digits, '-', '_', '.')", g)
		}
		if slices.Contains(out, g) {
			return nil, fmt.Errorf("group %q given twice", g)
		}
		out = append(out, g)
	}
	return out, nil
}

// InGroup reports whether the node is in group g.
func (n *InventoryNode) InGroup(g string) bool { return slices.Contains(n.Groups, g) }

// errAt is an error about field of the node on line.
func (b *inventoryBuilder) errAt(line int, field, format string, args ...any) error {
	return &Error{File: b.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// checkName checks that name is a host name no node before has.
func (b *inventoryBuilder) checkName(line int, name string) error {
	if name == "" {
		return b.errAt(line, "name", "missing node name")
	}
	if !validHostName(name) {
		return b.errAt(line, "name", "%q is not a host name (letters, digits, '-', '.', not starting with '-')", name)
	}
	if j, dup := b.inv.byName[name]; dup {
		return b.errAt(line, "name", "%q already on line %d", name, b.inv.Nodes[j].Line)
	}
	return nil
}

// parseMAC parses a node's Ethernet address, which no node before may have.
func (b *inventoryBuilder) parseMAC(line int, mac string) (net.HardwareAddr, error) {
	if mac == "" {
		return nil, b.errAt(line, "mac", "missing MAC address")
	}
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return nil, b.errAt(line, "mac", "%q is not a MAC address like 52:54:00:12:34:56", mac)
	}
	if j, dup := b.inv.byMAC[macKey(hw)]; dup {
		return nil, b.errAt(line, "mac", "%s already belongs to %s (line %d)", hw, b.inv.Nodes[j].Name, b.inv.Nodes[j].Line)
	}
	return hw, nil
}

// parseIP parses a node's reserved IPv4 address, which no node before may have; "" gives none
// (the zero Addr).
func (b *inventoryBuilder) parseIP(line int, ip string) (netip.Addr, error) {
	if ip == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return netip.Addr{}, b.errAt(line, "ip", "%q is not an IPv4 address", ip)
	}
	if j, dup := b.inv.byIP[a]; dup {
		return netip.Addr{}, b.errAt(line, "ip", "%s already belongs to %s (line %d)", a, b.inv.Nodes[j].Name, b.inv.Nodes[j].Line)
	}
	return a, nil
}

// place returns a node's topology index and position. Without a topology (the flat machine) the
// nodes take the positions in file order under their own names; with one, a node is placed by its
// position, or by its name when it gives none.
func (b *inventoryBuilder) place(line int, name, pos string) (int, string, error) {
	if b.h == nil {
		if pos != "" {
			return 0, "", b.errAt(line, "node", "position %q given, but the configuration names no topology (the machine is flat): drop the position or set topology", pos)
		}
		return len(b.inv.Nodes), name, nil
	}
	if pos != "" {
		idx, err := b.parsePosition(line, pos)
		return idx, pos, err
	}
	idx, err := b.parsePosition(line, name)
	if err != nil {
		// The admin gave a name, not a position: say both ways out, not only the position's form.
		return 0, "", fmt.Errorf("%w; give its position in a node column, or leave topology out of the configuration to serve a flat machine", err)
	}
	return idx, name, nil
}

// parsePosition returns the topology index of a node's position, which no node before may hold.
func (b *inventoryBuilder) parsePosition(line int, pos string) (int, error) {
	idx, err := b.h.ParseNode(pos)
	if err != nil {
		return 0, b.errAt(line, "node", "%v", err)
	}
	if j, dup := b.pos[idx]; dup {
		return 0, b.errAt(line, "node", "position %s already taken by %s (line %d)", pos, b.inv.Nodes[j].Name, b.inv.Nodes[j].Line)
	}
	return idx, nil
}

func (b *inventoryBuilder) done() (*Inventory, error) {
	if len(b.inv.Nodes) == 0 {
		return nil, &Error{File: b.file, Msg: "the inventory lists no nodes"}
	}
	return b.inv, nil
}

func validHostName(s string) bool {
	// A leading '-' is no host name's (RFC 1123), and a command that takes the name as a word
	// (an exec power template, ssh) would read it as an option.
	if len(s) > 253 || strings.HasPrefix(s, "-") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return false
		}
	}
	return true
}

// Machine is what a configuration describes: the machine's graph and the inventory placed on it.
type Machine struct {
	Graph     *topology.Graph
	Inventory *Inventory
	// Flat says the machine is the flat one of the inventory (no topology was given).
	Flat bool
}

// LoadMachine loads a topology (a preset or a file) and the inventory placed on it; an empty
// topology is the flat machine of the inventory's nodes, with servers boot servers (at least one).
// It is the one loader of "machine + inventory": the server, the node commands and bootctl boot
// use it, so each reads a configuration as the others do.
func LoadMachine(topo, invPath string, servers int) (*Machine, error) {
	if topo == "" {
		inv, err := LoadInventory(invPath, nil)
		if err != nil {
			return nil, err
		}
		g, err := FlatMachine(inv, servers).Build()
		if err != nil {
			return nil, fmt.Errorf("%s: flat machine: %w", inv.File, err)
		}
		return &Machine{Graph: g, Inventory: inv, Flat: true}, nil
	}
	m, err := topology.Load(topo)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	g, err := m.Build()
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w", topo, err)
	}
	inv, err := LoadInventory(invPath, g.Hierarchy())
	if err != nil {
		return nil, err
	}
	return &Machine{Graph: g, Inventory: inv}, nil
}

// LoadMachine is LoadMachine of the configuration's topology and inventory, with its servers.
func (c *Config) LoadMachine() (*Machine, error) {
	return LoadMachine(c.Topology, c.Inventory, len(c.Servers))
}

// FlatMachine is the flat machine (topology.Flat) of an inventory without a topology: node k is
// the inventory's k-th row, under its name, with servers boot servers (at least one).
func FlatMachine(inv *Inventory, servers int) *topology.Machine {
	names := make([]string, len(inv.Nodes))
	for i, n := range inv.Nodes {
		names[i] = n.Name
	}
	return topology.Flat(names, max(1, servers))
}

// Groups lists the groups of the inventory's nodes, sorted.
func (inv *Inventory) Groups() []string {
	var out []string
	for i := range inv.Nodes {
		for _, g := range inv.Nodes[i].Groups {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	slices.Sort(out)
	return out
}

// CheckGroups refuses a group no node is in, listing those that exist: a typo in a group must not
// select nothing quietly.
func (inv *Inventory) CheckGroups(groups []string) error {
	known := inv.Groups()
	for _, g := range groups {
		if !slices.Contains(known, g) {
			list := "none: the inventory has no groups column, or it is empty"
			if len(known) > 0 {
				list = strings.Join(known, ", ")
			}
			return fmt.Errorf("no node of %s is in group %q (groups: %s)", inv.File, g, list)
		}
	}
	return nil
}

// DuplicateError is a value of a node (Field: name, mac or ip) that another node of the
// inventory has; the server would refuse the whole file for it.
type DuplicateError struct {
	Field string
	Err   error
}

func (e *DuplicateError) Error() string { return e.Err.Error() }
func (e *DuplicateError) Unwrap() error { return e.Err }

// CheckUnique refuses, for the node named self ("" for a new node), a name, MAC or IP among fields
// (by column) that another node has, naming that node and its line. The error is a
// *DuplicateError.
func (inv *Inventory) CheckUnique(self string, fields map[string]string) error {
	if n, ok := inv.ByName(fields["name"]); ok && self == "" {
		return &DuplicateError{"name", fmt.Errorf("%s is already in %s (line %d)", n.Name, inv.File, n.Line)}
	}
	if mac, err := net.ParseMAC(fields["mac"]); err == nil {
		if n, ok := inv.ByMAC(mac); ok && n.Name != self {
			return &DuplicateError{"mac", fmt.Errorf("%s already belongs to %s (%s line %d)", mac, n.Name, inv.File, n.Line)}
		}
	}
	if ip, err := netip.ParseAddr(fields["ip"]); err == nil {
		if n, ok := inv.ByIP(ip); ok && n.Name != self {
			return &DuplicateError{"ip", fmt.Errorf("%s already belongs to %s (%s line %d)", ip, n.Name, inv.File, n.Line)}
		}
	}
	return nil
}
