package bootconfig

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
)

func TestParseInventoryCSV(t *testing.T) {
	h := testfix.MiniHierarchy(t)
	data := "# inventory\nname, mac, ip, position, profile\n" +
		"n1,52:54:00:AA:00:01,10.0.0.11,s0-b0-n1,\n" +
		"s1-b3-n3,52-54-00-aa-00-02,,,rescue\n"
	inv, err := ParseInventoryCSV([]byte(data), "inv.csv", h)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name, MAC, IP, Pos, Profile string
		Index, Line                 int
	}
	var got []row
	for _, n := range inv.Nodes {
		ip := ""
		if n.IP.IsValid() {
			ip = n.IP.String()
		}
		got = append(got, row{n.Name, n.MAC.String(), ip, n.Position, n.Profile, n.Index, n.Line})
	}
	want := []row{
		{"n1", "52:54:00:aa:00:01", "10.0.0.11", "s0-b0-n1", "", 1, 3},
		{"s1-b3-n3", "52:54:00:aa:00:02", "", "s1-b3-n3", "rescue", 31, 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	n, ok := inv.ByIP(netip.MustParseAddr("10.0.0.11"))
	if !ok || n.Name != "n1" {
		t.Errorf("ByIP = %v, %v", n, ok)
	}
}

func TestParseInventoryYAML(t *testing.T) {
	h := testfix.MiniHierarchy(t)
	for _, data := range []string{
		"- {name: a, mac: '52:54:00:00:00:01', ip: 10.0.0.2, node: s0-b0-n0}\n- name: b\n  mac: 52:54:00:00:00:02\n  position: s0-b0-n1\n",
		"nodes:\n  - {name: a, mac: '52:54:00:00:00:01', ip: 10.0.0.2, node: s0-b0-n0}\n  - name: b\n    mac: 52:54:00:00:00:02\n    position: s0-b0-n1\n",
	} {
		inv, err := ParseInventoryYAML([]byte(data), "inv.yaml", h)
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		if len(inv.Nodes) != 2 || inv.Nodes[1].Index != 1 || inv.Nodes[0].IP.String() != "10.0.0.2" {
			t.Errorf("%q: got %+v", data, inv.Nodes)
		}
	}
}

// TestInventoryBMC: the BMC columns, in CSV and YAML; a node without them has no BMC.
func TestInventoryBMC(t *testing.T) {
	h := testfix.MiniHierarchy(t)
	csvInv, err := ParseInventoryCSV([]byte("name,mac,bmc,bmc_driver,bmc_creds\ns0-b0-n0,52:54:00:00:00:01,10.1.0.1,,rack1\ns0-b0-n1,52:54:00:00:00:02,10.1.0.2:6230,exec,\ns0-b0-n2,52:54:00:00:00:03,,,\n"), "i.csv", h)
	if err != nil {
		t.Fatal(err)
	}
	yamlInv, err := ParseInventoryYAML([]byte("- {name: s0-b0-n0, mac: '52:54:00:00:00:01', bmc: 10.1.0.1, bmc_creds: rack1}\n- {name: s0-b0-n1, mac: '52:54:00:00:00:02', bmc: '10.1.0.2:6230', bmc_driver: exec}\n- {name: s0-b0-n2, mac: '52:54:00:00:00:03'}\n"), "i.yaml", h)
	if err != nil {
		t.Fatal(err)
	}
	want := []*NodeBMC{{Address: "10.1.0.1", Driver: "ipmi", Creds: "rack1"}, {Address: "10.1.0.2:6230", Driver: "exec"}, nil}
	for _, inv := range []*Inventory{csvInv, yamlInv} {
		for i, n := range inv.Nodes {
			if diff := cmp.Diff(want[i], n.BMC); diff != "" {
				t.Errorf("%s: %s's BMC (-want +got):\n%s", inv.File, n.Name, diff)
			}
		}
	}
}

func TestInventoryErrors(t *testing.T) {
	h := testfix.MiniHierarchy(t)
	const hdr = "name,mac,ip,node\n"
	const ok1 = "a,52:54:00:00:00:01,10.0.0.2,s0-b0-n0\n"
	tests := []struct {
		file, data, want string
	}{
		{"i.csv", "", "i.csv: empty inventory"},
		{"i.csv", "name,mac,colour\n", "i.csv:1: header: unknown column \"colour\""},
		{"i.csv", "name,ip\n", "i.csv:1: header: missing column \"mac\""},
		{"i.csv", hdr, "i.csv: the inventory lists no nodes"},
		{"i.csv", hdr + ok1 + "b,52:54:00:00:00:01,10.0.0.3,s0-b0-n1\n", "i.csv:3: mac: 52:54:00:00:00:01 already belongs to a (line 2)"},
		{"i.csv", hdr + ok1 + "a,52:54:00:00:00:02,10.0.0.3,s0-b0-n1\n", "i.csv:3: name: \"a\" already on line 2"},
		{"i.csv", hdr + ok1 + "b,52:54:00:00:00:02,10.0.0.2,s0-b0-n1\n", "i.csv:3: ip: 10.0.0.2 already belongs to a (line 2)"},
		{"i.csv", hdr + ok1 + "b,52:54:00:00:00:02,10.0.0.3,s0-b0-n0\n", "i.csv:3: node: position s0-b0-n0 already taken by a (line 2)"},
		{"i.csv", hdr + "b,52:54:00:zz:00:02,10.0.0.3,s0-b0-n0\n", "i.csv:2: mac: \"52:54:00:zz:00:02\" is not a MAC address"},
		{"i.csv", hdr + "b,52:54:00:00:00:02,10.0.0.300,s0-b0-n0\n", "i.csv:2: ip: \"10.0.0.300\" is not an IPv4 address"},
		{"i.csv", hdr + "b,52:54:00:00:00:02,fe80::1,s0-b0-n0\n", "i.csv:2: ip: \"fe80::1\" is not an IPv4 address"},
		{"i.csv", hdr + "b,52:54:00:00:00:02,10.0.0.3,s0-b9-n0\n", "i.csv:2: node: node name \"s0-b9-n0\": board 9 out of range"},
		{"i.csv", hdr + "node7,52:54:00:00:00:02,10.0.0.3,\n", "i.csv:2: node: node name \"node7\""},
		{"i.csv", hdr + ",52:54:00:00:00:02,10.0.0.3,s0-b0-n0\n", "i.csv:2: name: missing node name"},
		{"i.csv", hdr + "a b,52:54:00:00:00:02,10.0.0.3,s0-b0-n0\n", "i.csv:2: name: \"a b\" is not a host name"},
		{"i.csv", hdr + "-oProxyCommand=x,52:54:00:00:00:02,10.0.0.3,s0-b0-n0\n", "i.csv:2: name: \"-oProxyCommand=x\" is not a host name"},
		{"i.csv", "name,mac,bmc\nb,52:54:00:00:00:02,-oProxyCommand=x\n", "i.csv:2: bmc: \"-oProxyCommand=x\" is not a host or host:port"},
		{"i.csv", hdr + "a,52:54:00:00:00:02\n", "i.csv:2: wrong number of fields"},
		{"i.yaml", "- {name: a, mac: '52:54:00:00:00:01', colour: red}\n", `i.yaml:1: nodes[0]: unknown field "colour" (fields here: name, mac, ip, node, position, profile, bmc, bmc_driver, bmc_creds, groups)`},
		{"i.yaml", "- {name: a, mac: '52:54:00:00:00:01', node: s0-b0-n0}\n- {name: b, mac: '52:54:00:00:00:01', node: s0-b0-n1}\n", "i.yaml:2: mac: 52:54:00:00:00:01 already belongs to a (line 1)"},
		{"i.yaml", "hosts: []\n", `i.yaml:1: unknown field "hosts" (fields here: nodes)`},
		{"i.yaml", "nodes:\n  - name: a\n    mca: '52:54:00:00:00:01'\n", `i.yaml:3: nodes[0]: unknown field "mca" (did you mean mac?)`},
		{"i.yaml", "- name: a\n  mac: '52:54:00:00:00:01'\n- name: b\n  mac: '52:54:00:00:00:02'\n  node: {s: 0}\n", "i.yaml:5: nodes[1].node: want text, not a mapping"},
		{"i.yaml", "- {name: a, mac: '52:54:00:00:00:01', node: s0-b0-n0, position: s0-b0-n1}\n", "i.yaml:1: nodes[0].position: given with node, its alias"},
		{"i.yaml", "- just a string\n", "i.yaml:1: nodes[0]: want a mapping"},
		{"i.yaml", "- {name: [a], mac: x}\n", "i.yaml:1: nodes[0].name: want text, not a list"},
		{"i.yaml", "- {name: a\n", "i.yaml:1: invalid YAML: did not find expected"},
		{"i.yaml", "", "i.yaml: empty inventory"},
		{"i.csv", "name,mac,bmc,bmc_driver\na,52:54:00:00:00:01,10.1.0.1,redfsh\n", `i.csv:2: bmc_driver: "redfsh" is not a driver (drivers: ipmi, redfish, exec)`},
		{"i.csv", "name,mac,bmc,bmc_driver\na,52:54:00:00:00:01,,ipmi\n", `i.csv:2: bmc: missing: bmc_driver "ipmi" is given without the BMC's address`},
		{"i.csv", "name,mac,bmc\na,52:54:00:00:00:01,10.1.0.1:99999\n", `i.csv:2: bmc: "10.1.0.1:99999": port "99999" is not 1-65535`},
		{"i.csv", "name,mac,bmc\na,52:54:00:00:00:01,a b\n", `i.csv:2: bmc: "a b" is not a host or host:port`},
		{"i.yaml", "- {name: a, mac: '52:54:00:00:00:01', bmc_creds: rack1}\n", `i.yaml:1: bmc: missing: bmc_creds "rack1"`},
	}
	for _, tc := range tests {
		var err error
		if strings.HasSuffix(tc.file, ".csv") {
			_, err = ParseInventoryCSV([]byte(tc.data), tc.file, h)
		} else {
			_, err = ParseInventoryYAML([]byte(tc.data), tc.file, h)
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s %q:\n got  %v\n want %s...", tc.file, tc.data, err, tc.want)
		}
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Errorf("%q: error %T is not *Error", tc.data, err)
		}
	}
}

func TestLoadInventory(t *testing.T) {
	h := testfix.MiniHierarchy(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "inv.CSV")
	if err := os.WriteFile(p, []byte(testfix.MiniInventoryCSV(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	inv, err := LoadInventory(p, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Nodes) != 32 {
		t.Errorf("%d nodes, want 32", len(inv.Nodes))
	}
	if _, err := LoadInventory(filepath.Join(dir, "missing.yaml"), h); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzParseInventory(f *testing.F) {
	f.Add([]byte("name,mac,ip,node\na,52:54:00:00:00:01,10.0.0.2,s0-b0-n0\n"), true)
	f.Add([]byte("- {name: a, mac: '52:54:00:00:00:01', ip: 10.0.0.2, node: s0-b0-n0}\n"), false)
	f.Add([]byte("nodes:\n - name: s0-b0-n1\n   mac: 52:54:00:00:00:02\n"), false)
	h := testfix.MiniHierarchy(f)
	f.Fuzz(func(t *testing.T, data []byte, csv bool) {
		var inv *Inventory
		var err error
		if csv {
			inv, err = ParseInventoryCSV(data, "f.csv", h)
		} else {
			inv, err = ParseInventoryYAML(data, "f.yaml", h)
		}
		if err != nil {
			return
		}
		for i := range inv.Nodes {
			n := &inv.Nodes[i]
			if got, ok := inv.ByMAC(n.MAC); !ok || got != n {
				t.Fatalf("ByMAC(%s) = %v", n.MAC, got)
			}
			if n.Index < 0 || n.Index >= h.NumNodes() {
				t.Fatalf("index %d out of range", n.Index)
			}
		}
	})
}

func TestInventoryGroupList(t *testing.T) {
	h := testfix.MiniHierarchy(t)
	for _, tc := range []struct {
		name, csv string
		groups    []string // given to CheckGroups
		want      []string // Groups
		err       string
	}{
		{"sorted union", "name,mac,groups\ns0-b0-n1,52:54:00:00:00:01,rack1 gpu\ns0-b0-n2,52:54:00:00:00:02,rack0 gpu\n",
			[]string{"gpu", "rack0"}, []string{"gpu", "rack0", "rack1"}, ""},
		{"unknown group", "name,mac,groups\ns0-b0-n1,52:54:00:00:00:01,rack1\n",
			[]string{"rack2"}, []string{"rack1"}, `no node of inv.csv is in group "rack2" (groups: rack1)`},
		{"no groups column", "name,mac\ns0-b0-n1,52:54:00:00:00:01\n",
			[]string{"x"}, nil, `(groups: none: the inventory has no groups column, or it is empty)`},
	} {
		inv, err := ParseInventoryCSV([]byte(tc.csv), "inv.csv", h)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := inv.Groups(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Groups = %v, want %v", tc.name, got, tc.want)
		}
		err = inv.CheckGroups(tc.groups)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: CheckGroups(%v) = %v, want %q", tc.name, tc.groups, err, tc.err)
		}
	}
}

func TestCheckUnique(t *testing.T) {
	h := testfix.MiniHierarchy(t)
	inv, err := ParseInventoryCSV([]byte("name,mac,ip\ns0-b0-n0,52:54:00:00:00:01,10.0.0.1\ns0-b0-n1,52:54:00:00:00:02,\n"), "inv.csv", h)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		self   string
		fields map[string]string
		field  string // of the DuplicateError; "" for none
		msg    string
	}{
		{"", map[string]string{"name": "s0-b0-n2", "mac": "52:54:00:00:00:03", "ip": "10.0.0.3"}, "", ""},
		{"", map[string]string{"name": "s0-b0-n1", "mac": "52:54:00:00:00:03"}, "name", "s0-b0-n1 is already in inv.csv (line 3)"},
		{"", map[string]string{"name": "s0-b0-n2", "mac": "52-54-00-00-00-02"}, "mac", "52:54:00:00:00:02 already belongs to s0-b0-n1 (inv.csv line 3)"},
		{"s0-b0-n1", map[string]string{"ip": "10.0.0.1"}, "ip", "10.0.0.1 already belongs to s0-b0-n0 (inv.csv line 2)"},
		{"s0-b0-n0", map[string]string{"mac": "52:54:00:00:00:01", "ip": "10.0.0.1"}, "", ""}, // its own values
	} {
		err := inv.CheckUnique(tc.self, tc.fields)
		var de *DuplicateError
		if tc.field == "" && err != nil || tc.field != "" && (!errors.As(err, &de) || de.Field != tc.field || err.Error() != tc.msg) {
			t.Errorf("CheckUnique(%q, %v) = %v, want %s %q", tc.self, tc.fields, err, tc.field, tc.msg)
		}
	}
}
