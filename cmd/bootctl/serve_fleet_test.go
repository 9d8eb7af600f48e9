package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/internal/testfix"
)

// fleetFiles writes a fleet file for two servers on loopback over the serve fixture's files.
func fleetFiles(t *testing.T, f *serveFiles, extraInventory string) string {
	t.Helper()
	inv, err := os.ReadFile(filepath.Join(f.dir, "inventory.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "fleet-inventory.csv"), append(inv, extraInventory...), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(f.dir, "fleet.yaml")
	err = os.WriteFile(p, []byte(`servers:
  - {name: bs0, address: 127.0.0.1}
  - {name: bs1, address: 127.0.0.2}
topology: mini
mapping: ncda
inventory: fleet-inventory.csv
images: images
state_flush: 50ms
dhcp: {mode: "off"}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// nodesOf asks a boot server for the names of the nodes it answers.
func nodesOf(url string) ([]string, error) {
	r, err := http.Get(url + "/api/v1/nodes")
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	var res bootsrv.NodesResponse
	if err := json.NewDecoder(r.Body).Decode(&res); err != nil {
		return nil, err
	}
	var out []string
	for _, n := range res.Nodes {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out, nil
}

// TestServeFleet runs two `bootctl serve --etcd` members: the second has no image files and fetches
// them from the first by sha256; the nodes are split between them by the rule; a new revision
// (one more node) is picked up without a restart; a bad fleet file never reaches them; and when one
// stops, the other answers every node.
func TestServeFleet(t *testing.T) {
	ec := etcdtest.Start(t, etcdtest.Options{Members: 1})
	etcd := strings.Join(ec.Endpoints, ",")
	f := newServeFiles(t, "off")
	fleetFile := fleetFiles(t, f, "")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	apply := func(path string) fleet.ConfigRevision {
		t.Helper()
		doc, err := bootsrv.LoadFleetFile(path)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := doc.Encode()
		if err != nil {
			t.Fatal(err)
		}
		c, err := fleet.Open(ctx, fleet.Options{Endpoints: ec.Endpoints, Fleet: "t"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.ApplyConfig(ctx, enc); err != nil {
			t.Fatal(err)
		}
		rev, err := c.Config(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	apply(fleetFile)

	type member struct {
		url    string
		cancel context.CancelFunc
		done   chan int
		errs   *strings.Builder
	}
	start := func(name, addr, images string) *member {
		port := testfix.FreePort(t)
		mctx, mcancel := context.WithCancel(ctx)
		m := &member{url: fmt.Sprintf("http://%s:%d", addr, port), cancel: mcancel, done: make(chan int, 1), errs: &strings.Builder{}}
		go func() {
			code, _, errs := runBootctl(t, mctx, "serve", "--etcd", etcd, "--fleet", "t", "--name", name, "--lease-ttl", "2s",
				"--http", fmt.Sprintf("%s:%d", addr, port), "--tftp", "off", "--state-dir", filepath.Join(t.TempDir(), "state"),
				"--images", images, "--ipxe-dir", filepath.Join(f.dir, "ipxe"), "--log-level", "warn")
			m.errs.WriteString(errs)
			m.done <- code
		}()
		t.Cleanup(func() {
			mcancel()
			select {
			case <-m.done:
			case <-time.After(15 * time.Second):
				t.Errorf("%s did not stop", name)
			}
		})
		return m
	}
	waitNodes := func(m *member, want []string) {
		t.Helper()
		var got []string
		answered := false
		defer func() {
			if !answered {
				t.Logf("%s answers %v, want %v\n%s", m.url, got, want, m.errs.String())
			}
		}()
		testfix.WaitFor(t, fmt.Sprintf("%s answers %v", m.url, want), 15*time.Second, func() bool {
			got, _ = nodesOf(m.url)
			return slices.Equal(got, want)
		})
		answered = true
	}
	bs0 := start("bs0", "127.0.0.1", filepath.Join(f.dir, "images"))
	waitNodes(bs0, []string{"node00", "node01", "node02", "node03"}) // bs1 not up: dead, bs0 has all
	// bs1 starts with an empty store: it fetches the profile's blobs from bs0.
	bs1Images := filepath.Join(t.TempDir(), "images")
	bs1 := start("bs1", "127.0.0.2", bs1Images)
	// ncda over two servers: node n of the mini machine goes to server n mod 2.
	waitNodes(bs1, []string{"node01", "node03"})
	waitNodes(bs0, []string{"node00", "node02"})
	r, err := http.Get(bs1.url + "/boot/default/vmlinuz")
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil || r.StatusCode != 200 || !bytes.Equal(kernel, f.kernel) {
		t.Errorf("bs1 serves the kernel it fetched: status %d, %d bytes (%v), want %d identical", r.StatusCode, len(kernel), err, len(f.kernel))
	}

	// A new revision with one more node reaches both without a restart.
	fleetFiles(t, f, "node04,52:54:00:00:00:04,127.0.0.14,s0-b1-n0\n")
	apply(fleetFile)
	waitNodes(bs0, []string{"node00", "node02", "node04"})
	waitNodes(bs1, []string{"node01", "node03"})

	// A bad fleet file is refused by fleet apply's validation and never stored.
	bad := filepath.Join(f.dir, "bad.yaml")
	os.WriteFile(bad, []byte("servers:\n  - {name: bs0, address: 127.0.0.1}\ntopology: mini\nmapping: nosuch\ninventory: fleet-inventory.csv\nimages: images\ndhcp: {mode: \"off\"}\n"), 0o644)
	if _, err := bootsrv.LoadFleetFile(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml:4") {
		t.Errorf("bad fleet file: %v, want an error at bad.yaml:4", err)
	}

	// bs1 stops (and leaves): bs0 answers every node.
	bs1.cancel()
	select {
	case code := <-bs1.done:
		if code != 0 {
			t.Errorf("bs1 exit %d: %s", code, bs1.errs.String())
		}
		bs1.done <- code
	case <-time.After(15 * time.Second):
		t.Fatal("bs1 did not stop")
	}
	waitNodes(bs0, []string{"node00", "node01", "node02", "node03", "node04"})
}
