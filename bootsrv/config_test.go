package bootsrv

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	want := &Config{
		ServerID: 1,
		Servers:  []ServerEntry{{Name: "bs0", Address: "10.0.0.1"}, {Name: "second", Address: "10.0.0.2"}},
		Topology: "mini", Mapping: "bcda", Inventory: "/etc/bf/inv.csv", Images: "/etc/bf/img",
		Profile: "default", StateDir: "/var/state", StateFlush: &flush,
		HTTP: HTTPConfig{Listen: ":80"},
		TFTP: TFTPConfig{Listen: ":69"},
		DHCP: DHCPConfig{Mode: "reservation", Listen: ":67", Subnet: "10.0.0.0/24", LeaseTime: Duration(time.Hour)},
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
		{"unknown field", "colour: red\n", "c.yaml:12: unknown field colour"},
		{"unknown nested field", "http:\n  listen: ':80'\n  port: 80\n", "c.yaml:14: unknown field port"},
		{"bad yaml", "servers: [\n", "c.yaml:12: did not find expected node content"},
		{"bad duration", "state_flush: soon\n", "c.yaml:12: \"soon\" is not a duration"},
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
	inv, err := LoadInventory(c.Inventory, miniHierarchy(t))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Assignment(miniHierarchy(t), c.Mapping, len(c.Servers), c.FailedServers, nil)
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
