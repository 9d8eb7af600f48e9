package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const applyFleetYAML = `# two servers for the mini machine
servers:
  - {name: bs0, address: 10.0.0.1}
  - {name: bs1, address: 10.0.0.2}
topology: mini
mapping: bcda
inventory: inventory.csv
images: images
dhcp:
  subnet: 10.0.0.0/24
`

// applyFleetInventory lists n nodes, four per board from s0-b0 on: with bcda and two servers, bs0
// owns boards 0, 2, ... and bs1 boards 1, 3, ...
func applyFleetInventory(n int) string {
	var sb strings.Builder
	sb.WriteString("name,mac,ip,node\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "n%d,52:54:00:00:02:%02x,10.0.0.%d,s0-b%d-n%d\n", i, i, 10+i, i/4, i%4)
	}
	return sb.String()
}

// applyFleetFiles writes a fleet file, its inventory of n nodes and a store with profile default,
// and returns the fleet file's path.
func applyFleetFiles(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	kernel := filepath.Join(dir, "src", "vmlinuz")
	testfix.RandomFile(t, kernel, 5000, 1)
	st, err := images.Create(filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Add(images.Profile{Name: "default", Kernel: "vmlinuz"}, map[string]string{"vmlinuz": kernel}); err != nil {
		t.Fatal(err)
	}
	testfix.WriteFile(t, filepath.Join(dir, "inventory.csv"), []byte(applyFleetInventory(n)))
	return testfix.WriteFile(t, filepath.Join(dir, "fleet.yaml"), []byte(applyFleetYAML))
}

// operatorKey makes a signing key pair with fleet keygen and returns the private key's path; the
// public key is PATH.pub.
func operatorKey(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "operator.key")
	if code, _, errs := runBootctl(t, context.Background(), "fleet", "keygen", "--out", p); code != 0 {
		t.Fatalf("fleet keygen: %d %s", code, errs)
	}
	return p
}

func decodeJSONOut[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	return v
}

// TestFleetApplyOffline covers what needs no etcd: a dry run, refusals and usage errors.
func TestFleetApplyOffline(t *testing.T) {
	ctx := context.Background()
	file := applyFleetFiles(t, 8)
	code, out, errs := runBootctl(t, ctx, "fleet", "apply", "-f", file, "--dry-run", "-o", "json")
	if code != 0 {
		t.Fatalf("dry run: %d\n%s", code, errs)
	}
	got := decodeJSONOut[bootsrv.FleetApplyResult](t, out)
	want := bootsrv.FleetApplyResult{Fleet: "default", DryRun: true, Changed: false, Nodes: 8, Mapping: "bcda",
		Servers:  []bootsrv.FleetServerRow{{Name: "bs0", Address: "10.0.0.1", Nodes: 4}, {Name: "bs1", Address: "10.0.0.2", Nodes: 4}},
		Profiles: []bootsrv.FleetProfileRow{{Name: "default", Files: 1, Bytes: 5000}}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(bootsrv.FleetApplyResult{}, "SHA256", "Bytes")); diff != "" {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}
	if len(got.SHA256) != 64 || got.Bytes == 0 {
		t.Errorf("sha256 %q, %d bytes", got.SHA256, got.Bytes)
	}
	code, out, _ = runBootctl(t, ctx, "fleet", "apply", "-f", file, "--dry-run")
	for _, w := range []string{"fleet default: dry run, nothing written", "2 servers, 8 nodes (bcda), 1 profile", "bs1  10.0.0.2      4", "default      1   5000"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("dry run table: %d, want %q in\n%s", code, w, out)
		}
	}

	key := operatorKey(t)
	openKey := filepath.Join(t.TempDir(), "open.key")
	if data, err := os.ReadFile(key); err != nil || os.WriteFile(openKey, data, 0o644) != nil {
		t.Fatal(err)
	}
	perServer := strings.Replace(applyFleetYAML, "topology:", "server_id: 1\ntopology:", 1)
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"per-server field", []string{"-f", testfix.WriteFile(t, filepath.Join(filepath.Dir(file), "ps.yaml"), []byte(perServer)), "--dry-run"}, 2,
			filepath.Join(filepath.Dir(file), "ps.yaml") + ":5: server_id: per-server setting; give it to bootctl serve"},
		{"no etcd", []string{"-f", file, "--sign-key", key}, 2, "--etcd: required"},
		{"no signing key", []string{"-f", file, "--etcd", "127.0.0.1:1"}, 2, "--sign-key: required"},
		{"signing key readable by others", []string{"-f", file, "--etcd", "127.0.0.1:1", "--sign-key", openKey}, 2,
			"--sign-key: signing key " + openKey + ": mode 0644: its group or others may read"},
		{"public key to sign", []string{"-f", file, "--etcd", "127.0.0.1:1", "--sign-key", key + ".pub"}, 2, "--sign-key: signing key " + key + ".pub: mode 0644: its group"},
		{"bad fleet name", []string{"-f", file, "--dry-run", "--fleet", "A/B"}, 2, `--fleet: fleet name "A/B"`},
		{"missing file", []string{"-f", file + ".gone", "--dry-run"}, 2, "no such file"},
		{"no file", []string{"--dry-run"}, 2, "file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runBootctl(t, ctx, append([]string{"fleet", "apply"}, tt.args...)...)
			if code != tt.code || !strings.Contains(errs, tt.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Errorf("exit %d, want %d; stderr %q, want %q (one line); stdout %q", code, tt.code, errs, tt.want, out)
			}
		})
	}
}

// TestFleetApplyStatusEtcd applies a fleet file to a real etcd and reads it back with fleet status:
// before any apply, with no member, with bs1 live after a takeover; a changed inventory is a new
// revision, a bad one is refused and leaves the revision; a revision this bootctl cannot read and
// an empty fleet are each named as such.
func TestFleetApplyStatusEtcd(t *testing.T) {
	cluster := etcdtest.Start(t, etcdtest.Options{Members: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fe := &fleetEtcd{ctx: ctx, cluster: cluster, etcd: strings.Join(cluster.Endpoints, ","), file: applyFleetFiles(t, 8), key: operatorKey(t)}

	// Nothing applied yet: status says so.
	code, _, errs := runBootctl(t, ctx, "fleet", "status", "--etcd", fe.etcd)
	if code != 1 || !strings.Contains(errs, "fleet default: fleet has no configuration (run bootctl fleet apply)") {
		t.Errorf("status before apply: %d %q", code, errs)
	}
	fe.applyTwice(t)
	fe.statusNoMember(t)
	fe.statusBs1Live(t)
	fe.applyAddedNode(t)
	fe.applyBadInventory(t)
	fe.unreadableRevision(t)
	// Another fleet in the same etcd is empty.
	if code, _, errs := runBootctl(t, ctx, "fleet", "status", "--etcd", fe.etcd, "--fleet", "other"); code != 1 || !strings.Contains(errs, "fleet other: fleet has no configuration") {
		t.Errorf("other fleet: %d %q", code, errs)
	}
}

// fleetEtcd is TestFleetApplyStatusEtcd's etcd and fleet file, and what its steps leave for the
// next: the first and second applies, the status expected, and bs1's etcd client.
type fleetEtcd struct {
	ctx     context.Context
	cluster *etcdtest.Cluster
	etcd    string // the endpoints, as --etcd takes them
	file    string // the fleet file
	key     string // the operator's signing key (KEY.pub: its public key)

	first, second bootsrv.FleetApplyResult
	want          bootsrv.FleetStatus
	bs1           *fleet.Client
}

// inventory is the path of the fleet file's inventory.
func (fe *fleetEtcd) inventory() string { return filepath.Join(filepath.Dir(fe.file), "inventory.csv") }

// status runs fleet status -o json with args and decodes it; the test stops unless it exits 0.
func (fe *fleetEtcd) status(t *testing.T, args ...string) bootsrv.FleetStatus {
	t.Helper()
	code, out, errs := runBootctl(t, fe.ctx, append([]string{"fleet", "status", "--etcd", fe.etcd, "-o", "json"}, args...)...)
	st := decodeJSONOut[bootsrv.FleetStatus](t, out)
	// A fleet with no live server is down: exit 1, with the report.
	if wantCode := map[bool]int{true: 1, false: 0}[st.Live == 0]; code != wantCode || (code == 1) != strings.Contains(errs, "none of its") {
		t.Fatalf("status: exit %d with %d live, want %d\n%s", code, st.Live, wantCode, errs)
	}
	return st
}

// wantTable runs fleet status as a table and checks it exits 0 (1 when no server is live, as
// the table's first line then says) with each of the lines.
func (fe *fleetEtcd) wantTable(t *testing.T, lines ...string) {
	t.Helper()
	code, out, _ := runBootctl(t, fe.ctx, "fleet", "status", "--etcd", fe.etcd)
	t.Logf("fleet status:\n%s", out)
	wantCode := 0
	if strings.Contains(out, " 0 of ") {
		wantCode = 1
	}
	for _, w := range lines {
		if code != wantCode || !strings.Contains(out, w) {
			t.Errorf("status table: want %q in\n%s", w, out)
		}
	}
}

// applyTwice applies the fleet file: a new revision of 8 nodes; the same file again writes nothing.
func (fe *fleetEtcd) applyTwice(t *testing.T) {
	code, out, errs := runBootctl(t, fe.ctx, "fleet", "apply", "-f", fe.file, "--etcd", fe.etcd, "--sign-key", fe.key, "-o", "json")
	if code != 0 {
		t.Fatalf("apply: %d\n%s", code, errs)
	}
	fe.first = decodeJSONOut[bootsrv.FleetApplyResult](t, out)
	// The first configuration of an empty etcd is number 1 (its etcd revision is 2 or more).
	if fe.first.Revision <= 0 || fe.first.Number != 1 || !fe.first.Changed || fe.first.Nodes != 8 {
		t.Errorf("apply: %+v", fe.first)
	}
	code, out, _ = runBootctl(t, fe.ctx, "fleet", "apply", "-f", fe.file, "--etcd", fe.etcd, "--sign-key", fe.key)
	t.Logf("fleet apply:\n%s", out)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("fleet default: configuration 1 unchanged (the same is stored, etcd revision %d)", fe.first.Revision)) {
		t.Errorf("apply again: %d\n%s", code, out)
	}
}

// statusNoMember: no member has joined, so every server is dead and nobody owns a node.
func (fe *fleetEtcd) statusNoMember(t *testing.T) {
	fe.want = bootsrv.FleetStatus{Fleet: "default", Number: 1, Revision: fe.first.Revision, SHA256: fe.first.SHA256, Mapping: "bcda", Nodes: 8, Live: 0, Unowned: 8,
		Servers: []bootsrv.FleetServerStatus{{Name: "bs0", Address: "10.0.0.1", State: "dead"}, {Name: "bs1", Address: "10.0.0.2", State: "dead"}},
		Recent:  []bootsrv.FleetTakeover{}}
	if diff := cmp.Diff(fe.want, fe.status(t)); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	fe.wantTable(t, "configuration 1 (etcd revision", "0 of 2 servers live", "no live server owns 8 of the 8 nodes", "bs0  10.0.0.1   dead      0      0    -       -          -      -", "takeovers: 0")
}

// statusBs1Live: bs1 joins and takes bs0's nodes over; status shows it live with all the nodes
// and its lease, and the takeover.
func (fe *fleetEtcd) statusBs1Live(t *testing.T) {
	cl, err := fleet.Open(fe.ctx, fleet.Options{Endpoints: fe.cluster.Endpoints, Fleet: "default"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	fe.bs1 = cl
	joined := time.Date(2026, 11, 24, 4, 59, 0, 0, time.UTC)
	info, _ := json.Marshal(bootsrv.MemberInfo{URL: "http://10.0.0.2:8080", Address: "10.0.0.2", Joined: joined})
	mb, err := cl.Join(fe.ctx, "bs1", info, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mb.Leave(context.Background()) })
	at := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	// As the servers record a takeover (bootsrv's TakeoverEvent).
	ev, _ := json.Marshal(map[string]any{"from": "bs0", "to": "bs1", "nodes": 4, "mid_boot": 2, "at": at})
	if _, err := cl.AppendEvent(fe.ctx, "takeover", ev); err != nil {
		t.Fatal(err)
	}
	// Three nodes' boot records name bs1 as the server answering them (HOLDS), one names bs0.
	recs := map[string][]byte{}
	for i, holder := range []string{"bs1", "bs1", "bs1", "bs0"} {
		name := fmt.Sprintf("node%d", i)
		recs[name], _ = json.Marshal(nodestate.NodeStatus{Name: name, Server: holder})
	}
	if err := cl.PutRecordsIfMember(fe.ctx, mb, "nodes", recs); err != nil {
		t.Fatal(err)
	}
	st := fe.status(t)
	fe.want.Live, fe.want.Unowned, fe.want.Takeovers = 1, 0, 1
	fe.want.Servers[1] = bootsrv.FleetServerStatus{Name: "bs1", Address: "10.0.0.2", State: "live", Nodes: 8, Holds: 3, URL: "http://10.0.0.2:8080",
		Lease: fmt.Sprintf("%x", mb.LeaseID()), JoinedAt: joined}
	fe.want.Servers[0].LastSeen = at // dead: when its nodes were taken over
	fe.want.Servers[0].Holds = 1     // a record not handed over yet
	fe.want.Recent = []bootsrv.FleetTakeover{{Seq: 1, TakeoverEvent: bootsrv.TakeoverEvent{From: "bs0", To: "bs1", Nodes: 4, MidBoot: 2, At: at}}}
	if diff := cmp.Diff(fe.want, st, cmpopts.IgnoreFields(bootsrv.FleetServerStatus{}, "Joined", "LeaseLeft", "LeaseTTL")); diff != "" {
		t.Errorf("status with bs1 (-want +got):\n%s", diff)
	}
	// The lease's age: granted the member's TTL (3 s, whole seconds), with some of it left.
	if l := st.Servers[1]; l.LeaseTTL != 3 || l.LeaseLeft <= 0 || l.LeaseLeft > 3 {
		t.Errorf("bs1's lease: %v s left of %v s, want some left of 3 s", l.LeaseLeft, l.LeaseTTL)
	}
	if st.Servers[1].Joined <= fe.first.Revision {
		t.Errorf("bs1 joined at revision %d, before the configuration (%d)", st.Servers[1].Joined, fe.first.Revision)
	}
	fe.wantTable(t, "1 of 2 servers live", "live      8      3  http://10.0.0.2:8080  2026-11-24T04:59:00Z                     -", "dead      0      1                     -                     -  2026-11-24T05:00:00Z", "takeovers: 1", "2026-11-24T05:00:00Z   bs0  bs1      4         2")
}

// applyAddedNode: an added node is a new revision, stored with the new node and hash.
func (fe *fleetEtcd) applyAddedNode(t *testing.T) {
	testfix.WriteFile(t, fe.inventory(), []byte(applyFleetInventory(9)))
	code, out, errs := runBootctl(t, fe.ctx, "fleet", "apply", "-f", fe.file, "--etcd", fe.etcd, "--sign-key", fe.key, "-o", "json")
	if code != 0 {
		t.Fatalf("apply 9 nodes: %d\n%s", code, errs)
	}
	fe.second = decodeJSONOut[bootsrv.FleetApplyResult](t, out)
	if fe.second.Revision <= fe.first.Revision || fe.second.Number != 2 || !fe.second.Changed || fe.second.Nodes != 9 || fe.second.SHA256 == fe.first.SHA256 {
		t.Errorf("second apply: %+v after %+v", fe.second, fe.first)
	}
	cur, err := fe.bs1.Config(fe.ctx)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := bootconfig.DecodeFleetDoc(cur.Doc)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Revision != fe.second.Revision || doc.Hash() != fe.second.SHA256 || !strings.Contains(doc.Inventory.Text, "n8,") {
		t.Errorf("stored revision %d sha256 %s, want %d %s with n8", cur.Revision, doc.Hash(), fe.second.Revision, fe.second.SHA256)
	}
}

// applyBadInventory: a bad inventory exits 2 naming its line, and the revision stays.
func (fe *fleetEtcd) applyBadInventory(t *testing.T) {
	inv := fe.inventory()
	testfix.WriteFile(t, inv, []byte(strings.Replace(applyFleetInventory(10), "52:54:00:00:02:09", "52:54:00:00:02:zz", 1)))
	code, out, errs := runBootctl(t, fe.ctx, "fleet", "apply", "-f", fe.file, "--etcd", fe.etcd, "--sign-key", fe.key)
	if code != 2 || !strings.HasPrefix(errs, "bootctl fleet apply: "+inv+":11: mac: ") || strings.Count(strings.TrimSpace(errs), "\n") > 0 || out != "" {
		t.Errorf("bad apply: %d, stderr %q, stdout %q", code, errs, out)
	}
	if cur, err := fe.bs1.Config(fe.ctx); err != nil || cur.Revision != fe.second.Revision {
		t.Errorf("revision after a refused apply: %d, %v; want %d", cur.Revision, err, fe.second.Revision)
	}
}

// unreadableRevision: a revision this bootctl cannot read (fleet "raw") is named as such, not as
// an etcd failure.
func (fe *fleetEtcd) unreadableRevision(t *testing.T) {
	raw, err := fleet.Open(fe.ctx, fleet.Options{Endpoints: fe.cluster.Endpoints, Fleet: "raw"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	key, err := fleet.LoadSigningKey(fe.key)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := raw.ApplyConfig(fe.ctx, []byte(`{"version": 99}`), key)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errs := runBootctl(t, fe.ctx, "fleet", "status", "--etcd", fe.etcd, "--fleet", "raw")
	if want := fmt.Sprintf("bootctl fleet status: revision %d: fleet configuration: version 99, this bootctl reads 1\n", rev); code != 1 || errs != want {
		t.Errorf("unreadable revision: %d %q, want %q", code, errs, want)
	}
}

func TestFleetStatusEtcdDown(t *testing.T) {
	ctx := context.Background()
	code, out, errs := runBootctl(t, ctx, "fleet", "status", "--etcd", "127.0.0.1:1,127.0.0.1:2")
	if code != 1 || !strings.HasPrefix(errs, "bootctl fleet status: etcd at 127.0.0.1:1 unreachable: ") || !strings.Contains(errs, "127.0.0.1:2") || strings.Count(strings.TrimSpace(errs), "\n") > 0 || out != "" {
		t.Errorf("exit %d, stderr %q, stdout %q", code, errs, out)
	}
}
