package main

import (
	"context"
	"encoding/json"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/nodestate"
)

// TestStatusOneServerDown: with one of two servers not answering, status shows the other's nodes,
// names the silent one and exits 1.
func TestStatusOneServerDown(t *testing.T) {
	f := newServeFiles(t, "off")
	srv, _ := startServer(t, f)
	up := "http://" + srv.HTTPAddr().String()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, out, errs := runBootctl(t, ctx, "status", "--server", up, "--server", down, "--timeout", "2s")
	if code != 1 || !strings.Contains(out, "NOT ANSWERING: "+down) || !strings.Contains(out, "4 nodes") || !strings.Contains(errs, down) {
		t.Errorf("status with %s down: exit %d\nstdout:\n%s\nstderr:\n%s", down, code, out, errs)
	}
	code, out, _ = runBootctl(t, ctx, "status", "--server", up, "--server", down, "--timeout", "2s", "-o", "json")
	var res bootapi.Status
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 1 {
		t.Fatalf("json: exit %d, %v\n%s", code, err, out)
	}
	if len(res.Unreachable) != 1 || res.Unreachable[0].URL != down || len(res.Nodes) != 4 {
		t.Errorf("json: unreachable %+v, %d nodes", res.Unreachable, len(res.Nodes))
	}
	if code, _, errs := runBootctl(t, ctx, "status", "--server", down, "--timeout", "2s"); code != 1 || !strings.Contains(errs, down) {
		t.Errorf("only server down: exit %d, %s", code, errs)
	}
}

// TestStatusEtcd reads every node of a fleet from etcd in one call, grouped by holder.
func TestStatusEtcd(t *testing.T) {
	ec := etcdtest.Start(t, etcdtest.Options{Members: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := fleet.Open(ctx, fleet.Options{Endpoints: ec.Endpoints, Fleet: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	recs := map[string][]byte{}
	for _, n := range []nodestate.NodeStatus{
		{Name: "s0-b0-n0", Server: "bs0", State: nodestate.Healthy, MAC: "02:00:00:00:00:01"},
		{Name: "s0-b0-n1", Server: "bs0", State: nodestate.Kernel, MAC: "02:00:00:00:00:02"},
		{Name: "s0-b1-n0", Server: "bs1", State: nodestate.Pending, MAC: "02:00:00:00:00:03"},
	} {
		b, _ := json.Marshal(n)
		recs[n.Name] = b
	}
	if err := c.PutRecords(ctx, "nodes", recs); err != nil {
		t.Fatal(err)
	}
	m, err := c.Join(ctx, "bs0", []byte(`{"url":"http://10.0.0.1:8080"}`), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(context.Background())
	code, out, errs := runBootctl(t, ctx, "status", "--etcd", strings.Join(ec.Endpoints, ","), "--fleet", "lab", "-o", "json")
	var res bootapi.Status
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
		t.Fatalf("status --etcd: exit %d %v\n%s%s", code, err, out, errs)
	}
	if len(res.Nodes) != 3 || res.Summary.Nodes != 3 || len(res.Servers) != 2 || len(res.Members) != 1 || res.Members[0].URL != "http://10.0.0.1:8080" {
		t.Errorf("status --etcd: %+v", res)
	}
	if res.Servers[1].URL != "(not live)" || res.Servers[1].Summary.Server != "bs1" {
		t.Errorf("bs1 (no member) shown as %+v", res.Servers[1])
	}
	code, out, _ = runBootctl(t, ctx, "status", "--etcd", strings.Join(ec.Endpoints, ","), "--fleet", "lab")
	if code != 0 || !strings.Contains(out, "fleet lab: 1 live servers (bs0)") || !regexp.MustCompile(`s0-b0-n1 +bs0 +kernel`).MatchString(out) {
		t.Errorf("status --etcd table: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"status"}, {"status", "--etcd", "x", "--server", "http://a"}} {
		if code, _, _ := runBootctl(t, ctx, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
