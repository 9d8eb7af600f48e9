package bootconfig

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
)

const minimalConfig = `
servers:
  - address: 10.0.0.1
  - {name: second, address: 10.0.0.2}
server_id: 1
topology: mini
inventory: inv.csv
images: img
state_dir: /var/state
dhcp:
  subnet: 10.0.0.0/24
`

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig([]byte(minimalConfig), "/etc/bf/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	flush := Duration(200 * time.Millisecond)
	on := true
	want := &Config{
		ServerID: 1,
		Servers:  []ServerEntry{{Name: "bs0", Address: "10.0.0.1"}, {Name: "second", Address: "10.0.0.2"}},
		Topology: "mini", Mapping: "bcda", Inventory: "/etc/bf/inv.csv", Images: "/etc/bf/img",
		Profile: "default", StateDir: "/var/state", StateFlush: &flush,
		HTTP: HTTPConfig{Listen: ":80", NodeAuth: &on, NodeSecretFile: "/var/state/node.secret", OperatorTokenFile: "/var/state/operator.token",
			ReadHeaderTimeout: DefaultReadHeaderTimeout, ReadTimeout: DefaultReadTimeout, WriteTimeout: DefaultWriteTimeout, IdleTimeout: DefaultIdleTimeout,
			MaxRanges: DefaultMaxRanges, MaxConnsPerClient: DefaultMaxConnsPerClient},
		TFTP:   TFTPConfig{Listen: ":69"},
		DHCP:   DHCPConfig{Mode: "reservation", Listen: ":67", IPv6RA: "no-router", Subnet: "10.0.0.0/24", LeaseTime: Duration(time.Hour)},
		Health: HealthConfig{MaxReportBytes: DefaultMaxReportBytes, History: DefaultHealthHistory},
	}
	if diff := cmp.Diff(want, c, cmp.AllowUnexported(Config{}), cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".root" || p.Last().String() == ".file"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if c.ServerAddr().String() != "10.0.0.2" {
		t.Errorf("ServerAddr = %v", c.ServerAddr())
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, edit, want string
	}{
		{"unknown field", "colour: red\n", `c.yaml:12: unknown field "colour" (fields here: server_id, servers,`},
		{"unknown nested field", "http:\n  listen: ':80'\n  port: 80\n", `c.yaml:14: http: unknown field "port" (fields here: listen, url, node_auth,`},
		{"bad yaml", "servers: [\n", "c.yaml:12: invalid YAML: did not find expected node content"},
		{"bad duration", "state_flush: soon\n", "c.yaml:12: state_flush: \"soon\" is not a duration like 200ms, 1h or 7d"},
		{"bad days", "state_flush: 2.5d\n", "c.yaml:12: state_flush: \"2.5d\" is not a duration like 200ms, 1h or 7d"},
		{"bad server address", "servers:\n  - address: 10.0.0.1\n  - address: ten\n", "c.yaml:14: servers[1].address: \"ten\" is not an IPv4 address"},
		{"duplicate server address", "servers:\n  - address: 10.0.0.1\n  - address: 10.0.0.1\n", "c.yaml:14: servers[1].address: 10.0.0.1 is also servers[0]'s address"},
		{"server id out of range", "server_id: 2\n", "c.yaml:12: server_id: 2 is not the index of one of the 2 servers"},
		{"failed server", "failed_servers: [0]\n", "c.yaml:12: failed_servers: lists this server"},
		{"balanced", "mapping: balanced\n", "c.yaml:12: mapping: balanced depends on the batch"},
		{"dhcp mode", "dhcp:\n  mode: sometimes\n", "c.yaml:13: dhcp.mode: \"sometimes\" is not reservation, proxy or off"},
		{"subnet needed", "dhcp:\n  mode: reservation\n", "c.yaml:12: dhcp.subnet: missing"},
		{"bad subnet", "dhcp:\n  subnet: 10.0.0.0\n", "c.yaml:13: dhcp.subnet: \"10.0.0.0\" is not an IPv4 prefix"},
		{"bad dns", "dhcp:\n  subnet: 10.0.0.0/24\n  dns: [1.1.1.1, x]\n", "c.yaml:14: dhcp.dns[1]: \"x\" is not an IPv4 address"},
		{"bad http listen", "http:\n  listen: 8080\n", "c.yaml:13: http.listen: \"8080\" is not HOST:PORT"},
		{"bad tftp blksize", "tftp:\n  max_block_size: 100\n", "c.yaml:13: tftp.max_block_size: 100 is not between 513 and 65464"},
		{"negative tftp per-client", "tftp:\n  max_transfers_per_client: -1\n", "c.yaml:13: tftp.max_transfers_per_client: must not be negative"},
		{"mode pool", "dhcp:\n  subnet: 10.0.0.0/24\n  mode: pool\n", "c.yaml:14: dhcp.mode: \"pool\" is not reservation, proxy or off (a pool is dhcp.pool: {range: FIRST-LAST, lease: 10m} in reservation mode)"},
		{"pool in proxy mode", "dhcp:\n  mode: proxy\n  pool: {range: 10.0.0.100-10.0.0.199}\n", "c.yaml:14: dhcp.pool: needs dhcp.mode reservation (it is proxy)"},
		{"pool without range", "dhcp:\n  subnet: 10.0.0.0/24\n  pool: {lease: 10m}\n", "c.yaml:14: dhcp.pool.range: missing: the pool's addresses as FIRST-LAST, e.g. 10.0.0.100-10.0.0.199"},
		{"pool range one address", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.100\n", "c.yaml:17: dhcp.pool.range: \"10.0.0.100\" is not FIRST-LAST with two IPv4 addresses, e.g. 10.0.0.100-10.0.0.199"},
		{"pool range IPv6", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.100-::1\n", "c.yaml:17: dhcp.pool.range: \"10.0.0.100-::1\" is not FIRST-LAST with two IPv4 addresses"},
		{"pool range reversed", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.199 - 10.0.0.100\n", "c.yaml:17: dhcp.pool.range: 10.0.0.199-10.0.0.100: the first address comes after the last"},
		{"pool range outside subnet", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.200-10.0.1.10\n", "c.yaml:17: dhcp.pool.range: 10.0.1.10 is outside dhcp.subnet 10.0.0.0/24"},
		{"pool range network address", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.0-10.0.0.10\n", "c.yaml:17: dhcp.pool.range: includes 10.0.0.0, the network address of dhcp.subnet 10.0.0.0/24"},
		{"pool range broadcast", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.200-10.0.0.255\n", "c.yaml:17: dhcp.pool.range: includes 10.0.0.255, the broadcast address of dhcp.subnet 10.0.0.0/24"},
		{"pool range server", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.2-10.0.0.10\n", "c.yaml:17: dhcp.pool.range: includes 10.0.0.2, the address of servers[1] (bs1)"},
		{"pool range router", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.200-10.0.0.254\n", "c.yaml:17: dhcp.pool.range: includes 10.0.0.254, dhcp.router"},
		{"pool range dns", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.200-10.0.0.253\n", "c.yaml:17: dhcp.pool.range: includes 10.0.0.253, dhcp.dns[0]"},
		{"pool range too large", "dhcp:\n  subnet: 10.0.0.0/8\n  pool:\n    range: 10.1.0.0-10.2.255.255\n", "c.yaml:15: dhcp.pool.range: 131072 addresses: at most 65536"},
		{"pool range smaller than servers", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.100-10.0.0.100\n", "c.yaml:17: dhcp.pool.range: 1 addresses for 2 servers: the servers split the range, each needs at least one"},
		{"pool lease too short", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.100-10.0.0.199\n    lease: 30s\n", "c.yaml:18: dhcp.pool.lease: 30s is not between 1m and 7d"},
		{"pool lease too long", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.100-10.0.0.199\n    lease: 8d\n", "c.yaml:18: dhcp.pool.lease: 192h0m0s is not between 1m and 7d"},
		{"pool lease default too long", "dhcp:\n  subnet: 10.0.0.0/24\n  lease_time: 30d\n  pool: {range: 10.0.0.100-10.0.0.199}\n", "c.yaml:15: dhcp.pool.lease: 720h0m0s is not between 1m and 7d"},
		{"pool lease not a duration", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.100-10.0.0.199\n    lease: 1w\n", "c.yaml:18: dhcp.pool.lease: \"1w\" is not a duration like 200ms, 1h or 7d"},
		{"pool unknown field", "dhcp:\n  subnet: 10.0.0.0/24\n  router: 10.0.0.254\n  dns: [10.0.0.253]\n  pool:\n    range: 10.0.0.100-10.0.0.199\n    size: 100\n", `c.yaml:18: dhcp.pool: unknown field "size" (fields here: range, lease, unknown, unknown_max)`},
	}
	base := `servers:
  - address: 10.0.0.1
  - address: 10.0.0.2
topology: mini
inventory: inv.csv
images: img
state_dir: st
dhcp:
  subnet: 10.0.0.0/24
`
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The edit replaces keys of the base by appending after dropping them.
			data := dropKeys(base, tc.edit) + "\n\n\n" + tc.edit
			c, err := ParseConfig([]byte(data), "c.yaml")
			if err == nil {
				err = c.Validate()
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("config:\n%s\n got  %v\n want %s...", data, err, tc.want)
			}
			var e *Error
			if err != nil && !errors.As(err, &e) {
				t.Errorf("error %T is not *Error", err)
			}
		})
	}
}

// dropKeys removes from base the top-level keys that edit sets (with their indented lines).
func dropKeys(base, edit string) string {
	keys := map[string]bool{}
	for _, l := range strings.Split(edit, "\n") {
		if k, _, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, " ") {
			keys[k] = true
		}
	}
	var out []string
	skip := false
	for _, l := range strings.Split(strings.TrimSuffix(base, "\n"), "\n") {
		if !strings.HasPrefix(l, " ") {
			k, _, _ := strings.Cut(l, ":")
			skip = keys[k]
		}
		if !skip {
			out = append(out, l)
		}
	}
	// Pad so that the edit starts on line 12 whatever was dropped.
	for len(out) < 9 {
		out = append(out, "")
	}
	return strings.Join(out, "\n")
}

// TestConfigPool: a pool's defaults, and the range split among the servers.
func TestConfigPool(t *testing.T) {
	tests := []struct {
		name, dhcp string
		servers    int
		want       PoolConfig
		ranges     []string // every server's part
	}{
		{"defaults", "  lease_time: 2h\n  pool: {range: 10.0.0.100-10.0.0.199}\n", 1,
			PoolConfig{Range: "10.0.0.100-10.0.0.199", Lease: Duration(2 * time.Hour)}, []string{"10.0.0.100-10.0.0.199"}},
		{"two servers", "  pool:\n    range: 10.0.0.100 - 10.0.0.199\n    lease: 10m\n    unknown: true\n", 2,
			PoolConfig{Range: "10.0.0.100 - 10.0.0.199", Lease: Duration(10 * time.Minute), Unknown: true},
			[]string{"10.0.0.100-10.0.0.149", "10.0.0.150-10.0.0.199"}},
		{"three servers, uneven", "  pool: {range: 10.0.0.100-10.0.0.199, lease: 7d}\n", 3,
			PoolConfig{Range: "10.0.0.100-10.0.0.199", Lease: Duration(7 * 24 * time.Hour)},
			[]string{"10.0.0.100-10.0.0.132", "10.0.0.133-10.0.0.165", "10.0.0.166-10.0.0.199"}},
		{"one address each", "  pool: {range: 10.0.0.100-10.0.0.102, lease: 1m}\n", 3,
			PoolConfig{Range: "10.0.0.100-10.0.0.102", Lease: Duration(time.Minute)},
			[]string{"10.0.0.100-10.0.0.100", "10.0.0.101-10.0.0.101", "10.0.0.102-10.0.0.102"}},
		{"a whole /16", "  pool: {range: 10.2.0.0-10.2.255.255}\n", 2,
			PoolConfig{Range: "10.2.0.0-10.2.255.255", Lease: Duration(time.Hour)},
			[]string{"10.2.0.0-10.2.127.255", "10.2.128.0-10.2.255.255"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for id := 0; id < tc.servers; id++ {
				var b strings.Builder
				fmt.Fprintf(&b, "server_id: %d\nservers:\n", id)
				for i := 0; i < tc.servers; i++ {
					fmt.Fprintf(&b, "  - address: 10.1.0.%d\n", i+1)
				}
				subnet := "10.0.0.0/24"
				if strings.Contains(tc.dhcp, "255.255") {
					subnet = "10.0.0.0/8"
				}
				fmt.Fprintf(&b, "topology: mini\ninventory: i.csv\nimages: img\nstate_dir: st\ndhcp:\n  subnet: %s\n%s", subnet, tc.dhcp)
				c, err := ParseConfig([]byte(b.String()), "c.yaml")
				if err == nil {
					err = c.Validate()
				}
				if err != nil {
					t.Fatalf("%s\n%v", b.String(), err)
				}
				if diff := cmp.Diff(&tc.want, c.DHCP.Pool); diff != "" {
					t.Errorf("pool (-want +got):\n%s", diff)
				}
				first, last := c.PoolRange()
				got = append(got, first.String()+"-"+last.String())
			}
			if diff := cmp.Diff(tc.ranges, got); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateMissing(t *testing.T) {
	c := &Config{Servers: []ServerEntry{{Address: "10.0.0.1"}}, Topology: "mini", Inventory: "i", Images: "m"}
	err := c.Validate()
	if err == nil || err.Error() != "state_dir: missing: the directory for boot states" {
		t.Errorf("Validate = %v", err)
	}
}

func TestExampleConfig(t *testing.T) {
	p := filepath.Join("..", "examples", "serve", "bootsrv.yaml")
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	inv, err := LoadInventory(c.Inventory, testfix.MiniHierarchy(t))
	if err != nil {
		t.Fatal(err)
	}
	a, err := AssignServers(testfix.MiniHierarchy(t), c.Mapping, len(c.Servers), c.FailedServers, nil)
	if err != nil {
		t.Fatal(err)
	}
	for id := range c.Servers {
		au, err := NewAuthority(inv, a, id)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(au.Owned()); n != 4 {
			t.Errorf("server %d owns %d nodes, want 4", id, n)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(minimalConfig))
	f.Add([]byte("servers: [{address: 10.0.0.1}]\nhttp: {listen: ':1'}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data, "f.yaml")
		if err != nil {
			return
		}
		_ = c.Validate()
	})
}

// withLimitDefaults sets the defaults Validate gives the authentication files and the HTTP and
// health limits.
func withLimitDefaults(c *Config) {
	on := true
	h := &c.HTTP
	h.NodeAuth, h.NodeSecretFile, h.OperatorTokenFile = &on, filepath.Join(c.StateDir, NodeSecretFile), filepath.Join(c.StateDir, OperatorTokenFile)
	h.ReadHeaderTimeout, h.ReadTimeout, h.WriteTimeout, h.IdleTimeout = DefaultReadHeaderTimeout, DefaultReadTimeout, DefaultWriteTimeout, DefaultIdleTimeout
	h.MaxRanges, h.MaxConnsPerClient = DefaultMaxRanges, DefaultMaxConnsPerClient
	c.Health = HealthConfig{MaxReportBytes: DefaultMaxReportBytes, History: DefaultHealthHistory}
}
