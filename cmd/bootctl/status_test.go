package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/google/go-cmp/cmp"
)

func TestStatusWatch(t *testing.T) {
	f := newServeFiles(t, "off")
	srv, _ := startServer(t, f)
	url := "http://" + srv.HTTPAddr().String()
	// Refreshes at 0, 1 and 2 s, then the interrupt at 2.5 s; on a loaded host (-race beside the
	// main run) the first may come late enough that the third does not.
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	start := time.Now()
	code, out, errs := runBootctl(t, ctx, "status", "--server", url, "--watch", "1", "--output", "json")
	if code != 130 { // interrupted, as by Ctrl-C
		t.Fatalf("status --watch: %d %s", code, errs)
	}
	if d := time.Since(start); d < 2*time.Second || d > 6*time.Second {
		t.Errorf("watch ran %v, want until the 2.5 s interrupt", d)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	docs := 0
	for {
		var res bootapi.Status
		if err := dec.Decode(&res); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("document %d: %v\n%s", docs, err, out)
		}
		if res.Summary.Nodes != 4 {
			t.Errorf("summary %+v", res.Summary)
		}
		docs++
	}
	if docs < 2 || docs > 3 {
		t.Errorf("%d refreshes in 2.5 s with --watch 1, want 3 (2 on a loaded host)", docs)
	}
}

// TestStatusTwoServers aggregates two boot servers that split the inventory (bcda over 2 servers).
func TestStatusTwoServers(t *testing.T) {
	f := newServeFiles(t, "off")
	cfg, _ := os.ReadFile(f.config)
	two := strings.Replace(string(cfg), "servers:\n", "servers:\n  - {name: bs1, address: 127.0.0.2}\n", 1)
	// Server 0 is now bs1 (127.0.0.2) and server 1 is bs0; addresses only name the servers here.
	os.WriteFile(f.config, []byte(two), 0o644)
	a, _ := startServer(t, f)
	f2 := *f
	f2.config = f.config + ".1.yaml"
	os.WriteFile(f2.config, []byte(strings.Replace(two, "state_dir: state", "state_dir: state1\nserver_id: 1", 1)), 0o644)
	b, _ := startServer(t, &f2)
	ua, ub := "http://"+a.HTTPAddr().String(), "http://"+b.HTTPAddr().String()

	// Board s0-b0 holds all four inventory nodes and goes to server 0; node00 reports to the wrong one.
	resp, err := httpPost(ub+"/api/v1/nodes/node00/health", `{"status":"ok"}`)
	if err != nil || resp != 421 {
		t.Errorf("health to the wrong server: %d %v", resp, err)
	}
	if resp, err := httpPost(ua+"/api/v1/nodes/node00/health", `{"status":"ok"}`); err != nil || resp != 401 {
		t.Errorf("health without the token: %d %v", resp, err)
	}
	if resp, err := httpPost(healthURL(t, ua, "52:54:00:00:00:00"), `{"status":"ok"}`); err != nil || resp != 200 {
		t.Errorf("health: %d %v", resp, err)
	}
	code, out, errs := runBootctl(t, context.Background(), "status", "--server", ua, "--server", ub, "--output", "json")
	if code != 0 {
		t.Fatalf("status: %d %s", code, errs)
	}
	var res bootapi.Status
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Servers) != 2 || res.Servers[0].Summary.Nodes != 4 || res.Servers[1].Summary.Nodes != 0 ||
		res.Summary.Server != "all" || res.Summary.Nodes != 4 || res.Summary.States[nodestate.Healthy] != 1 {
		t.Errorf("aggregate: %+v", res)
	}
	// A node two answers hold is one row and counted once (bootapi.Merge), not listed twice.
	code, out, errs = runBootctl(t, context.Background(), "status", "--server", ua, "--server", ub, "--server", ua, "--output", "json")
	res = bootapi.Status{}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
		t.Fatalf("status with a server twice: %d %v %s", code, err, errs)
	}
	if len(res.Servers) != 3 || res.Summary.Nodes != 4 || len(res.Nodes) != 4 || res.ByState[nodestate.Healthy] != 1 {
		t.Errorf("a server asked twice: %d servers, summary of %d nodes, %d rows, by state %v", len(res.Servers), res.Summary.Nodes, len(res.Nodes), res.ByState)
	}
	code, _, errs = runBootctl(t, context.Background(), "status", "--server", ua, "--server", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("unreachable server: %d %s", code, errs)
	}
}

func httpPost(url, body string) (int, error) {
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// healthURL fetches a node's iPXE script (from the node's address) and returns the health URL on
// its kernel line, token included, on base (the script names the server's configured address).
func healthURL(t *testing.T, base, mac string) string {
	t.Helper()
	m := regexp.MustCompile(`bootfabric.health=(\S+)`).FindStringSubmatch(string(httpGet(t, base+"/ipxe/"+mac)))
	if m == nil {
		t.Fatalf("no bootfabric.health= in the script of %s", mac)
	}
	u, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return base + u.RequestURI()
}

// TestStatusWhere: status without a place to read the nodes from, or with two, says so in one line
// that names the command once ("bootctl status: status: give ..." before).
func TestStatusWhere(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "bootctl status: give --server URL (repeatable) or --etcd ENDPOINTS: where the nodes are served\n"},
		{[]string{"status", "--server", "http://127.0.0.1:1", "--etcd", "127.0.0.1:2"}, "bootctl status: --server and --etcd exclude each other\n"},
	} {
		code, _, errs := runBootctl(t, context.Background(), tc.args...)
		if code != 2 || errs != tc.want {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestStatusInventoryNodes: one of two servers (node-cyclic mapping) is asked. status lists every
// inventory node: the asked server's with their state, the other's as unknown with their owner;
// NODES, --group and --state select, and a name outside the inventory is bad input.
func TestStatusInventoryNodes(t *testing.T) {
	f := newServeFiles(t, "off")
	cfg, _ := os.ReadFile(f.config)
	two := strings.Replace(string(cfg), "servers:\n", "servers:\n  - {name: bs1, address: 127.0.0.2}\n", 1)
	two = strings.Replace(two, "mapping: bcda", "mapping: ncda", 1)
	os.WriteFile(f.config, []byte(two), 0o644)
	inv := filepath.Join(filepath.Dir(f.config), "inventory.csv")
	os.WriteFile(inv, []byte("name,mac,ip,node,groups\nnode00,52:54:00:00:00:00,127.0.0.1,s0-b0-n0,\n"+
		"node01,52:54:00:00:00:01,127.0.0.11,s0-b0-n1,login\nnode02,52:54:00:00:00:02,127.0.0.12,s0-b0-n2,\n"+
		"node03,52:54:00:00:00:03,127.0.0.13,s0-b0-n3,\n"), 0o644)
	a, _ := startServer(t, f)
	ua := "http://" + a.HTTPAddr().String()
	type row struct{ Name, Server, State string }
	tests := []struct {
		name string
		args []string
		code int
		want []row
	}{
		{"all", nil, 0, []row{{"node00", "bs1", "pending"}, {"node02", "bs1", "pending"},
			{"node01", "bs0", "unknown"}, {"node03", "bs0", "unknown"}}},
		{"range", []string{"node0[0-1]"}, 0, []row{{"node00", "bs1", "pending"}, {"node01", "bs0", "unknown"}}},
		{"group", []string{"--group", "login"}, 0, []row{{"node01", "bs0", "unknown"}}},
		{"unknown only", []string{"--state", "unknown"}, 0, []row{{"node01", "bs0", "unknown"}, {"node03", "bs0", "unknown"}}},
		{"pending only", []string{"--state", "pending", "node03,node02"}, 0, []row{{"node02", "bs1", "pending"}}},
		{"not in the inventory", []string{"node09"}, 2, nil},
		{"no such group", []string{"--group", "gpu"}, 2, nil},
		{"no such state", []string{"--state", "up"}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runBootctl(t, context.Background(), append([]string{"status", "--server", ua, "-o", "json"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, errs)
			}
			if code != 0 {
				return
			}
			var res bootapi.Status
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
			var got []row
			for _, n := range res.Nodes {
				got = append(got, row{n.Name, n.Server, n.State.String()})
			}
			for _, u := range res.Unknown {
				got = append(got, row{u.Name, u.Owner, "unknown"})
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("nodes (-want +got):\n%s", d)
			}
		})
	}
	code, out, _ := runBootctl(t, context.Background(), "status", "--server", ua, "node01")
	if want := "node01 bs0 unknown - - 127.0.0.11 52:54:00:00:00:01 s0-b0-n1 its server bs0 was not asked: add its --server"; code != 0 ||
		!strings.Contains(strings.Join(strings.Fields(out), " "), want) || !strings.Contains(out, "by state: unknown 1\n") {
		t.Errorf("table: exit %d\n%s\nwant a row %q", code, out, want)
	}
}
