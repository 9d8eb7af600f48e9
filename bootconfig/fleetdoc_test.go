package bootconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gopkg.in/yaml.v3"
)

// fleetFixture is a fleet file in a temporary directory: two servers, the mini machine as a
// description file (so that its text is embedded), eight nodes on boards s0-b0 (bs0's) and s0-b1
// (bs1's), and a store with the profiles default and rescue.
type fleetFixture struct {
	dir, fleet, topo, inv string
}

const fleetYAML = `# a fleet of two
servers:
  - {name: bs0, address: 10.0.0.1}
  - {name: bs1, address: 10.0.0.2}
topology: machine.yaml
mapping: bcda
inventory: inventory.csv
images: images
profile: default
state_flush: 100ms
tftp:
  max_block_size: 1468
dhcp:
  subnet: 10.0.0.0/24
  router: 10.0.0.254
  dns: [10.0.0.254]
`

func fleetInventory(n int) string {
	var sb strings.Builder
	sb.WriteString("name,mac,ip,node,profile\n")
	for i := 0; i < n; i++ {
		profile := ""
		if i == 3 {
			profile = "rescue"
		}
		fmt.Fprintf(&sb, "n%d,52:54:00:00:01:%02x,10.0.0.%d,s0-b%d-n%d,%s\n", i, i, 10+i, i/4, i%4, profile)
	}
	return sb.String()
}

func newFleetFixture(t testing.TB) *fleetFixture {
	t.Helper()
	dir := t.TempDir()
	f := &fleetFixture{dir: dir, fleet: filepath.Join(dir, "fleet.yaml"), topo: filepath.Join(dir, "machine.yaml"), inv: filepath.Join(dir, "inventory.csv")}
	m, _ := topology.Preset("mini")
	topo, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	testfix.WriteFile(t, f.topo, topo)
	testfix.WriteFile(t, f.inv, []byte(fleetInventory(8)))
	testfix.WriteFile(t, f.fleet, []byte(fleetYAML))
	st, err := images.Create(filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"default", "rescue"} {
		k := testfix.WriteFile(t, filepath.Join(dir, "src", name, "vmlinuz"), []byte("kernel of "+name))
		i := testfix.WriteFile(t, filepath.Join(dir, "src", name, "initrd.img"), []byte("initrd of "+name))
		if _, err := st.Add(images.Profile{Name: name, Kernel: "vmlinuz", Initrd: "initrd.img"}, map[string]string{"vmlinuz": k, "initrd.img": i}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// lineOf returns the 1-based line of the first line of text containing sub.
// roundTrip encodes doc as fleet apply stores it and decodes it as a server reads it.
func roundTrip(t testing.TB, doc *FleetDoc) *FleetDoc {
	t.Helper()
	enc, err := doc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeFleetDoc(enc)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func lineOf(t testing.TB, text, sub string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			return i + 1
		}
	}
	t.Fatalf("%q not in the text", sub)
	return 0
}

func TestLoadFleetFile(t *testing.T) {
	f := newFleetFixture(t)
	doc, err := LoadFleetFile(f.fleet)
	if err != nil {
		t.Fatal(err)
	}
	st, err := images.Open(filepath.Join(f.dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	topo, _ := os.ReadFile(f.topo)
	want := &FleetDoc{
		Version:   FleetDocVersion,
		Servers:   []FleetServer{{"bs0", "10.0.0.1"}, {"bs1", "10.0.0.2"}},
		Topology:  FleetFile{Name: "machine.yaml", Text: string(topo)},
		Mapping:   "bcda",
		Inventory: FleetFile{Name: "inventory.csv", Text: fleetInventory(8)},
		Profile:   "default", StateFlush: "100ms",
		TFTP:     FleetTFTP{MaxBlockSize: 1468},
		DHCP:     FleetDHCP{Mode: "reservation", Subnet: "10.0.0.0/24", Router: "10.0.0.254", DNS: []string{"10.0.0.254"}, LeaseTime: "1h0m0s"},
		Profiles: st.List(),
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("doc (-want +got):\n%s", diff)
	}
	if len(doc.Profiles) != 2 || doc.Profiles[1].Files["vmlinuz"].Size != int64(len("kernel of rescue")) {
		t.Errorf("profiles = %+v", doc.Profiles)
	}
	back := roundTrip(t, doc)
	if diff := cmp.Diff(doc, back); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
	// Loading the same files again gives the same bytes: applying twice stores one revision.
	again, err := LoadFleetFile(f.fleet)
	if err != nil {
		t.Fatal(err)
	}
	if again.Hash() != doc.Hash() {
		t.Errorf("hash %s, then %s", doc.Hash(), again.Hash())
	}
}

func TestLoadFleetFileErrors(t *testing.T) {
	tests := []struct {
		name string
		// edit changes the fixture's files: fleet, topology, inventory text.
		edit func(fleet, topo, inv *string)
		// want is the error, %F the fleet file, %T the topology file, %I the inventory file,
		// %L the line computed by line.
		want string
		line func(fleet, topo, inv string) int
	}{
		{"server_id", func(fl, _, _ *string) { *fl += "server_id: 1\n" }, "%F:%L: server_id: per-server setting; give it to bootctl serve",
			func(fl, _, _ string) int { return lineOf(t, fl, "server_id") }},
		{"state_dir", func(fl, _, _ *string) { *fl = "state_dir: /var/x\n" + *fl }, "%F:1: state_dir: per-server setting; give it to bootctl serve", nil},
		{"http.listen", func(fl, _, _ *string) { *fl += "http:\n  listen: ':80'\n" }, "%F:%L: http.listen: per-server setting",
			func(fl, _, _ string) int { return lineOf(t, fl, "listen") }},
		{"http.url", func(fl, _, _ *string) { *fl += "http: {url: 'http://x'}\n" }, "%F:%L: http.url: per-server setting",
			func(fl, _, _ string) int { return lineOf(t, fl, "url:") }},
		{"tftp.listen", func(fl, _, _ *string) { *fl = strings.Replace(*fl, "tftp:\n", "tftp:\n  listen: off\n", 1) }, "%F:%L: tftp.listen: per-server setting",
			func(fl, _, _ string) int { return lineOf(t, fl, "listen: off") }},
		{"dhcp.interfaces", func(fl, _, _ *string) { *fl += "  interfaces: [eth1]\n" }, "%F:%L: dhcp.interfaces: per-server setting",
			func(fl, _, _ string) int { return lineOf(t, fl, "interfaces") }},
		{"dhcp.listen first by line", func(fl, _, _ *string) { *fl += "  listen: ':67'\nipxe_dir: /x\n" }, "%F:%L: dhcp.listen: per-server setting",
			func(fl, _, _ string) int { return lineOf(t, fl, "':67'") }},
		{"ipxe_dir", func(fl, _, _ *string) { *fl += "ipxe_dir: /x\n" }, "%F:%L: ipxe_dir: per-server setting",
			func(fl, _, _ string) int { return lineOf(t, fl, "ipxe_dir") }},
		{"tftp.root", func(fl, _, _ *string) { *fl = strings.Replace(*fl, "tftp:\n", "tftp:\n  root: /srv/tftp\n", 1) }, "%F:%L: tftp.root: per-server setting",
			func(fl, _, _ string) int { return lineOf(t, fl, "root: /srv/tftp") }},
		{"unknown field", func(fl, _, _ *string) { *fl += "colour: red\n" }, `%F:%L: unknown field "colour"`,
			func(fl, _, _ string) int { return lineOf(t, fl, "colour") }},
		{"bad address", func(fl, _, _ *string) { *fl = strings.Replace(*fl, "10.0.0.2}", "10.0.0.x}", 1) }, "%F:4: servers[1].address: \"10.0.0.x\" is not an IPv4 address", nil},
		{"duplicate server name", func(fl, _, _ *string) { *fl = strings.Replace(*fl, "name: bs1", "name: bs0", 1) }, "%F:4: servers[1].name: \"bs0\" is also servers[0]'s name", nil},
		{"server name with a slash", func(fl, _, _ *string) { *fl = strings.Replace(*fl, "name: bs1", "name: a/b", 1) }, "%F:4: servers[1].name: \"a/b\": a fleet member's name holds no '/'", nil},
		{"every server failed", func(fl, _, _ *string) { *fl += "failed_servers: [0, 1]\n" }, "%F:%L: failed_servers: lists every server",
			func(fl, _, _ string) int { return lineOf(t, fl, "failed_servers") }},
		{"bad mapping", func(fl, _, _ *string) { *fl = strings.Replace(*fl, "bcda", "cyclic:rack", 1) }, "%F:6: mapping: ",
			nil},
		{"balanced mapping", func(fl, _, _ *string) { *fl = strings.Replace(*fl, "bcda", "balanced", 1) }, "%F:6: mapping: balanced depends on the batch", nil},
		{"missing images", func(fl, _, _ *string) { *fl = strings.Replace(*fl, "images: images", "images: nowhere", 1) }, "%F:8: images: no image store", nil},
		{"missing profile", func(fl, _, _ *string) { *fl = strings.Replace(*fl, "profile: default", "profile: gone", 1) }, "%F:9: profile: \"gone\" is not in the image store", nil},
		{"bad topology", func(_, topo, _ *string) {
			*topo = strings.Replace(*topo, "capacity_mbps: ", "capacity_mbps: -", 1)
		}, "%T:%L: levels[0].uplink.capacity_mbps: must be a positive number", func(_, topo, _ string) int { return lineOf(t, topo, "capacity_mbps: -") }},
		{"topology yaml", func(_, topo, _ *string) { *topo = "levels: [\n" }, "%T:1: invalid YAML", nil},
		{"missing topology", func(fl, _, _ *string) { *fl = strings.Replace(*fl, "machine.yaml", "gone.yaml", 1) }, "%F:5: topology: open ", nil},
		{"bad inventory mac", func(_, _, inv *string) { *inv = strings.Replace(*inv, "52:54:00:00:01:05", "52:54:00:00:01", 1) }, "%I:7: mac: ", nil},
		{"inventory position", func(_, _, inv *string) { *inv += "x,52:54:00:00:02:00,10.0.0.99,s9-b0-n0,\n" }, "%I:10: node: ", nil},
		{"inventory ip outside subnet", func(_, _, inv *string) { *inv = strings.Replace(*inv, "10.0.0.15,", "10.1.0.15,", 1) }, "%I:7: ip: 10.1.0.15 of node n5 is outside dhcp.subnet", nil},
		{"inventory without ip", func(_, _, inv *string) { *inv = strings.Replace(*inv, "10.0.0.12,", ",", 1) }, "%I:4: ip: node n2 has no address", nil},
		{"inventory profile", func(_, _, inv *string) { *inv = strings.Replace(*inv, "rescue", "gone", 1) }, "%I:5: profile: node n3: profile \"gone\" is not in the image store", nil},
		{"pool overlaps inventory", func(fl, _, _ *string) { *fl += "  pool: {range: 10.0.0.12-10.0.0.40}\n" }, "%I:4: ip: 10.0.0.12 of node n2 is inside dhcp.pool.range", nil},
		{"pool bad range", func(fl, _, _ *string) { *fl += "  pool:\n    range: 10.0.0.100-10.0.1.5\n" }, "%F:%L: dhcp.pool.range: 10.0.1.5 is outside dhcp.subnet",
			func(fl, _, _ string) int { return lineOf(t, fl, "range:") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleetFixture(t)
			read := func(p string) string {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			fl, topo, inv := read(f.fleet), read(f.topo), read(f.inv)
			tt.edit(&fl, &topo, &inv)
			testfix.WriteFile(t, f.fleet, []byte(fl))
			testfix.WriteFile(t, f.topo, []byte(topo))
			testfix.WriteFile(t, f.inv, []byte(inv))
			want := strings.NewReplacer("%F", f.fleet, "%T", f.topo, "%I", f.inv).Replace(tt.want)
			if tt.line != nil {
				want = strings.ReplaceAll(want, "%L", fmt.Sprint(tt.line(fl, topo, inv)))
			}
			doc, err := LoadFleetFile(f.fleet)
			if err == nil {
				t.Fatalf("no error; doc %+v", doc)
			}
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error\n  %v\nwant it to start with\n  %s", err, want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestFleetDocPoolAndPresetRoundTrip(t *testing.T) {
	f := newFleetFixture(t)
	fl := strings.Replace(fleetYAML, "machine.yaml", "mini", 1) + "  pool: {range: 10.0.0.100-10.0.0.199, lease: 10m, unknown: true, unknown_max: 7}\nfailed_servers: [0]\n"
	testfix.WriteFile(t, f.fleet, []byte(fl))
	doc, err := LoadFleetFile(f.fleet)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(FleetFile{Preset: "mini"}, doc.Topology); diff != "" {
		t.Errorf("topology (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&FleetPool{Range: "10.0.0.100-10.0.0.199", Lease: "10m0s", Unknown: true, UnknownMax: 7}, doc.DHCP.Pool); diff != "" {
		t.Errorf("pool (-want +got):\n%s", diff)
	}
	back := roundTrip(t, doc)
	if diff := cmp.Diff(doc, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if back.Hash() != doc.Hash() || len(doc.Hash()) != 64 {
		t.Errorf("hash %s after the round trip, %s before", back.Hash(), doc.Hash())
	}
	// A failed server has no configuration; the other has the pool's lease.
	if _, err := doc.Materialize(t.TempDir(), "bs0", LocalSettings{StateDir: "s", Images: "i"}); err == nil || !strings.Contains(err.Error(), "failed_servers: lists this server") {
		t.Errorf("materialize a failed server: %v", err)
	}
	c, err := doc.Materialize(t.TempDir(), "bs1", LocalSettings{StateDir: "s", Images: "i"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Topology != "mini" || c.DHCP.Pool == nil || c.DHCP.Pool.Lease != Duration(10*time.Minute) || !c.DHCP.Pool.Unknown ||
		c.DHCP.Pool.UnknownMax != 7 || c.UnknownMax(true) != 7 {
		t.Errorf("config %+v pool %+v", c, c.DHCP.Pool)
	}
}

func TestDecodeFleetDocRefuses(t *testing.T) {
	f := newFleetFixture(t)
	doc, err := LoadFleetFile(f.fleet)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := doc.Encode()
	tests := []struct{ name, from, to, want string }{
		{"version", `"version":1`, `"version":2`, "version 2, this bootctl reads 1"},
		{"unknown field", `"version":1`, `"version":1,"colour":"red"`, `unknown field "colour"`},
		{"path in a name", `"name":"inventory.csv"`, `"name":"../../etc/passwd"`, `inventory: file name "../../etc/passwd"`},
		{"duplicate server", `"name":"bs1"`, `"name":"bs0"`, `servers[1].name: "bs0" is also servers[0]'s name`},
		{"no servers", `"servers":[{"name":"bs0","address":"10.0.0.1"},{"name":"bs1","address":"10.0.0.2"}]`, `"servers":[]`, "fleet configuration: no servers"},
		{"unknown preset", `"topology":{"name":"machine.yaml"`, `"topology":{"preset":"huge","name":"machine.yaml"`, `"huge" is not a preset`},
		{"not JSON", `{`, `[`, "fleet configuration: invalid character"},
		{"trailing data", "", `{}`, "more than one JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := string(enc) + tt.to // from "": appended
			if tt.from != "" {
				bad = strings.Replace(string(enc), tt.from, tt.to, 1)
			}
			if bad == string(enc) {
				t.Fatalf("%q not in the document", tt.from)
			}
			_, err := DecodeFleetDoc([]byte(bad))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFleetDocMaterialize(t *testing.T) {
	f := newFleetFixture(t)
	doc, err := LoadFleetFile(f.fleet)
	if err != nil {
		t.Fatal(err)
	}
	flush := Duration(100 * time.Millisecond)
	tests := []struct {
		server string
		local  LocalSettings
		want   func(dir string) *Config
	}{
		{"bs0", LocalSettings{StateDir: "/var/state", Images: "/var/images"}, func(dir string) *Config {
			return &Config{ServerID: 0, Images: "/var/images", StateDir: "/var/state", IPXEDir: "",
				HTTP: HTTPConfig{Listen: ":80"}, TFTP: TFTPConfig{Listen: ":69", MaxBlockSize: 1468},
				DHCP: DHCPConfig{Listen: ":67", IPv6RA: "no-router"}}
		}},
		{"bs1", LocalSettings{StateDir: "st", Images: "im", IPXEDir: "/ipxe", HTTPListen: "127.0.0.1:8080", URL: "http://bs1.test:8080/",
			TFTPListen: "off", TFTPRoot: "/srv/tftp", DHCPListen: "10.0.0.2:67", Interfaces: []string{"eth1"}, OperatorTokenFile: "/etc/op.token"}, func(dir string) *Config {
			return &Config{ServerID: 1, Images: "im", StateDir: "st", IPXEDir: "/ipxe",
				HTTP: HTTPConfig{Listen: "127.0.0.1:8080", URL: "http://bs1.test:8080", OperatorTokenFile: "/etc/op.token"}, TFTP: TFTPConfig{Listen: "off", Root: "/srv/tftp", MaxBlockSize: 1468},
				DHCP: DHCPConfig{Listen: "10.0.0.2:67", IPv6RA: "no-router", Interfaces: []string{"eth1"}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.server, func(t *testing.T) {
			dir := t.TempDir()
			got, err := doc.Materialize(dir, tt.server, tt.local)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want(dir)
			withLimitDefaults(want)
			if tt.local.OperatorTokenFile != "" { // the server's own, not state_dir's default
				want.HTTP.OperatorTokenFile = tt.local.OperatorTokenFile
			}
			want.Servers = []ServerEntry{{"bs0", "10.0.0.1"}, {"bs1", "10.0.0.2"}}
			want.Topology = filepath.Join(dir, "topology", "machine.yaml")
			want.Inventory = filepath.Join(dir, "inventory", "inventory.csv")
			want.Mapping, want.Profile, want.StateFlush = "bcda", "default", &flush
			want.DHCP.Mode, want.DHCP.Subnet, want.DHCP.Router, want.DHCP.DNS = "reservation", "10.0.0.0/24", "10.0.0.254", []string{"10.0.0.254"}
			want.DHCP.LeaseTime = Duration(time.Hour)
			if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Config{})); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if got.File() != filepath.Join(dir, "fleet.json") {
				t.Errorf("File() = %s", got.File())
			}
			// What was written is the embedded text, and a server loads it.
			for path, text := range map[string]string{want.Topology: doc.Topology.Text, want.Inventory: doc.Inventory.Text} {
				if b, err := os.ReadFile(path); err != nil || string(b) != text {
					t.Errorf("%s: %v, contents equal: %v", path, err, string(b) == text)
				}
			}
			m, err := topology.Load(got.Topology)
			if err != nil {
				t.Fatal(err)
			}
			g, err := m.Build()
			if err != nil {
				t.Fatal(err)
			}
			inv, err := LoadInventory(got.Inventory, g.Hierarchy())
			if err != nil {
				t.Fatal(err)
			}
			a, err := AssignServers(g.Hierarchy(), got.Mapping, len(got.Servers), got.FailedServers, nil)
			if err != nil {
				t.Fatal(err)
			}
			au, err := NewAuthority(inv, a, got.ServerID)
			if err != nil {
				t.Fatal(err)
			}
			var owned []string
			for _, n := range au.Owned() {
				owned = append(owned, n.Position)
			}
			board := fmt.Sprintf("s0-b%d-", got.ServerID)
			for _, p := range owned {
				if !strings.HasPrefix(p, board) {
					t.Errorf("%s owns %s, want only board %s*", tt.server, p, board)
				}
			}
			if len(owned) != 4 {
				t.Errorf("%s owns %v, want 4 nodes", tt.server, owned)
			}
		})
	}
	t.Run("unknown server", func(t *testing.T) {
		_, err := doc.Materialize(t.TempDir(), "bs7", LocalSettings{StateDir: "s", Images: "i"})
		if err == nil || err.Error() != `server "bs7" is not in the fleet's servers (bs0, bs1)` {
			t.Errorf("error %v", err)
		}
	})
	t.Run("required local settings", func(t *testing.T) {
		_, err := doc.Materialize(t.TempDir(), "bs0", LocalSettings{Images: "i"})
		if err == nil || !strings.Contains(err.Error(), "state_dir: missing") {
			t.Errorf("error %v", err)
		}
	})
}

func TestFleetDocOwnership(t *testing.T) {
	f := newFleetFixture(t)
	doc, err := LoadFleetFile(f.fleet)
	if err != nil {
		t.Fatal(err)
	}
	m, err := doc.Machine()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Inventory.Nodes) != 8 {
		t.Fatalf("%d nodes", len(m.Inventory.Nodes))
	}
	tests := []struct {
		live []string
		want FleetOwnership
	}{
		{[]string{"bs0", "bs1"}, FleetOwnership{Nodes: []int{4, 4}}},
		{[]string{"bs1"}, FleetOwnership{Nodes: []int{0, 8}, Dead: []int{0}}},
		{[]string{"bs0", "bs9"}, FleetOwnership{Nodes: []int{8, 0}, Dead: []int{1}}},
		{nil, FleetOwnership{Nodes: []int{0, 0}, Dead: []int{0, 1}, Unowned: 8}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.live, ","), func(t *testing.T) {
			got, err := doc.Ownership(m, tt.live)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ownership (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFleetTFTPPerClientLimit: tftp.max_transfers_per_client travels from the fleet file through
// etcd's document to every server's configuration (it was dropped on the way).
func TestFleetTFTPPerClientLimit(t *testing.T) {
	f := newFleetFixture(t)
	text := strings.Replace(fleetYAML, "tftp:\n", "tftp:\n  max_transfers_per_client: 3\n", 1)
	testfix.WriteFile(t, f.fleet, []byte(text))
	doc, err := LoadFleetFile(f.fleet)
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.TFTP.MaxTransfersPerClient; got != 3 {
		t.Fatalf("document: max_transfers_per_client = %d, want 3", got)
	}
	cfg, err := doc.Materialize(t.TempDir(), "bs0", LocalSettings{StateDir: t.TempDir(), Images: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.TFTP.MaxTransfersPerClient; got != 3 {
		t.Fatalf("materialized: max_transfers_per_client = %d, want 3", got)
	}
}
