package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootsrv"
)

func TestStatusWatch(t *testing.T) {
	f := newServeFiles(t, "off")
	srv, _ := startServer(t, f)
	url := "http://" + srv.HTTPAddr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	code, out, errs := runBootctl(t, ctx, "status", "--server", url, "--watch", "1", "--output", "json")
	if code != 130 { // interrupted, as by Ctrl-C
		t.Fatalf("status --watch: %d %s", code, errs)
	}
	if d := time.Since(start); d < time.Second || d > 5*time.Second {
		t.Errorf("watch ran %v, want until the 1.5 s interrupt", d)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	docs := 0
	for {
		var res statusResult
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
	if docs != 2 {
		t.Errorf("%d refreshes in 1.5 s with --watch 1, want 2", docs)
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
	var res statusResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Servers) != 2 || res.Servers[0].Summary.Nodes != 4 || res.Servers[1].Summary.Nodes != 0 ||
		res.Summary.Server != "all" || res.Summary.Nodes != 4 || res.Summary.States[bootsrv.Healthy] != 1 {
		t.Errorf("aggregate: %+v", res)
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
