package bootconfig

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/internal/yamlerr"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/nodeset"
	"github.com/bootfabric/bootfabric/topology"
	"gopkg.in/yaml.v3"
)

// Config is a boot server's configuration, as written in YAML. Relative paths in a file are taken
// relative to the file's directory. Zero fields take the defaults named on them; Validate applies
// them and checks everything.
type Config struct {
	// ServerID is this server's index in Servers. Default 0.
	ServerID int `yaml:"server_id"`
	// Servers lists every boot server of the machine (required). The mapping deals the nodes to
	// them by index, so every server must be given the same list.
	Servers []ServerEntry `yaml:"servers"`
	// FailedServers lists servers (by index) that were down when the servers started (absent): the
	// blocks are dealt over the others (block b to live[b mod live]), exactly as `bootctl plan
	// --failed-servers` predicts (mapping.Owners). Every server must be given the same list.
	FailedServers []int `yaml:"failed_servers,omitempty"`
	// Topology is a preset name (mini, sunway) or a machine description file. Empty: the flat
	// machine (topology.Flat) of the inventory's nodes, in the inventory's order.
	Topology string `yaml:"topology"`
	// Mapping is the block-cyclic algorithm that assigns nodes to servers: scda, bcda, ncda or
	// cyclic:LEVEL. Default bcda, or ncda on the flat machine.
	Mapping string `yaml:"mapping"`
	// Inventory is the inventory file, CSV (*.csv) or YAML (required).
	Inventory string `yaml:"inventory"`
	// Images is the image store directory (required).
	Images string `yaml:"images"`
	// IPXEDir holds the iPXE binaries served by TFTP and /ipxe/bin. Default /usr/lib/ipxe (Debian's
	// ipxe package).
	IPXEDir string `yaml:"ipxe_dir"`
	// Profile is the boot profile of nodes whose inventory entry names none. Default "default".
	Profile string `yaml:"profile"`
	// StateDir holds the persisted boot states (required).
	StateDir string `yaml:"state_dir"`
	// StateFlush is how long state changes may wait before they are written out together (and
	// fsynced). 0 writes every transition at once. Default 200ms.
	StateFlush *Duration `yaml:"state_flush,omitempty"`

	// ResetOnDiscover makes a DHCP DISCOVER from a node that is booted or healthy start a new boot
	// attempt, as any DISCOVER did before. Default false: such a DISCOVER is recorded as an event
	// and the state stays, unless the operator asked for the reboot (bootctl node reboot NAME).
	ResetOnDiscover bool `yaml:"reset_on_discover"`

	HTTP   HTTPConfig   `yaml:"http"`
	TFTP   TFTPConfig   `yaml:"tftp"`
	DHCP   DHCPConfig   `yaml:"dhcp"`
	Health HealthConfig `yaml:"health"`

	// Overlays are small per-node files (host name, network settings, keys) served as one more
	// initrd after the profile's, rendered from templates with the node's fields: see
	// images.Overlay. A node gets every overlay that selects it, in this order, a later file
	// replacing an earlier one of the same name. Empty: none.
	Overlays []OverlayConfig `yaml:"overlays,omitempty"`

	file string
	root *yaml.Node
}

// OverlayConfig is one overlay and the nodes it is for.
type OverlayConfig struct {
	// Dir is the overlay directory (required).
	Dir string `yaml:"dir"`
	// Nodes selects nodes by name, as bootctl power does: node[00-15],gpu[1-4]. Empty: every node.
	Nodes string `yaml:"nodes,omitempty"`
	// Profiles selects the nodes booting one of these profiles (a group). Empty: any profile.
	Profiles []string `yaml:"profiles,omitempty"`
}

// ServerEntry is one boot server.
type ServerEntry struct {
	// Name labels the server (default bsN).
	Name string `yaml:"name"`
	// Address is the server's IPv4 address on the boot network (required): next-server, DHCP server
	// identifier and the host of the URLs given to nodes.
	Address string `yaml:"address"`
}

// HTTPConfig configures the HTTP endpoint.
type HTTPConfig struct {
	// Listen is the listen address. Default ":80".
	Listen string `yaml:"listen"`
	// URL is the base URL nodes use to reach this server. Default http://ADDRESS:PORT with this
	// server's address and the listen port.
	URL string `yaml:"url"`

	// NodeAuth makes the node endpoints (health reports, the downloads that move a node's boot
	// state, and in proxy mode the iPXE script of a node without a known address) require the
	// node's token, which the server puts in the node's iPXE script and kernel command line, and
	// the node's own address. Default true; false trusts any request from the node's address.
	NodeAuth *bool `yaml:"node_auth,omitempty"`
	// NodeSecretFile holds the secret the node tokens are derived from (HMAC-SHA256 of the node
	// name). Default STATE_DIR/node.secret, created with a random secret at first start.
	NodeSecretFile string `yaml:"node_secret_file"`
	// OperatorTokenFile holds the bearer token of the operator endpoints (POST
	// /api/v1/nodes/NAME/reboot). Default STATE_DIR/operator.token, created at first start.
	OperatorTokenFile string `yaml:"operator_token_file"`
	// OperatorRemote accepts operator requests from other hosts than this one (with the token).
	// Default false: loopback only, as Kea's control API listens on loopback by default.
	OperatorRemote bool `yaml:"operator_remote"`
	// Timeouts of a connection: for the request headers, the whole request, the whole response
	// (a kernel or initrd download must fit in it) and an idle keep-alive connection. Defaults 10s,
	// 30s, 10m, 60s.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	ReadTimeout       Duration `yaml:"read_timeout"`
	WriteTimeout      Duration `yaml:"write_timeout"`
	IdleTimeout       Duration `yaml:"idle_timeout"`
	// MaxRanges caps the byte ranges of one request after overlapping and adjacent ones are merged;
	// a request with more gets the whole file, as Apache's MaxRanges does. Default 16.
	MaxRanges int `yaml:"max_ranges"`
	// MaxConnsPerClient caps the open connections of one client address; more are closed at once.
	// Default 32.
	MaxConnsPerClient int `yaml:"max_conns_per_client"`
}

// HealthConfig bounds the health reports a node can make the server keep.
type HealthConfig struct {
	// MaxReportBytes caps a health report's body. Default 16384.
	MaxReportBytes int `yaml:"max_report_bytes"`
	// History is how many transitions each node's record keeps (the rest are counted in
	// history_dropped). Default 32.
	History int `yaml:"history"`
}

// TFTPConfig configures the TFTP endpoint.
type TFTPConfig struct {
	// Listen is the listen address, or "off". Default ":69".
	Listen string `yaml:"listen"`
	// MaxBlockSize caps the negotiated blksize. Default 1468.
	MaxBlockSize int `yaml:"max_block_size"`
	// MaxTransfers bounds concurrent transfers. Default 512.
	MaxTransfers int `yaml:"max_transfers"`
	// MaxTransfersPerClient bounds the concurrent transfers of one client address, so that one
	// host cannot take every slot. Default 16.
	MaxTransfersPerClient int `yaml:"max_transfers_per_client"`
	// Root is a directory served read-only besides the profile store and the iPXE binaries, as
	// tftpd-hpa -s DIR serves one (pxelinux menus, firmware files). A name the profile store or
	// ipxe_dir has is served from them; any other name from Root, confined to it (symbolic links
	// leading out of it are refused). Empty: none.
	Root string `yaml:"root"`
}

// DHCPConfig configures the DHCP endpoint.
type DHCPConfig struct {
	// Mode is reservation (hand out the inventory's addresses, and with Pool a dynamic range), proxy
	// (proxyDHCP: boot options only, another server gives addresses) or off. Default reservation.
	Mode dhcpd.Mode `yaml:"mode"`
	// Interfaces binds one listener to each named interface. Empty: all interfaces.
	Interfaces []string `yaml:"interfaces"`
	// Listen is the listen address. Default ":67".
	Listen string `yaml:"listen"`
	// IPv6RA is what the server tells the boot network about IPv6 routers: no-router (answer
	// router solicitations, and every 3 s, with a router advertisement of lifetime 0 and no
	// prefix, so that iPXE stops waiting 13-16 s for one; a real router on the link is not
	// displaced) or off. Sent on dhcp.interfaces, or else on the interface that holds this
	// server's address. Default no-router in reservation mode (the server owns the boot network), off
	// in proxy and off modes (another server does). A fleet member uses the default.
	IPv6RA string `yaml:"ipv6_ra"`
	// Subnet is the nodes' subnet in CIDR form (e.g. 10.0.0.0/24); it gives the subnet mask.
	// Required in reservation mode; every inventory IP must lie in it.
	Subnet string `yaml:"subnet"`
	// Router is the default gateway (option 3). Empty: none.
	Router string `yaml:"router"`
	// DNS are the name servers (option 6).
	DNS []string `yaml:"dns"`
	// Domain is the domain name (option 15).
	Domain string `yaml:"domain"`
	// LeaseTime is option 51 for reserved addresses. Default 1h.
	LeaseTime Duration `yaml:"lease_time"`
	// Pool adds a dynamic address range to reservation mode. Nil: no pool, every node needs an ip.
	Pool *PoolConfig `yaml:"pool,omitempty"`
	// Workers handling packets. Default 8, or 256 with a pool: a worker that acknowledges a pool
	// lease waits for the lease's fsync, which it shares with every lease committed meanwhile, so
	// the workers bound how many leases one fsync carries and hence the rate.
	Workers int `yaml:"workers"`
	// Boot files by client architecture, and the user class that marks iPXE. Defaults:
	// undionly.kpxe, ipxe.efi, ipxe-arm64.efi, iPXE.
	BIOSFile      string `yaml:"bios_file"`
	EFIx64File    string `yaml:"efi_x64_file"`
	EFIArm64File  string `yaml:"efi_arm64_file"`
	IPXEUserClass string `yaml:"ipxe_user_class"`
}

// PoolConfig is the dynamic address pool (dhcp.pool). Who gets a pool address: inventory nodes with
// an ip keep that reservation; inventory nodes of this server without an ip get a pool address (and
// keep their host name); MACs not in the inventory only with Unknown. Leases are persisted in
// STATE_DIR/leases.db (PoolFile), apart from the boot states so that neither file's writes wait for
// the other's fsync and the file can be removed to start the pool afresh. A lease is on disk before
// its ACK is sent; offers are held in memory only. Expired and released addresses are reclaimed for
// other clients, longest-expired first and only once no never-used address is left, so a client
// that returns gets its old address back while nobody else needed it.
type PoolConfig struct {
	// Range is the pool's addresses, FIRST-LAST inclusive (e.g. 10.0.0.100-10.0.0.199; required).
	// It must lie inside dhcp.subnet, exclude the subnet's network and broadcast addresses, every
	// server's address, dhcp.router, dhcp.dns and every inventory ip, and hold at most 65,536
	// addresses. The servers in `servers` split it evenly (server i hands out only the i-th part),
	// so servers that share this file never give one address to two clients.
	Range string `yaml:"range"`
	// Lease is the lease time of pool addresses, between 1m and 7d; a client that asks for longer
	// (option 51) gets this. Default dhcp.lease_time.
	Lease Duration `yaml:"lease"`
	// Unknown answers MACs that are not in the inventory from the pool. Each such MAC is answered
	// by one live server (not in failed_servers), chosen by a hash of the MAC, so unknown clients
	// get one offer, not one per server. They hold together at most the addresses left once every
	// inventory node that may use the pool has one (this server's nodes without an ip of its
	// part; in a fleet every node without an ip, of the whole range), so that however many of them
	// come an inventory node always finds an address. Default false: only inventory nodes are
	// answered.
	Unknown bool `yaml:"unknown"`
	// UnknownMax caps further what MACs outside the inventory may hold together (it needs
	// Unknown). Servers sharing this file split it as they split the range; a fleet applies it to
	// the whole range. 0: no cap besides the room kept for the inventory.
	UnknownMax int `yaml:"unknown_max"`
}

// Pool limits.
const (
	// MaxPoolSize bounds dhcp.pool.range: every lease is held in memory and loaded at start.
	MaxPoolSize  = 65536
	MinPoolLease = Duration(time.Minute)
	MaxPoolLease = Duration(7 * 24 * time.Hour)
)

// PoolFile is the name of the pool's lease database in the state directory.
const PoolFile = "leases.db"

// The values of dhcp.ipv6_ra (dhcp.mode's are dhcpd's Mode).
const (
	// IPv6RANoRouter and IPv6RAOff are the values of dhcp.ipv6_ra.
	IPv6RANoRouter = "no-router"
	IPv6RAOff      = "off"
)

// Duration is a time.Duration written as "200ms", "1h".
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler. Besides Go's units it takes whole days ("7d"), the
// unit leases are usually thought in.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if days, ok := strings.CutSuffix(n.Value, "d"); ok && err != nil {
		var k int
		if k, err = strconv.Atoi(days); err == nil && k <= 1<<16 {
			v = time.Duration(k) * 24 * time.Hour
		}
	}
	if err != nil || v < 0 {
		return &yamlerr.ValueError{Node: n, Want: "a duration like 200ms, 1h or 7d"}
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// LoadConfig reads a configuration file. It does not validate: apply overrides, then call Validate.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseConfig(data, path)
}

// ParseConfig decodes a configuration with the shared strict decoder, so that unknown fields and
// values of the wrong kind are errors that name the line and the field as written (with a "did you
// mean"), like a machine file's, never a Go type. file names the source in errors and relative
// paths are resolved against its directory.
func ParseConfig(data []byte, file string) (*Config, error) {
	var c Config
	root, err := yamlerr.Decode(data, &c)
	if errors.Is(err, yamlerr.ErrEmpty) {
		return nil, &Error{File: file, Msg: "empty configuration"}
	}
	if err != nil {
		return nil, yamlError(err, file)
	}
	c.file, c.root = file, root
	dir := filepath.Dir(file)
	rel := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	rel(&c.Inventory)
	rel(&c.Images)
	rel(&c.StateDir)
	rel(&c.IPXEDir)
	rel(&c.TFTP.Root)
	rel(&c.HTTP.NodeSecretFile)
	rel(&c.HTTP.OperatorTokenFile)
	for i := range c.Overlays {
		rel(&c.Overlays[i].Dir)
	}
	if _, preset := topology.Preset(c.Topology); !preset {
		rel(&c.Topology)
	}
	return &c, nil
}

// Validate applies the defaults and checks the configuration. Errors name the field and, for values
// that came from the file, its line.
func (c *Config) Validate() error {
	return c.located(c.validate())
}

// ValidateOwnership checks and defaults what decides which server owns which node (servers,
// server_id, failed_servers, mapping) and nothing else: what the commands that act on nodes from an
// admin host need of a server's configuration, as every server reads it.
func (c *Config) ValidateOwnership() error {
	if err := c.validateServers(); err != nil {
		return c.located(err)
	}
	c.defaultMapping()
	return nil
}

// located adds the file and the field's line to a fieldError.
func (c *Config) located(err error) error {
	var e *Error
	if errors.As(err, &e) && c.root != nil {
		e.File = c.file
		e.Line = topology.FieldLine(c.root, e.Field)
	}
	return err
}

// defaultMapping applies mapping's default (mapping.Default): a configuration without a topology
// is the flat machine of its inventory.
func (c *Config) defaultMapping() {
	if c.Mapping == "" {
		c.Mapping = mapping.Default(c.Topology == "")
	}
}

// fieldError is a configuration error about one field; Validate adds the file and the field's line.
func fieldError(field, format string, args ...any) error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// validate checks the configuration section by section, in the order of the file's documentation,
// applying each section's defaults before the sections after it read them.
func (c *Config) validate() error {
	for _, check := range []func() error{
		c.validateServers, c.validateFiles, c.validateHTTP, c.validateTFTP, c.validateDHCP, c.validateOverlays,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateServers checks servers, server_id and failed_servers, and names unnamed servers bsN.
func (c *Config) validateServers() error {
	if len(c.Servers) == 0 {
		return fieldError("servers", "list at least one boot server (name, address)")
	}
	seen := map[netip.Addr]int{}
	for i := range c.Servers {
		s := &c.Servers[i]
		f := fmt.Sprintf("servers[%d]", i)
		if s.Name == "" {
			s.Name = "bs" + strconv.Itoa(i)
		}
		a, err := netip.ParseAddr(s.Address)
		if err != nil || !a.Is4() {
			return fieldError(f+".address", "%q is not an IPv4 address", s.Address)
		}
		if j, dup := seen[a]; dup {
			return fieldError(f+".address", "%s is also servers[%d]'s address", a, j)
		}
		seen[a] = i
	}
	if c.ServerID < 0 || c.ServerID >= len(c.Servers) {
		return fieldError("server_id", "%d is not the index of one of the %d servers", c.ServerID, len(c.Servers))
	}
	for i, s := range c.FailedServers {
		if s < 0 || s >= len(c.Servers) {
			return fieldError(fmt.Sprintf("failed_servers[%d]", i), "%d is not a server index (0..%d)", s, len(c.Servers)-1)
		}
	}
	if slices.Contains(c.FailedServers, c.ServerID) {
		return fieldError("failed_servers", "lists this server (server_id %d)", c.ServerID)
	}
	return nil
}

// validateFiles checks the machine and the files and directories the server reads and writes
// (topology, mapping, inventory, images, state_dir) and applies the defaults of mapping, profile
// and state_flush.
func (c *Config) validateFiles() error {
	c.defaultMapping()
	if c.Mapping == "balanced" {
		return fieldError("mapping", "balanced depends on the batch being booted; a server needs a fixed block-cyclic mapping (scda, bcda, ncda, cyclic:LEVEL)")
	}
	if c.Inventory == "" {
		return fieldError("inventory", "missing: the inventory file (CSV or YAML)")
	}
	if c.Images == "" {
		return fieldError("images", "missing: the image store directory")
	}
	if c.StateDir == "" {
		return fieldError("state_dir", "missing: the directory for boot states")
	}
	if c.Profile == "" {
		c.Profile = "default"
	}
	if c.StateFlush == nil {
		d := Duration(200 * time.Millisecond)
		c.StateFlush = &d
	}
	return nil
}

// validateOverlays checks that every overlay names a directory and a valid node set; the
// directories are read, and the names checked against the inventory, when the server starts.
func (c *Config) validateOverlays() error {
	for i, o := range c.Overlays {
		f := fmt.Sprintf("overlays[%d]", i)
		if o.Dir == "" {
			return fieldError(f+".dir", "missing: the overlay directory")
		}
		if o.Nodes != "" {
			if _, err := nodeset.Expand(o.Nodes); err != nil {
				return fieldError(f+".nodes", "%v", err)
			}
		}
		for j, p := range o.Profiles {
			if p == "" {
				return fieldError(fmt.Sprintf("%s.profiles[%d]", f, j), "empty profile name")
			}
		}
	}
	return nil
}

// validateHTTP checks the http section (listen, url, then the limits with the health limits).
func (c *Config) validateHTTP() error {
	if c.HTTP.Listen == "" {
		c.HTTP.Listen = ":80"
	}
	if _, _, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
		return fieldError("http.listen", "%q is not HOST:PORT", c.HTTP.Listen)
	}
	if c.HTTP.URL != "" && !strings.HasPrefix(c.HTTP.URL, "http://") && !strings.HasPrefix(c.HTTP.URL, "https://") {
		return fieldError("http.url", "%q is not an http:// URL", c.HTTP.URL)
	}
	c.HTTP.URL = strings.TrimSuffix(c.HTTP.URL, "/")
	return c.validateLimits()
}

// validateTFTP checks the tftp section.
func (c *Config) validateTFTP() error {
	t := &c.TFTP
	if t.Listen == "" {
		t.Listen = ":69"
	}
	if t.Listen != "off" {
		if _, _, err := net.SplitHostPort(t.Listen); err != nil {
			return fieldError("tftp.listen", "%q is not HOST:PORT or off", t.Listen)
		}
	}
	if t.MaxBlockSize != 0 && (t.MaxBlockSize < 513 || t.MaxBlockSize > 65464) {
		return fieldError("tftp.max_block_size", "%d is not between 513 and 65464", t.MaxBlockSize)
	}
	if t.MaxTransfers < 0 {
		return fieldError("tftp.max_transfers", "must not be negative")
	}
	if t.MaxTransfersPerClient < 0 {
		return fieldError("tftp.max_transfers_per_client", "must not be negative")
	}
	return nil
}

// validateDHCP checks the dhcp section: the mode and listen address, then the options handed to
// the nodes, then the pool.
func (c *Config) validateDHCP() error {
	d := &c.DHCP
	if d.Mode == "" {
		d.Mode = dhcpd.ModeReservation
	}
	if d.Mode == "pool" {
		return fieldError("dhcp.mode", "%q is not %s (a pool is dhcp.pool: {range: FIRST-LAST, lease: 10m} in reservation mode)", d.Mode, dhcpd.ModesText())
	}
	if !slices.Contains(dhcpd.Modes(), d.Mode) {
		return fieldError("dhcp.mode", "%q is not %s", d.Mode, dhcpd.ModesText())
	}
	if d.Listen == "" {
		d.Listen = ":67"
	}
	switch d.IPv6RA {
	case "":
		d.IPv6RA = IPv6RAOff
		if d.Mode == dhcpd.ModeReservation {
			d.IPv6RA = IPv6RANoRouter
		}
	case IPv6RANoRouter, IPv6RAOff:
	default:
		return fieldError("dhcp.ipv6_ra", "%q is not no-router or off", d.IPv6RA)
	}
	if _, _, err := net.SplitHostPort(d.Listen); err != nil {
		return fieldError("dhcp.listen", "%q is not HOST:PORT", d.Listen)
	}
	if err := d.validateOptions(); err != nil {
		return err
	}
	if d.LeaseTime == 0 {
		d.LeaseTime = Duration(time.Hour)
	}
	if d.Workers < 0 {
		return fieldError("dhcp.workers", "must not be negative")
	}
	if d.Pool != nil {
		return c.validatePool()
	}
	return nil
}

// validateOptions checks the network options handed to the nodes: subnet (required in reservation
// mode), router and name servers.
func (d *DHCPConfig) validateOptions() error {
	if d.Subnet == "" && d.Mode == dhcpd.ModeReservation {
		return fieldError("dhcp.subnet", "missing: the nodes' subnet, e.g. 10.0.0.0/24 (needed in reservation mode)")
	}
	if d.Subnet != "" {
		p, err := netip.ParsePrefix(d.Subnet)
		if err != nil || !p.Addr().Is4() {
			return fieldError("dhcp.subnet", "%q is not an IPv4 prefix like 10.0.0.0/24", d.Subnet)
		}
	}
	if d.Router != "" {
		if a, err := netip.ParseAddr(d.Router); err != nil || !a.Is4() {
			return fieldError("dhcp.router", "%q is not an IPv4 address", d.Router)
		}
	}
	for i, s := range d.DNS {
		if a, err := netip.ParseAddr(s); err != nil || !a.Is4() {
			return fieldError(fmt.Sprintf("dhcp.dns[%d]", i), "%q is not an IPv4 address", s)
		}
	}
	return nil
}

// HTTP and health limits' defaults.
const (
	DefaultReadHeaderTimeout = Duration(10 * time.Second)
	DefaultReadTimeout       = Duration(30 * time.Second)
	DefaultWriteTimeout      = Duration(10 * time.Minute)
	DefaultIdleTimeout       = Duration(60 * time.Second)
	DefaultMaxRanges         = 16
	DefaultMaxConnsPerClient = 32
	DefaultMaxReportBytes    = 16 << 10
	DefaultHealthHistory     = 32
	// MaxReportBytesLimit bounds health.max_report_bytes: a record is saved at every report.
	MaxReportBytesLimit = 1 << 20
)

// Default names of the token files in the state directory.
const (
	NodeSecretFile    = "node.secret"
	OperatorTokenFile = "operator.token"
)

// validateLimits applies the defaults of the authentication files, the HTTP limits and the health
// limits, and checks them.
func (c *Config) validateLimits() error {
	h := &c.HTTP
	if h.NodeAuth == nil {
		on := true
		h.NodeAuth = &on
	}
	if h.NodeSecretFile == "" {
		h.NodeSecretFile = filepath.Join(c.StateDir, NodeSecretFile)
	}
	if h.OperatorTokenFile == "" {
		h.OperatorTokenFile = filepath.Join(c.StateDir, OperatorTokenFile)
	}
	for _, d := range []struct {
		field string
		v     *Duration
		def   Duration
	}{
		{"http.read_header_timeout", &h.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{"http.read_timeout", &h.ReadTimeout, DefaultReadTimeout},
		{"http.write_timeout", &h.WriteTimeout, DefaultWriteTimeout},
		{"http.idle_timeout", &h.IdleTimeout, DefaultIdleTimeout},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < Duration(time.Second) {
			return fieldError(d.field, "%v is less than 1s", time.Duration(*d.v))
		}
	}
	ints := []struct {
		field    string
		v        *int
		def, max int
	}{
		{"http.max_ranges", &h.MaxRanges, DefaultMaxRanges, 1024},
		{"http.max_conns_per_client", &h.MaxConnsPerClient, DefaultMaxConnsPerClient, 1 << 16},
		{"health.max_report_bytes", &c.Health.MaxReportBytes, DefaultMaxReportBytes, MaxReportBytesLimit},
		{"health.history", &c.Health.History, DefaultHealthHistory, 4096},
	}
	for _, n := range ints {
		if *n.v == 0 {
			*n.v = n.def
		}
		if *n.v < 1 || *n.v > n.max {
			return fieldError(n.field, "%d is not between 1 and %d", *n.v, n.max)
		}
	}
	return nil
}

// validatePool checks dhcp.pool against the rest of the configuration (the inventory's addresses
// are checked when the server loads it).
func (c *Config) validatePool() error {
	d, p := &c.DHCP, c.DHCP.Pool
	if d.Mode != dhcpd.ModeReservation {
		return fieldError("dhcp.pool", "needs dhcp.mode reservation (it is %s)", d.Mode)
	}
	first, last, err := parsePoolRange(p.Range, netip.MustParsePrefix(d.Subnet).Masked())
	if err != nil {
		return err
	}
	if err := c.checkPoolExcludes(first, last); err != nil {
		return err
	}
	if size := u32(last) - u32(first) + 1; size < uint64(len(c.Servers)) {
		return fieldError("dhcp.pool.range", "%d addresses for %d servers: the servers split the range, each needs at least one", size, len(c.Servers))
	}
	if p.Lease == 0 {
		p.Lease = d.LeaseTime
	}
	if p.Lease < MinPoolLease || p.Lease > MaxPoolLease {
		return fieldError("dhcp.pool.lease", "%v is not between 1m and 7d", time.Duration(p.Lease))
	}
	if p.UnknownMax < 0 {
		return fieldError("dhcp.pool.unknown_max", "%d is negative (0: no cap)", p.UnknownMax)
	}
	if p.UnknownMax > 0 && !p.Unknown {
		return fieldError("dhcp.pool.unknown_max", "needs dhcp.pool.unknown: true (it caps what MACs outside the inventory hold)")
	}
	return nil
}

// parsePoolRange parses dhcp.pool.range, FIRST-LAST, and checks that it lies in subnet and holds
// at most MaxPoolSize addresses.
func parsePoolRange(r string, subnet netip.Prefix) (first, last netip.Addr, err error) {
	const field = "dhcp.pool.range"
	if r == "" {
		return first, last, fieldError(field, "missing: the pool's addresses as FIRST-LAST, e.g. 10.0.0.100-10.0.0.199")
	}
	a, b, ok := strings.Cut(r, "-")
	first, err1 := netip.ParseAddr(strings.TrimSpace(a))
	last, err2 := netip.ParseAddr(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || !first.Is4() || !last.Is4() {
		return first, last, fieldError(field, "%q is not FIRST-LAST with two IPv4 addresses, e.g. 10.0.0.100-10.0.0.199", r)
	}
	if last.Less(first) {
		return first, last, fieldError(field, "%s-%s: the first address comes after the last", first, last)
	}
	for _, x := range []netip.Addr{first, last} {
		if !subnet.Contains(x) {
			return first, last, fieldError(field, "%s is outside dhcp.subnet %s", x, subnet)
		}
	}
	if size := u32(last) - u32(first) + 1; size > MaxPoolSize {
		return first, last, fieldError(field, "%d addresses: at most %d", size, MaxPoolSize)
	}
	return first, last, nil
}

// checkPoolExcludes checks that the pool first..last holds none of the addresses that are not
// free to hand out: the subnet's network and broadcast addresses, the servers', the router's
// and the name servers'.
func (c *Config) checkPoolExcludes(first, last netip.Addr) error {
	bad := func(format string, args ...any) error { return fieldError("dhcp.pool.range", format, args...) }
	in := func(x netip.Addr) bool { return !x.Less(first) && !last.Less(x) }
	d := &c.DHCP
	subnet := netip.MustParsePrefix(d.Subnet).Masked()
	if subnet.Bits() < 31 {
		if in(subnet.Addr()) {
			return bad("includes %s, the network address of dhcp.subnet %s", subnet.Addr(), subnet)
		}
		if bc := broadcast(subnet); in(bc) {
			return bad("includes %s, the broadcast address of dhcp.subnet %s", bc, subnet)
		}
	}
	for i, s := range c.Servers {
		if x, _ := netip.ParseAddr(s.Address); in(x) {
			return bad("includes %s, the address of servers[%d] (%s)", x, i, s.Name)
		}
	}
	if x, err := netip.ParseAddr(d.Router); err == nil && in(x) {
		return bad("includes %s, dhcp.router", x)
	}
	for i, s := range d.DNS {
		if x, _ := netip.ParseAddr(s); in(x) {
			return bad("includes %s, dhcp.dns[%d]", x, i)
		}
	}
	return nil
}

// PoolRange returns this server's part of dhcp.pool.range (the range split evenly among the
// servers, in server order). It needs a validated configuration with a pool.
func (c *Config) PoolRange() (first, last netip.Addr) {
	f, l := c.PoolBounds()
	lo, hi := u32(f), u32(l)
	n, k, id := hi-lo+1, uint64(len(c.Servers)), uint64(c.ServerID)
	return addr4(lo + n*id/k), addr4(lo + n*(id+1)/k - 1)
}

// UnknownMax returns this server's part of dhcp.pool.unknown_max (split as PoolRange splits the
// range; the whole of it in a fleet), or -1 when it is not set.
func (c *Config) UnknownMax(fleet bool) int {
	m := c.DHCP.Pool.UnknownMax
	if m <= 0 {
		return -1
	}
	if fleet {
		return m
	}
	k, id := len(c.Servers), c.ServerID
	return m*(id+1)/k - m*id/k
}

// poolBounds returns the whole dhcp.pool.range (every server's part). It needs a validated
// configuration with a pool.
func (c *Config) PoolBounds() (first, last netip.Addr) {
	a, b, _ := strings.Cut(c.DHCP.Pool.Range, "-")
	return netip.MustParseAddr(strings.TrimSpace(a)), netip.MustParseAddr(strings.TrimSpace(b))
}

// PoolSize is the number of IPv4 addresses from first to last, both included.
func PoolSize(first, last netip.Addr) int { return int(u32(last) - u32(first) + 1) }

// PoolAddr is the IPv4 address i places after first.
func PoolAddr(first netip.Addr, i int) netip.Addr { return addr4(u32(first) + uint64(i)) }

func u32(a netip.Addr) uint64 {
	b := a.As4()
	return uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
}

func addr4(u uint64) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
}

func broadcast(p netip.Prefix) netip.Addr {
	return addr4(u32(p.Addr()) | (1<<(32-p.Bits()) - 1))
}

// File returns the file the configuration came from ("" when built in code).
func (c *Config) File() string { return c.file }

// Line returns the line of field (a dotted path such as "dhcp.pool.range") in the configuration
// file, or 0 for a configuration built in code.
func (c *Config) Line(field string) int {
	if c.root == nil {
		return 0
	}
	return topology.FieldLine(c.root, field)
}

// ServerAddr returns this server's address.
func (c *Config) ServerAddr() netip.Addr {
	a, _ := netip.ParseAddr(c.Servers[c.ServerID].Address)
	return a
}

// yamlError turns an error of yamlerr.Decode, or of yaml.v3 (explained by yamlerr), into an Error
// with the file, line and field.
func yamlError(err error, file string) error {
	ye, ok := errors.AsType[*yamlerr.Error](err)
	if !ok {
		if ye, ok = errors.AsType[*yamlerr.Error](yamlerr.Explain(err, nil, nil)); !ok {
			return &Error{File: file, Msg: err.Error()}
		}
	}
	return &Error{File: file, Line: ye.Line, Field: ye.Field, Msg: ye.Msg}
}
