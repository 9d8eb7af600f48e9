package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/internal/testfix"
	clientv3 "go.etcd.io/etcd/client/v3"
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
	var res bootapi.NodesResponse
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

// TestServeFleet runs two `bootctl serve --etcd` members: the first to start has no image files and
// fetches them by sha256 from the second once it is up; the nodes are split between them by the rule; a new revision
// (one more node) is picked up without a restart; a bad fleet file never reaches them; and when one
// stops, the other answers every node.
func TestServeFleet(t *testing.T) {
	ec := etcdtest.Start(t, etcdtest.Options{Members: 1})
	etcd := strings.Join(ec.Endpoints, ",")
	f := newServeFiles(t, "off")
	fleetFile := fleetFiles(t, f, "")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	keyFile := operatorKey(t)
	key, err := fleet.LoadSigningKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(path string, key ed25519.PrivateKey) fleet.ConfigRevision {
		t.Helper()
		doc, err := bootconfig.LoadFleetFile(path)
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
		if _, err := c.ApplyConfig(ctx, enc, key); err != nil {
			t.Fatal(err)
		}
		rev, err := c.Config(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	apply(fleetFile, key)
	etcdRaw := rawEtcd(t, ec.Endpoints)
	firstValue := etcdRaw.get(ctx, fleet.Root+"t/config")

	type member struct {
		url    string
		cancel context.CancelFunc
		done   chan int
		errs   *lockedBuffer // its stderr, read while it runs
	}
	start := func(name, addr, images string) *member {
		port := testfix.FreePort(t)
		mctx, mcancel := context.WithCancel(ctx)
		m := &member{url: fmt.Sprintf("http://%s:%d", addr, port), cancel: mcancel, done: make(chan int, 1), errs: &lockedBuffer{}}
		go func() {
			code := run(mctx, []string{"bootctl", "serve", "--etcd", etcd, "--fleet", "t", "--name", name, "--lease-ttl", "2s", "--config-key", keyFile + ".pub", "--fleet-secret", keyFile + ".secret",
				"--http", fmt.Sprintf("%s:%d", addr, port), "--tftp", "off", "--state-dir", filepath.Join(t.TempDir(), "state"),
				"--images", images, "--ipxe-dir", filepath.Join(f.dir, "ipxe"), "--log-level", "warn"}, io.Discard, m.errs)
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
	// bs1 starts first, with an empty store: it cannot fetch the profile's blobs from anyone until
	// bs0 is up, and tries again until it can.
	bs1Images := filepath.Join(t.TempDir(), "images")
	bs1 := start("bs1", "127.0.0.2", bs1Images)
	testfix.WaitFor(t, "bs1 failing to fetch the blobs", 30*time.Second, func() bool {
		return strings.Contains(bs1.errs.String(), "configuration revision not applied; trying again")
	})
	bs0 := start("bs0", "127.0.0.1", filepath.Join(f.dir, "images"))
	// ncda over two servers: node n of the mini machine goes to server n mod 2.
	waitNodes(bs1, []string{"node01", "node03"})
	waitNodes(bs0, []string{"node00", "node02"})
	wantMemberInfo(t, ctx, ec.Endpoints, map[string]string{"bs0": bs0.url, "bs1": bs1.url})
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
	apply(fleetFile, key)
	waitNodes(bs0, []string{"node00", "node02", "node04"})
	waitNodes(bs1, []string{"node01", "node03"})

	// Write access to etcd is not enough: a revision signed by another key, and the first
	// revision's value written back, are refused and the servers keep the revision they run.
	fleetFiles(t, f, "node04,52:54:00:00:00:04,127.0.0.14,s0-b1-n0\nnode06,52:54:00:00:00:06,127.0.0.16,s0-b1-n2\n")
	forger := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize))
	apply(fleetFile, forger)
	etcdRaw.put(ctx, fleet.Root+"t/config", firstValue)
	for _, why := range []string{"not signed by a trusted key", "older than one applied before"} {
		testfix.WaitFor(t, "bs0 refusing a revision as "+why, 15*time.Second, func() bool {
			return strings.Contains(bs0.errs.String(), why)
		})
	}
	if got, _ := nodesOf(bs0.url); slices.Contains(got, "node06") || !slices.Contains(got, "node04") {
		t.Fatalf("bs0 applied a forged or rolled-back revision: it answers %v", got)
	}

	// A bad fleet file is refused by fleet apply's validation and never stored.
	bad := filepath.Join(f.dir, "bad.yaml")
	os.WriteFile(bad, []byte("servers:\n  - {name: bs0, address: 127.0.0.1}\ntopology: mini\nmapping: nosuch\ninventory: fleet-inventory.csv\nimages: images\ndhcp: {mode: \"off\"}\n"), 0o644)
	if _, err := bootconfig.LoadFleetFile(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml:4") {
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
	bs0.cancel()
	<-bs0.done
	if !strings.Contains(bs1.errs.String(), "configuration revision not applied; trying again") {
		t.Errorf("bs1 did not have to try the first revision again:\n%s", bs1.errs.String())
	}
	for _, want := range []string{"not signed by a trusted key", "older than one applied before"} {
		if !strings.Contains(bs0.errs.String(), "configuration revision refused") || !strings.Contains(bs0.errs.String(), want) {
			t.Errorf("bs0's log does not say a revision was refused as %q:\n%s", want, bs0.errs.String())
		}
	}
	bs0.done <- 0
}

// rawClient reads and writes etcd keys as anyone with access to etcd could.
type rawClient struct {
	t   *testing.T
	cli *clientv3.Client
}

func rawEtcd(t *testing.T, endpoints []string) rawClient {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return rawClient{t, cli}
}

func (r rawClient) get(ctx context.Context, key string) []byte {
	resp, err := r.cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		r.t.Fatalf("get %s: %v", key, err)
	}
	return resp.Kvs[0].Value
}

func (r rawClient) put(ctx context.Context, key string, value []byte) {
	if _, err := r.cli.Put(ctx, key, string(value)); err != nil {
		r.t.Fatal(err)
	}
}

// wantMemberInfo checks what each member of fleet t published: its URL, and when it joined
// (which fleet status shows).
func wantMemberInfo(t *testing.T, ctx context.Context, endpoints []string, urls map[string]string) {
	t.Helper()
	c, err := fleet.Open(ctx, fleet.Options{Endpoints: endpoints, Fleet: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	members, _, err := c.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, mb := range members {
		info, ok := bootsrv.DecodeMemberInfo(mb)
		if !ok || info.URL != urls[mb.Name] || info.Joined.IsZero() {
			t.Errorf("member %s published %+v (readable %v), want URL %s and a join time", mb.Name, info, ok, urls[mb.Name])
		}
	}
	if len(members) != len(urls) {
		t.Errorf("%d members, want %d", len(members), len(urls))
	}
}

// lockedBuffer is a server's stderr that the test reads while the server writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
