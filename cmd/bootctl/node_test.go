package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/google/go-cmp/cmp"
)

const nodeTestInventory = "# rack 0\n" +
	"name,mac,ip,groups,bmc,bmc_driver,bmc_creds\n" +
	"s0-b0-n0,52:54:00:00:00:01,10.0.0.1,\"compute,gpu\",10.1.0.1,ipmi,rack0\n" +
	"s0-b0-n1,52:54:00:00:00:02,10.0.0.2,compute,,,\n" +
	"# the login node\n" +
	"s0-b0-n2,52:54:00:00:00:03,,login,,,\n"

// writeNodeInventory writes nodeTestInventory and returns its path.
func writeNodeInventory(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "inv.csv")
	if err := os.WriteFile(p, []byte(nodeTestInventory), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNodeCommands runs node list, add, set and delete on an inventory file: what they print,
// their exit status and the file they leave, byte for byte.
func TestNodeCommands(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string // substrings
		file     string // the inventory after, "" for unchanged
	}{
		{name: "list", args: []string{"list"}, out: "" +
			"      NAME                MAC        IP  POSITION  PROFILE       GROUPS              BMC  OWNER\n" +
			"  s0-b0-n0  52:54:00:00:00:01  10.0.0.1  s0-b0-n0        -  compute,gpu  10.1.0.1 (ipmi)      -\n" +
			"  s0-b0-n1  52:54:00:00:00:02  10.0.0.2  s0-b0-n1        -      compute                -      -\n" +
			"  s0-b0-n2  52:54:00:00:00:03         -  s0-b0-n2        -        login                -      -\n3 nodes\n"},
		{name: "list range and group", args: []string{"list", "s0-b0-n[0-1]", "--group", "gpu", "-o", "json"},
			out: "\"name\": \"s0-b0-n0\""},
		{name: "list unknown group", args: []string{"list", "--group", "gpus"}, code: 2,
			err: `--group: no node of INV is in group "gpus" (groups: compute, gpu, login)`},
		{name: "list unknown node", args: []string{"list", "s0-b0-n[0-5]"}, code: 2, err: `"s0-b0-n3", "s0-b0-n4", "s0-b0-n5": not in the inventory`},
		{name: "list bad range", args: []string{"list", "s0-b0-n[3-"}, code: 2, err: "'[' without ']'"},
		{name: "add", args: []string{"add", "s0-b0-n3", "--mac", "52:54:00:00:00:04", "--groups", "compute"}, out: "s0-b0-n3 added",
			file: nodeTestInventory + "s0-b0-n3,52:54:00:00:00:04,,compute,,,\n"},
		{name: "add duplicate mac", args: []string{"add", "s0-b0-n3", "--mac", "52:54:00:00:00:02"}, code: 2,
			err: "--mac: 52:54:00:00:00:02 already belongs to s0-b0-n1 (INV line 4)"},
		{name: "add duplicate name", args: []string{"add", "s0-b0-n1", "--mac", "52:54:00:00:00:09"}, code: 2,
			err: "node add: s0-b0-n1 is already in INV (line 4)"},
		{name: "add without mac", args: []string{"add", "s0-b0-n3"}, code: 2, err: "--mac: required"},
		{name: "add bad bmc driver", args: []string{"add", "s0-b0-n3", "--mac", "52:54:00:00:00:04", "--bmc", "10.1.0.4", "--bmc-driver", "redfsh"}, code: 2,
			err: `the inventory would be refused, nothing is written: INV:7: bmc_driver: "redfsh" is not a driver`},
		{name: "set group", args: []string{"set", "--group", "compute", "--profile", "big"}, out: "s0-b0-n0, s0-b0-n1 set",
			file: "# rack 0\nname,mac,ip,groups,bmc,bmc_driver,bmc_creds,profile\n" +
				"s0-b0-n0,52:54:00:00:00:01,10.0.0.1,\"compute,gpu\",10.1.0.1,ipmi,rack0,big\n" +
				"s0-b0-n1,52:54:00:00:00:02,10.0.0.2,compute,,,,big\n" +
				"# the login node\ns0-b0-n2,52:54:00:00:00:03,,login,,,,\n"},
		{name: "set ip of several", args: []string{"set", "s0-b0-n[1-2]", "--ip", "10.0.0.9"}, code: 2,
			err: "--ip: sets one node's value, and NODES names 2 (s0-b0-n1, s0-b0-n2)"},
		{name: "set duplicate ip", args: []string{"set", "s0-b0-n2", "--ip", "10.0.0.1"}, code: 2,
			err: "--ip: 10.0.0.1 already belongs to s0-b0-n0 (INV line 3)"},
		{name: "set nothing", args: []string{"set", "s0-b0-n2"}, code: 2, err: "node set: give a field to change"},
		{name: "set no nodes", args: []string{"set", "--profile", "x"}, code: 2, err: "node set: give the NODES to set"},
		{name: "set ip", args: []string{"set", "s0-b0-n2", "--ip", "10.0.0.3"}, out: "s0-b0-n2 set",
			file: strings.Replace(nodeTestInventory, "s0-b0-n2,52:54:00:00:00:03,,login", "s0-b0-n2,52:54:00:00:00:03,10.0.0.3,login", 1)},
		{name: "delete", args: []string{"delete", "s0-b0-n1"}, out: "s0-b0-n1 deleted",
			file: strings.Replace(nodeTestInventory, "s0-b0-n1,52:54:00:00:00:02,10.0.0.2,compute,,,\n", "", 1)},
		{name: "delete all", args: []string{"delete", "all"}, code: 2, err: "names every node"},
		{name: "set an empty NODES", args: []string{"set", "", "--profile", "x"}, code: 2, err: "NODES: argument 1 is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := writeNodeInventory(t)
			args := append([]string{"node"}, tt.args...)
			args = append(args, "--inventory", inv, "--topology", "mini")
			code, out, errs := runBootctl(t, context.Background(), args...)
			want := func(s string) string { return strings.ReplaceAll(s, "INV", inv) }
			if code != tt.code || !strings.Contains(out, want(tt.out)) || !strings.Contains(errs, want(tt.err)) {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr: %s\nwant out %q, err %q", code, tt.code, out, errs, want(tt.out), want(tt.err))
			}
			got, _ := os.ReadFile(inv)
			wantFile := tt.file
			if wantFile == "" {
				wantFile = nodeTestInventory
			}
			if d := cmp.Diff(wantFile, string(got)); d != "" {
				t.Errorf("inventory after (-want +got):\n%s", d)
			}
		})
	}
}

// TestNodeShow shows one node from the inventory alone, and with its state from a server: the
// BMC's login entry is named, never a password.
func TestNodeShow(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	st := nodestate.NodeStatus{Name: "s0-b0-n0", State: nodestate.Healthy, Since: at, Attempt: 2, Server: "bs1",
		Health:  &nodestate.Health{Status: "ok", At: at},
		History: []nodestate.Transition{{From: nodestate.Booted, To: nodestate.Healthy, Event: nodestate.EvHealthOK, At: at}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/nodes/s0-b0-n0" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"unknown node"}`))
			return
		}
		json.NewEncoder(w).Encode(st)
	}))
	defer srv.Close()
	inv := writeNodeInventory(t)
	base := []string{"node", "show", "--inventory", inv, "--topology", "mini"}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"inventory", []string{"s0-b0-n0"}, 0, "name:     s0-b0-n0\nmac:      52:54:00:00:00:01\nip:       10.0.0.1\nposition: s0-b0-n0\n" +
			"profile:  (the configuration's default)\ngroups:   compute, gpu\nbmc:      10.1.0.1, driver ipmi, login \"rack0\" of the credentials file\nowner:    -\n"},
		{"server", []string{"s0-b0-n0", "--server", srv.URL}, 0, "owner:    bs1\n\nstate healthy since 2026-11-26T10:00:00Z, attempt 2\n" +
			"last health ok at 2026-11-26T10:00:00Z\nhistory:\n  2026-11-26T10:00:00Z  booted  ->  healthy  health-ok  -\n"},
		{"server without the node", []string{"s0-b0-n1", "--server", srv.URL}, 0, "state: unknown (status: GET " + srv.URL + "/api/v1/nodes/s0-b0-n1: 404 Not Found: unknown node)\n"},
		{"unknown", []string{"s0-b0-n7"}, 2, ""},
		{"two", []string{"s0-b0-n0", "s0-b0-n1"}, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runBootctl(t, context.Background(), append(base, tt.args...)...)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr: %s\nwant %q", code, tt.code, out, errs, tt.want)
			}
		})
	}
}

// TestNodeFleet edits a fleet's inventory in etcd (a real etcd): each change is a new signed
// configuration that servers would accept, a refused one leaves the configuration as it was.
func TestNodeFleet(t *testing.T) {
	cluster := etcdtest.Start(t, etcdtest.Options{Members: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	etcd, file, key := strings.Join(cluster.Endpoints, ","), applyFleetFiles(t, 8), operatorKey(t)
	if code, _, errs := runBootctl(t, ctx, "fleet", "apply", "-f", file, "--etcd", etcd, "--sign-key", key); code != 0 {
		t.Fatalf("fleet apply: %d %s", code, errs)
	}
	cl, err := fleet.Open(ctx, fleet.Options{Endpoints: cluster.Endpoints, Fleet: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tests := []struct {
		name   string
		args   []string
		code   int
		out    string // substring of stdout or stderr
		number int64  // the configuration's number after
	}{
		{"list", []string{"list", "n[6-7]"}, 0, "n7  52:54:00:00:02:07  10.0.0.17  s0-b1-n3        -       -    -      -\n2 nodes\n", 1},
		{"add", []string{"add", "n8", "--mac", "52:54:00:00:02:08", "--ip", "10.0.0.18", "--position", "s0-b2-n0", "--groups", "gpu", "--sign-key", key},
			0, "inventory.csv: n8 added\nfleet default: configuration 2 applied (etcd revision", 2},
		{"add a MAC taken", []string{"add", "n9", "--mac", "52:54:00:00:02:08", "--position", "s0-b2-n1", "--sign-key", key},
			2, "--mac: 52:54:00:00:02:08 already belongs to n8 (inventory.csv line 10)", 2},
		{"add unsigned", []string{"add", "n9", "--mac", "52:54:00:00:02:09", "--position", "s0-b2-n1"}, 2, "--sign-key: required", 2},
		{"set outside the subnet", []string{"set", "n1", "--ip", "10.0.1.5", "--sign-key", key}, 2,
			"the fleet's inventory would be refused, nothing is written: inventory.csv:3: ip: 10.0.1.5 of node n1 is outside dhcp.subnet 10.0.0.0/24", 2},
		{"set an unpublished profile", []string{"set", "--group", "gpu", "--profile", "big", "--sign-key", key}, 2, `profile "big" is not published`, 2},
		{"list the group", []string{"list", "--group", "gpu", "-o", "json"}, 0, `"name": "n8"`, 2},
		{"delete", []string{"delete", "n8", "--sign-key", key}, 0, "fleet default: configuration 3 applied", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runBootctl(t, ctx, append(append([]string{"node"}, tt.args...), "--etcd", etcd)...)
			if code != tt.code || !strings.Contains(out+errs, tt.out) {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr: %s\nwant %q", code, tt.code, out, errs, tt.out)
			}
			cur, err := cl.Config(ctx)
			if err != nil || cur.Number != tt.number {
				t.Errorf("configuration %d (%v), want %d", cur.Number, err, tt.number)
			}
		})
	}
	// node show --etcd: the state comes from the node's record, which its server writes.
	rec, _ := json.Marshal(nodestate.NodeStatus{Name: "n1", Server: "bs0", State: nodestate.Booted, Attempt: 1})
	if err := cl.PutRecords(ctx, "nodes", map[string][]byte{"n1": rec}); err != nil {
		t.Fatal(err)
	}
	for node, want := range map[string]string{"n1": "\nstate booted since -, attempt 1\n", "n2": "\nstate: unknown (no record in etcd yet: no server has seen it)\n"} {
		if code, out, errs := runBootctl(t, ctx, "node", "show", node, "--etcd", etcd); code != 0 || !strings.Contains(out, want) {
			t.Errorf("node show %s: exit %d\n%s%s\nwant %q", node, code, out, errs, want)
		}
	}
	// status --etcd lists every node of the revision's inventory: n1 by its record, the others as
	// unknown (no server is live, so none owns them).
	code, out, errs := runBootctl(t, ctx, "status", "n[0-2]", "--etcd", etcd, "-o", "json")
	res := decodeJSONOut[bootapi.Status](t, out)
	wantUnknown := []bootapi.UnknownNode{{Name: "n0", MAC: "52:54:00:00:02:00", IP: "10.0.0.10", Position: "s0-b0-n0", Reason: "no live server owns it"},
		{Name: "n2", MAC: "52:54:00:00:02:02", IP: "10.0.0.12", Position: "s0-b0-n2", Reason: "no live server owns it"}}
	if d := cmp.Diff(wantUnknown, res.Unknown); code != 0 || d != "" || len(res.Nodes) != 1 || res.Nodes[0].Name != "n1" {
		t.Errorf("status --etcd: exit %d %s, nodes %+v, unknown (-want +got):\n%s", code, errs, res.Nodes, d)
	}
	// After add and delete: the rows as they were, with the groups column add made.
	want := strings.ReplaceAll(applyFleetInventory(8), "\n", ",\n")
	want = strings.Replace(want, "name,mac,ip,node,", "name,mac,ip,node,groups", 1)
	cur, _ := cl.Config(ctx)
	doc, err := bootconfig.DecodeFleetDoc(cur.Doc)
	if d := cmp.Diff(want, doc.Inventory.Text); err != nil || d != "" {
		t.Errorf("inventory after add and delete (%v; -want +got):\n%s", err, d)
	}
}

// TestNodeReboot asks a server (a stand-in for its API) to reboot nodes named by a range and by
// group: every name is checked against the server's inventory before any reboot is asked.
func TestNodeReboot(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			json.NewEncoder(w).Encode(bootapi.NodesResponse{Server: "bs0", Inventory: []bootapi.InventoryEntry{
				{Name: "n1", Owner: "bs0", Groups: []string{"gpu"}}, {Name: "n2", Owner: "bs0"}, {Name: "n3", Owner: "bs1", Groups: []string{"gpu"}}}})
			return
		}
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/"), "/reboot")
		asked = append(asked, name)
		if name == "n3" {
			w.WriteHeader(http.StatusMisdirectedRequest)
			w.Write([]byte(`{"error":"node \"n3\" is served by boot server bs1"}`))
			return
		}
		json.NewEncoder(w).Encode(bootapi.RebootResponse{Node: name, State: nodestate.Healthy, RebootRequested: true})
	}))
	defer srv.Close()
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte(token+"\n"), 0o600)
	tests := []struct {
		name  string
		args  []string
		code  int
		asked []string
		out   string
	}{
		{"range", []string{"n[1-2]"}, 0, []string{"n1", "n2"}, "node n2 (healthy): reboot requested"},
		{"group", []string{"--group", "gpu"}, 1, []string{"n1", "n3"}, "1 of 2 nodes not rebooted; n3: "},
		{"group and range", []string{"n[2-3]", "--group", "gpu"}, 1, []string{"n3"}, "node n3: not rebooted"},
		{"unknown node", []string{"n[1-4]"}, 2, nil, `NODES: n4: not in the inventory`},
		{"unknown group", []string{"--group", "cpu"}, 2, nil, `no inventory node is in group "cpu" (groups: gpu)`},
		{"nothing", nil, 2, nil, "give the NODES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked = nil
			args := append([]string{"node", "reboot", "--server", srv.URL, "--token-file", tok}, tt.args...)
			code, out, errs := runBootctl(t, context.Background(), args...)
			if code != tt.code || !strings.Contains(out+errs, tt.out) {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr: %s\nwant %q", code, tt.code, out, errs, tt.out)
			}
			if d := cmp.Diff(tt.asked, asked); d != "" {
				t.Errorf("reboots asked (-want +got):\n%s", d)
			}
		})
	}
}

// TestNodeConfig: with --config, node list names each node's owner by the configuration's mapping,
// and a profile the image store lacks is refused before the inventory is written.
func TestNodeConfig(t *testing.T) {
	f := newServeFiles(t, "off")
	inv := filepath.Join(filepath.Dir(f.config), "inventory.csv")
	before, _ := os.ReadFile(inv)
	ctx := context.Background()
	code, out, errs := runBootctl(t, ctx, "node", "list", "node0[0-1]", "--config", f.config)
	if want := "  node01  52:54:00:00:00:01  127.0.0.11  s0-b0-n1        -       -    -    bs0\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("node list: exit %d %s\n%s\nwant %q", code, errs, out, want)
	}
	code, _, errs = runBootctl(t, ctx, "node", "set", "node01", "--profile", "nosuch", "--config", f.config)
	if want := `inventory.csv:3: profile: node node01: profile "nosuch" is not in the image store`; code != 2 || !strings.Contains(errs, want) {
		t.Errorf("unknown profile: exit %d %q, want 2 and %q", code, errs, want)
	}
	if after, _ := os.ReadFile(inv); string(after) != string(before) {
		t.Errorf("a refused edit wrote the inventory:\n%s", after)
	}
	if code, _, errs = runBootctl(t, ctx, "node", "set", "node01", "--profile", "default", "--config", f.config); code != 0 {
		t.Errorf("known profile: exit %d %s", code, errs)
	}
}
