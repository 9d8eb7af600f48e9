package bootconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/atomicfile"
	"github.com/bootfabric/bootfabric/topology"
	"gopkg.in/yaml.v3"
)

// FleetDocVersion is the format of FleetDoc. A server refuses a document of another version rather
// than guess at fields it does not know.
const FleetDocVersion = 1

// FleetDoc is one revision of a fleet's configuration: the fleet-wide settings of a boot-server
// configuration with its topology and inventory files embedded, and the profile manifests of an
// image store. It is JSON; Encode gives the exact bytes that are stored, and Hash their sha256,
// which is the revision's fleet.ConfigRevision.SHA256. Settings are stored with their defaults
// applied, so that servers of different versions cannot read one revision differently.
//
// It holds what the servers must agree on, never what one server decides (LocalSettings), and
// only the images' manifests: a server fetches a missing blob from a peer by sha256.
type FleetDoc struct {
	Version       int           `json:"version"`
	Servers       []FleetServer `json:"servers"`
	FailedServers []int         `json:"failed_servers,omitempty"`
	Topology      FleetFile     `json:"topology"`
	Mapping       string        `json:"mapping"`
	Inventory     FleetFile     `json:"inventory"`
	Profile       string        `json:"profile"`
	// StateFlush is a Go duration ("200ms"), as in the YAML.
	StateFlush string    `json:"state_flush"`
	TFTP       FleetTFTP `json:"tftp"`
	DHCP       FleetDHCP `json:"dhcp"`
	// Profiles are the manifests of the published image store, sorted by name: file names with
	// each file's sha256 and size, never the files.
	Profiles []images.Profile `json:"profiles"`
}

// FleetServer is one server of the fleet (servers[i] in the YAML).
type FleetServer struct {
	Name    string `json:"name"`
	Address string `json:"address"`
}

// FleetFile is a file the configuration names, embedded so that a server needs nothing but etcd.
// A topology preset is kept as its name: every bootctl has it built in.
type FleetFile struct {
	// Preset is a built-in topology's name; Name and Text are then empty.
	Preset string `json:"preset,omitempty"`
	// Name is the file's base name: its extension decides the format (an inventory ending in .csv
	// is CSV), and errors in it name it.
	Name string `json:"name,omitempty"`
	// Text is the file's content.
	Text string `json:"text,omitempty"`
}

// FleetTFTP is the fleet-wide part of tftp: (the listen address is each server's).
type FleetTFTP struct {
	MaxBlockSize          int `json:"max_block_size,omitempty"`
	MaxTransfers          int `json:"max_transfers,omitempty"`
	MaxTransfersPerClient int `json:"max_transfers_per_client,omitempty"`
}

// FleetDHCP is the fleet-wide part of dhcp: (listen address and interfaces are each server's).
// Durations are Go durations ("1h").
type FleetDHCP struct {
	Mode          dhcpd.Mode `json:"mode"`
	Subnet        string     `json:"subnet,omitempty"`
	Router        string     `json:"router,omitempty"`
	DNS           []string   `json:"dns,omitempty"`
	Domain        string     `json:"domain,omitempty"`
	LeaseTime     string     `json:"lease_time"`
	Workers       int        `json:"workers,omitempty"`
	Pool          *FleetPool `json:"pool,omitempty"`
	BIOSFile      string     `json:"bios_file,omitempty"`
	EFIx64File    string     `json:"efi_x64_file,omitempty"`
	EFIArm64File  string     `json:"efi_arm64_file,omitempty"`
	IPXEUserClass string     `json:"ipxe_user_class,omitempty"`
}

// FleetPool is dhcp.pool.
type FleetPool struct {
	Range   string `json:"range"`
	Lease   string `json:"lease,omitempty"`
	Unknown bool   `json:"unknown,omitempty"`
	// UnknownMax is dhcp.pool.unknown_max (omitted when 0, so that revisions without it read as
	// before).
	UnknownMax int `json:"unknown_max,omitempty"`
}

// LocalSettings are what one server of a fleet decides for itself: the settings a fleet file
// refuses. Zero values mean what they mean in a boot server's YAML: the same defaults (":80",
// ":69", ":67", all interfaces, /usr/lib/ipxe, http://ADDRESS:PORT), and StateDir and Images are
// required there as here.
type LocalSettings struct {
	StateDir   string   // state_dir
	Images     string   // images: the local store, filled from peers (images.FetchBlob)
	IPXEDir    string   // ipxe_dir
	HTTPListen string   // http.listen
	URL        string   // http.url
	TFTPListen string   // tftp.listen ("off" turns TFTP off)
	TFTPRoot   string   // tftp.root: a local directory served read-only over TFTP ("": none)
	DHCPListen string   // dhcp.listen
	Interfaces []string // dhcp.interfaces
	// OperatorTokenFile is http.operator_token_file ("": state_dir/operator.token): the operator
	// API's token is this server's own, as in a single server's configuration.
	OperatorTokenFile string
}

// perServerFields are the YAML settings a fleet file refuses: each server has its own.
var perServerFields = []string{
	"server_id", "state_dir", "ipxe_dir", "http.listen", "http.url", "tftp.listen", "tftp.root", "dhcp.listen", "dhcp.interfaces", "dhcp.ipv6_ra",
}

// LoadFleetFile reads a fleet file (fleet.yaml): a boot server's YAML without the per-server
// settings, whose `images:` names the store whose profile manifests are published. It checks
// everything a server would check when it starts (the configuration, the topology, the inventory,
// the mapping for every server, every node's address and profile, the store's blobs) so that a bad
// revision is refused here, with the file and line, and never reaches the servers.
func LoadFleetFile(path string) (*FleetDoc, error) {
	cfg, line, err := loadFleetConfig(path)
	if err != nil {
		return nil, err
	}
	doc := fleetDocOf(cfg)
	m, err := doc.embedMachine(cfg, path, line)
	if err != nil {
		return nil, err
	}
	if err := checkFleetNodes(cfg, m, line); err != nil {
		return nil, err
	}
	st, err := images.Open(cfg.Images)
	if err != nil {
		return nil, &Error{File: path, Line: line("images"), Field: "images", Msg: strings.TrimPrefix(err.Error(), "images: ")}
	}
	doc.Profiles = st.List()
	if err := CheckProfiles(cfg, m.Inventory, st, line); err != nil {
		return nil, err
	}
	if err := doc.checkMaterialize(path, cfg.Images); err != nil {
		return nil, err
	}
	return doc, nil
}

// loadFleetConfig reads a fleet file's configuration and validates it as the first server that
// serves would (the other servers are checked by checkMaterialize). It returns, with it, the line
// of a field in the file.
func loadFleetConfig(path string) (_ *Config, line func(field string) int, _ error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("fleet file: %w", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, yamlError(err, path)
	}
	if len(root.Content) == 0 {
		return nil, nil, &Error{File: path, Msg: "empty fleet file"}
	}
	if err := refusePerServer(root.Content[0], path); err != nil {
		return nil, nil, err
	}
	cfg, err := ParseConfig(data, path)
	if err != nil {
		return nil, nil, err
	}
	line = func(field string) int { return topology.FieldLine(root.Content[0], field) }
	id := firstServing(cfg)
	if id < 0 && len(cfg.Servers) > 0 {
		return nil, nil, &Error{File: path, Line: line("failed_servers"), Field: "failed_servers", Msg: "lists every server: at least one must serve"}
	}
	cfg.ServerID = max(id, 0)
	cfg.StateDir = filepath.Dir(path) // required by Validate; never published
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if err := checkServerNames(cfg.Servers); err != nil {
		err.File, err.Line = path, line(err.Field)
		return nil, nil, err
	}
	return cfg, line, nil
}

// firstServing returns the index of the first server not in failed_servers, or -1.
func firstServing(cfg *Config) int {
	for i := range cfg.Servers {
		if !slices.Contains(cfg.FailedServers, i) {
			return i
		}
	}
	return -1
}

// embedMachine puts the topology (unless a preset) and the inventory the configuration names into
// the document, and parses them as the servers will.
func (d *FleetDoc) embedMachine(cfg *Config, path string, line func(string) int) (*FleetMachine, error) {
	var topoText, invText []byte
	var err error
	if _, ok := topology.Preset(cfg.Topology); ok {
		d.Topology = FleetFile{Preset: cfg.Topology}
	} else if cfg.Topology != "" { // "": the flat machine, nothing to embed
		if topoText, err = os.ReadFile(cfg.Topology); err != nil {
			return nil, &Error{File: path, Line: line("topology"), Field: "topology", Msg: err.Error()}
		}
		d.Topology = FleetFile{Name: filepath.Base(cfg.Topology), Text: string(topoText)}
	}
	if invText, err = os.ReadFile(cfg.Inventory); err != nil {
		return nil, &Error{File: path, Line: line("inventory"), Field: "inventory", Msg: err.Error()}
	}
	d.Inventory = FleetFile{Name: filepath.Base(cfg.Inventory), Text: string(invText)}
	return parseMachine(cfg.Topology, topoText, cfg.Inventory, invText)
}

// checkMaterialize builds what the servers will build, every serving server's configuration from
// the document itself, in a temporary directory, with the image store at store.
func (d *FleetDoc) checkMaterialize(path, store string) error {
	tmp, err := os.MkdirTemp("", "bootctl-fleet-")
	if err != nil {
		return fmt.Errorf("fleet file: %w", err)
	}
	defer os.RemoveAll(tmp)
	for i, s := range d.Servers {
		if slices.Contains(d.FailedServers, i) {
			continue
		}
		local := LocalSettings{StateDir: tmp, Images: store}
		if _, err := d.Materialize(filepath.Join(tmp, s.Name), s.Name, local); err != nil {
			return fmt.Errorf("%s: the revision does not materialize for server %s: %w", path, s.Name, err)
		}
	}
	return nil
}

// checkServerNames checks that the servers' names can name fleet members: each is the key of a
// membership in etcd and what `bootctl serve --name` gives, so they must be distinct, and one key
// element each.
func checkServerNames(servers []ServerEntry) *Error {
	seen := map[string]int{}
	for i, s := range servers {
		f := fmt.Sprintf("servers[%d].name", i)
		if strings.ContainsFunc(s.Name, func(r rune) bool { return r == '/' || r < 0x20 || r == 0x7f }) {
			return &Error{Field: f, Msg: fmt.Sprintf("%q: a fleet member's name holds no '/' and no control character", s.Name)}
		}
		if j, dup := seen[s.Name]; dup {
			return &Error{Field: f, Msg: fmt.Sprintf("%q is also servers[%d]'s name: a fleet tells its servers by name", s.Name, j)}
		}
		seen[s.Name] = i
	}
	return nil
}

// refusePerServer refuses the first (by line) per-server setting in a fleet file.
func refusePerServer(root *yaml.Node, file string) error {
	var first *Error
	for _, f := range perServerFields {
		k := yamlKey(root, f)
		if k != nil && (first == nil || k.Line < first.Line) {
			first = &Error{File: file, Line: k.Line, Field: f, Msg: "per-server setting; give it to bootctl serve"}
		}
	}
	if first != nil {
		return first
	}
	return nil
}

// yamlKey returns the key node of a dotted path of mapping keys, or nil.
func yamlKey(n *yaml.Node, path string) *yaml.Node {
	var key *yaml.Node
	for _, part := range strings.Split(path, ".") {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		key = nil
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == part {
				key, next = n.Content[i], n.Content[i+1]
			}
		}
		if key == nil {
			return nil
		}
		n = next
	}
	return key
}

// fleetDocOf copies the fleet-wide settings of a validated configuration.
func fleetDocOf(c *Config) *FleetDoc {
	d := &FleetDoc{
		Version:       FleetDocVersion,
		FailedServers: slices.Clone(c.FailedServers),
		Mapping:       c.Mapping,
		Profile:       c.Profile,
		StateFlush:    time.Duration(*c.StateFlush).String(),
		TFTP: FleetTFTP{MaxBlockSize: c.TFTP.MaxBlockSize, MaxTransfers: c.TFTP.MaxTransfers,
			MaxTransfersPerClient: c.TFTP.MaxTransfersPerClient},
		DHCP: FleetDHCP{
			Mode: c.DHCP.Mode, Subnet: c.DHCP.Subnet, Router: c.DHCP.Router, DNS: slices.Clone(c.DHCP.DNS),
			Domain: c.DHCP.Domain, LeaseTime: time.Duration(c.DHCP.LeaseTime).String(), Workers: c.DHCP.Workers,
			BIOSFile: c.DHCP.BIOSFile, EFIx64File: c.DHCP.EFIx64File, EFIArm64File: c.DHCP.EFIArm64File,
			IPXEUserClass: c.DHCP.IPXEUserClass,
		},
	}
	for _, s := range c.Servers {
		d.Servers = append(d.Servers, FleetServer(s))
	}
	if p := c.DHCP.Pool; p != nil {
		d.DHCP.Pool = &FleetPool{Range: p.Range, Lease: time.Duration(p.Lease).String(), Unknown: p.Unknown, UnknownMax: p.UnknownMax}
	}
	return d
}

// FleetMachine is a revision's machine: the topology's hierarchy and the inventory.
type FleetMachine struct {
	Hierarchy *topology.Hierarchy
	Inventory *Inventory
}

// parseMachine parses a topology (a preset name, or a file's text) and an inventory's text; the
// names are the files' names in errors, and the inventory's extension picks its format as
// LoadInventory's does.
func parseMachine(topoName string, topoText []byte, invName string, invText []byte) (*FleetMachine, error) {
	if topoName == "" {
		return parseFlatMachine(invName, invText)
	}
	m, ok := topology.Preset(topoName)
	if !ok {
		var err error
		if m, err = topology.Parse(topoText, topoName); err != nil {
			var e *Error
			if errors.As(err, &e) && e.File != "" {
				return nil, err // names the file already
			}
			return nil, fmt.Errorf("topology %s: %w", topoName, err)
		}
	}
	g, err := m.Build()
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w", topoName, err)
	}
	h := g.Hierarchy()
	inv, err := parseInventory(invName, invText, h)
	if err != nil {
		return nil, err
	}
	return &FleetMachine{Hierarchy: h, Inventory: inv}, nil
}

// parseFlatMachine parses the inventory of a machine without a topology and its flat hierarchy.
func parseFlatMachine(invName string, invText []byte) (*FleetMachine, error) {
	inv, err := parseInventory(invName, invText, nil)
	if err != nil {
		return nil, err
	}
	h, err := FlatHierarchy(inv)
	if err != nil {
		return nil, err
	}
	return &FleetMachine{Hierarchy: h, Inventory: inv}, nil
}

// parseInventory parses an inventory's text, CSV or YAML by its name's extension as LoadInventory.
func parseInventory(invName string, invText []byte, h *topology.Hierarchy) (*Inventory, error) {
	if strings.EqualFold(filepath.Ext(invName), ".csv") {
		return ParseInventoryCSV(invText, invName, h)
	}
	return ParseInventoryYAML(invText, invName, h)
}

// checkFleetNodes checks the mapping and every node as the servers will: each serving server's
// share against the DHCP settings (the union of the shares is every node, so a takeover meets no
// node that was not checked).
func checkFleetNodes(cfg *Config, m *FleetMachine, line func(string) int) error {
	a, err := AssignServers(m.Hierarchy, cfg.Mapping, len(cfg.Servers), cfg.FailedServers, nil)
	if err != nil {
		return &Error{File: cfg.file, Line: line("mapping"), Field: "mapping", Msg: err.Error()}
	}
	for i := range cfg.Servers {
		if slices.Contains(cfg.FailedServers, i) {
			continue
		}
		c := *cfg
		c.ServerID = i
		au, err := NewAuthority(m.Inventory, a, i)
		if err != nil {
			return err
		}
		if err := c.CheckNodes(au); err != nil {
			return err
		}
		if _, err := au.Reservations(c.DHCP.NetworkOptions()); err != nil {
			return fmt.Errorf("%s: server %s: reservations: %w", m.Inventory.File, c.Servers[i].Name, err)
		}
	}
	return nil
}

// CheckProfiles checks that the default profile and every profile the inventory names are in
// the published store, and that the store's blobs are whole: the servers fetch them from peers and
// would refuse a blob that does not match its manifest.
func CheckProfiles(cfg *Config, inv *Inventory, st *images.Store, line func(string) int) error {
	if _, err := st.Get(cfg.Profile); err != nil {
		f := "profile"
		if line(f) == 0 {
			f = "images"
		}
		return &Error{File: cfg.file, Line: line(f), Field: "profile", Msg: fmt.Sprintf("%q is not in the image store %s (bootctl image list --store %s)", cfg.Profile, cfg.Images, cfg.Images)}
	}
	if err := CheckNodeProfiles(inv, st, cfg.Images); err != nil {
		return err
	}
	if probs := st.Verify(); len(probs) > 0 {
		return &Error{File: cfg.file, Line: line("images"), Field: "images", Msg: fmt.Sprintf("store %s: %s (%d problems; bootctl image verify --store %s)", cfg.Images, probs[0], len(probs), cfg.Images)}
	}
	return nil
}

// CheckNodeProfiles refuses, with the inventory's line, a node whose profile the store (at path
// storePath) lacks: a server would refuse to start on it. The one check of nodes' profiles: the
// server's, the fleet's and the node commands'.
func CheckNodeProfiles(inv *Inventory, st *images.Store, storePath string) error {
	for _, n := range inv.Nodes {
		if n.Profile == "" {
			continue
		}
		if _, err := st.Get(n.Profile); err != nil {
			return &Error{File: inv.File, Line: n.Line, Field: "profile", Msg: fmt.Sprintf("node %s: profile %q is not in the image store %s (bootctl image list --store %s)", n.Name, n.Profile, storePath, storePath)}
		}
	}
	return nil
}

// Encode returns the document as stored: compact JSON, deterministic (map keys sorted).
func (d *FleetDoc) Encode() ([]byte, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("fleet configuration: %w", err)
	}
	return b, nil
}

// Hash returns the hex sha256 of Encode's bytes: the revision's fleet.ConfigRevision.SHA256.
func (d *FleetDoc) Hash() string {
	b, err := d.Encode()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// DecodeFleetDoc decodes a stored revision. Unknown fields and other versions are refused: a server
// that does not understand a revision must keep the one it has rather than run half of the new one.
func DecodeFleetDoc(data []byte) (*FleetDoc, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d FleetDoc
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("fleet configuration: %w", err)
	}
	if dec.More() {
		return nil, errors.New("fleet configuration: more than one JSON value")
	}
	if d.Version != FleetDocVersion {
		return nil, fmt.Errorf("fleet configuration: version %d, this bootctl reads %d", d.Version, FleetDocVersion)
	}
	servers := make([]ServerEntry, len(d.Servers))
	for i, sv := range d.Servers {
		servers[i] = ServerEntry(sv)
	}
	if len(servers) == 0 {
		return nil, errors.New("fleet configuration: no servers")
	}
	if err := checkServerNames(servers); err != nil {
		return nil, fmt.Errorf("fleet configuration: %w", err)
	}
	if p := d.Topology.Preset; p != "" {
		if _, ok := topology.Preset(p); !ok {
			return nil, fmt.Errorf("fleet configuration: topology: %q is not a preset", p)
		}
	} else if d.Topology.Name != "" || d.Topology.Text != "" { // neither: the flat machine
		if err := safeBase(d.Topology.Name); err != nil {
			return nil, fmt.Errorf("fleet configuration: topology: %w", err)
		}
	}
	if d.Inventory.Preset != "" {
		return nil, errors.New("fleet configuration: inventory: want an embedded file, not a preset")
	}
	if err := safeBase(d.Inventory.Name); err != nil {
		return nil, fmt.Errorf("fleet configuration: inventory: %w", err)
	}
	return &d, nil
}

// safeBase checks that a file name from a document is a plain base name: a revision comes from
// etcd, and must not make a server write outside its directory.
func safeBase(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.ContainsRune(name, 0) {
		return fmt.Errorf("file name %q: want a plain file name", name)
	}
	return nil
}

// Index returns the index of the named server in Servers, or -1.
func (d *FleetDoc) Index(name string) int {
	return slices.IndexFunc(d.Servers, func(s FleetServer) bool { return s.Name == name })
}

// ServerNames lists the servers' names in order.
func (d *FleetDoc) ServerNames() []string {
	out := make([]string, len(d.Servers))
	for i, s := range d.Servers {
		out[i] = s.Name
	}
	return out
}

// Machine parses the revision's topology and inventory from the embedded text (nothing on disk).
func (d *FleetDoc) Machine() (*FleetMachine, error) {
	topo := d.Topology.Preset
	if topo == "" {
		topo = d.Topology.Name
	}
	return parseMachine(topo, []byte(d.Topology.Text), d.Inventory.Name, []byte(d.Inventory.Text))
}

// FleetOwnership is who owns a revision's nodes for one live set.
type FleetOwnership struct {
	// Nodes[i] is how many inventory nodes server i owns.
	Nodes []int
	// Absent are the failed_servers (dealt around); Dead the other servers that are not live
	// (their blocks moved to survivors).
	Absent, Dead []int
	// Unowned counts the nodes nobody owns: all of them when no server is live.
	Unowned int
}

// Ownership applies the fleet's ownership rule (Assignment: absent = failed_servers, dead = the
// other servers that are not in live) to the machine's inventory, as every server of the fleet
// computes it.
func (d *FleetDoc) Ownership(m *FleetMachine, live []string) (FleetOwnership, error) {
	o := FleetOwnership{Nodes: make([]int, len(d.Servers)), Absent: slices.Clone(d.FailedServers)}
	for i, s := range d.Servers {
		if !slices.Contains(d.FailedServers, i) && !slices.Contains(live, s.Name) {
			o.Dead = append(o.Dead, i)
		}
	}
	if len(o.Absent)+len(o.Dead) >= len(d.Servers) {
		o.Unowned = len(m.Inventory.Nodes)
		return o, nil
	}
	a, err := AssignServers(m.Hierarchy, d.Mapping, len(d.Servers), d.FailedServers, o.Dead)
	if err != nil {
		return o, fmt.Errorf("mapping: %w", err)
	}
	for _, n := range m.Inventory.Nodes {
		if s := int(a.Server[n.Index]); s >= 0 && s < len(o.Nodes) {
			o.Nodes[s]++
		} else {
			o.Unowned++
		}
	}
	return o, nil
}

// Owners returns the name of the server that owns each inventory node of the machine when the
// servers in live are up, by the rule of Ownership; a node nobody owns is missing.
func (d *FleetDoc) Owners(m *FleetMachine, live []string) (map[string]string, error) {
	o, err := d.Ownership(m, live)
	if err != nil || o.Unowned == len(m.Inventory.Nodes) {
		return map[string]string{}, err
	}
	a, err := AssignServers(m.Hierarchy, d.Mapping, len(d.Servers), d.FailedServers, o.Dead)
	if err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	out := make(map[string]string, len(m.Inventory.Nodes))
	for _, n := range m.Inventory.Nodes {
		if s := int(a.Server[n.Index]); s >= 0 && s < len(d.Servers) {
			out[n.Name] = d.Servers[s].Name
		}
	}
	return out, nil
}

// Materialize makes the configuration of server name from the revision: it writes the embedded
// topology and inventory under dir (topology/NAME, inventory/NAME, and the document itself as
// fleet.json, which the configuration's errors name) and returns the validated Config with
// ServerID the index of name and local's settings. A name not in the servers is an error that
// lists them.
func (d *FleetDoc) Materialize(dir, name string, local LocalSettings) (*Config, error) {
	id := d.Index(name)
	if id < 0 {
		return nil, fmt.Errorf("server %q is not in the fleet's servers (%s)", name, strings.Join(d.ServerNames(), ", "))
	}
	c, err := d.config(id, local)
	if err != nil {
		return nil, err
	}
	if err := d.writeFiles(c, dir); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("server %s: %w", name, err)
	}
	return c, nil
}

// config returns the configuration of server id from the revision and local's settings, before
// the files it names are written and before it is validated.
func (d *FleetDoc) config(id int, local LocalSettings) (*Config, error) {
	flush, err := time.ParseDuration(d.StateFlush)
	if err != nil {
		return nil, fmt.Errorf("fleet configuration: state_flush: %w", err)
	}
	lease, err := time.ParseDuration(d.DHCP.LeaseTime)
	if err != nil {
		return nil, fmt.Errorf("fleet configuration: dhcp.lease_time: %w", err)
	}
	c := &Config{
		ServerID:      id,
		FailedServers: slices.Clone(d.FailedServers),
		Mapping:       d.Mapping,
		Images:        local.Images,
		IPXEDir:       local.IPXEDir,
		Profile:       d.Profile,
		StateDir:      local.StateDir,
		HTTP:          HTTPConfig{Listen: local.HTTPListen, URL: local.URL, OperatorTokenFile: local.OperatorTokenFile},
		TFTP: TFTPConfig{Listen: local.TFTPListen, Root: local.TFTPRoot, MaxBlockSize: d.TFTP.MaxBlockSize,
			MaxTransfers: d.TFTP.MaxTransfers, MaxTransfersPerClient: d.TFTP.MaxTransfersPerClient},
		DHCP: DHCPConfig{
			Mode: d.DHCP.Mode, Interfaces: slices.Clone(local.Interfaces), Listen: local.DHCPListen,
			Subnet: d.DHCP.Subnet, Router: d.DHCP.Router, DNS: slices.Clone(d.DHCP.DNS), Domain: d.DHCP.Domain,
			LeaseTime: Duration(lease), Workers: d.DHCP.Workers,
			BIOSFile: d.DHCP.BIOSFile, EFIx64File: d.DHCP.EFIx64File, EFIArm64File: d.DHCP.EFIArm64File,
			IPXEUserClass: d.DHCP.IPXEUserClass,
		},
	}
	fd := Duration(flush)
	c.StateFlush = &fd
	for _, s := range d.Servers {
		c.Servers = append(c.Servers, ServerEntry(s))
	}
	if p := d.DHCP.Pool; p != nil {
		c.DHCP.Pool = &PoolConfig{Range: p.Range, Unknown: p.Unknown, UnknownMax: p.UnknownMax}
		if p.Lease != "" {
			pl, err := time.ParseDuration(p.Lease)
			if err != nil {
				return nil, fmt.Errorf("fleet configuration: dhcp.pool.lease: %w", err)
			}
			c.DHCP.Pool.Lease = Duration(pl)
		}
	}
	return c, nil
}

// writeFiles writes the revision's topology (unless a preset), inventory and the document itself
// under dir and points c at them.
func (d *FleetDoc) writeFiles(c *Config, dir string) (err error) {
	write := func(sub string, f FleetFile) (string, error) {
		if err := safeBase(f.Name); err != nil {
			return "", fmt.Errorf("fleet configuration: %s: %w", sub, err)
		}
		return writeFileAtomic(filepath.Join(dir, sub, f.Name), []byte(f.Text))
	}
	if d.Topology.Preset != "" {
		if _, ok := topology.Preset(d.Topology.Preset); !ok {
			return fmt.Errorf("fleet configuration: topology: %q is not a preset", d.Topology.Preset)
		}
		c.Topology = d.Topology.Preset
	} else if d.Topology.Name == "" {
		c.Topology = "" // the flat machine
	} else if c.Topology, err = write("topology", d.Topology); err != nil {
		return err
	}
	if c.Inventory, err = write("inventory", d.Inventory); err != nil {
		return err
	}
	enc, err := d.Encode()
	if err != nil {
		return err
	}
	c.file, err = writeFileAtomic(filepath.Join(dir, "fleet.json"), enc)
	return err
}

// writeFileAtomic writes data to path through a temporary file and a rename, so that a server
// never reads half a file, and returns path.
func writeFileAtomic(path string, data []byte) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("fleet configuration: %w", err)
	}
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("fleet configuration: writing %s: %w", path, err)
	}
	return path, nil
}

// WithInventory returns a copy of the revision with the inventory's text replaced, and its
// machine, checked as LoadFleetFile checks a fleet file's nodes: the inventory parses against the
// topology, each serving server's share fits the DHCP settings, and every profile a node names is
// published. It is how `bootctl node add|set|delete` edits a fleet's inventory from etcd alone.
func (d *FleetDoc) WithInventory(text string) (*FleetDoc, *FleetMachine, error) {
	nd := *d
	nd.Inventory.Text = text
	m, err := nd.Machine()
	if err != nil {
		return nil, nil, err
	}
	c, err := nd.config(0, LocalSettings{})
	if err != nil {
		return nil, nil, err
	}
	c.file = nd.Inventory.Name
	if err := checkFleetNodes(c, m, func(string) int { return 0 }); err != nil {
		return nil, nil, err
	}
	for _, n := range m.Inventory.Nodes {
		if n.Profile != "" && !slices.ContainsFunc(nd.Profiles, func(p images.Profile) bool { return p.Name == n.Profile }) {
			return nil, nil, &Error{File: m.Inventory.File, Line: n.Line, Field: "profile",
				Msg: fmt.Sprintf("node %s: profile %q is not published in the fleet's configuration", n.Name, n.Profile)}
		}
	}
	return &nd, m, nil
}
