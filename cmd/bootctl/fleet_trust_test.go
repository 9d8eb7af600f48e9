package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
)

// TestFleetEditRefusesForgery: someone with the operator's etcd access but not the signing key
// writes a revision into etcd; the operator's next node set must not sign it (exit 2, nothing
// written), and fleet apply of the operator's own file replaces it. Then an old revision of the
// operator's written back (a rollback) while a server runs a newer one: node set refuses it, and
// fleet apply of the same document as that old revision writes it again rather than call it
// unchanged.
func TestFleetEditRefusesForgery(t *testing.T) {
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
	raw := rawEtcd(t, cluster.Endpoints)
	firstValue := raw.get(ctx, fleet.Root+"default/config")

	// The attacker's revision: a node more, signed by a key of its own.
	cur, err := cl.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := bootconfig.DecodeFleetDoc(cur.Doc)
	if err != nil {
		t.Fatal(err)
	}
	forgedDoc, _, err := doc.WithInventory(doc.Inventory.Text + "evil,52:54:00:00:02:99,10.0.0.99,s0-b2-n0\n")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := forgedDoc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	forger := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize))
	forged, err := cl.ApplyConfig(ctx, enc, forger)
	if err != nil {
		t.Fatal(err)
	}
	wantRefused := func(t *testing.T, what string, code int, errs string, want ...string) {
		t.Helper()
		t.Logf("%s: %s", what, errs)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%s: exit %d, want 2 and one line: %q", what, code, errs)
		}
		for _, w := range append(want, "nothing is written", "bootctl fleet apply -f FILE") {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: stderr %q, want %q", what, errs, w)
			}
		}
	}
	code, _, errs := runBootctl(t, ctx, "node", "set", "n1", "--ip", "10.0.0.50", "--etcd", etcd, "--sign-key", key)
	wantRefused(t, "node set on a forgery", code, errs, "configuration 2 (etcd revision ", "is refused: configuration revision is not signed by a trusted key (signed by key "+fleet.KeyID(forger.Public().(ed25519.PublicKey)))
	code, _, errs = runBootctl(t, ctx, "node", "add", "n9", "--mac", "52:54:00:00:02:09", "--position", "s0-b2-n1", "--etcd", etcd, "--sign-key", key)
	wantRefused(t, "node add on a forgery", code, errs, "not signed by a trusted key")
	if now, err := cl.Config(ctx); err != nil || now.Revision != forged {
		t.Fatalf("after the refused edits: etcd revision %d (%v), want the forgery's %d untouched", now.Revision, err, forged)
	}

	// fleet apply of the operator's own file replaces the forgery, saying so.
	code, out, errs := runBootctl(t, ctx, "fleet", "apply", "-f", file, "--etcd", etcd, "--sign-key", key, "-o", "json")
	res := decodeJSONOut[bootsrv.FleetApplyResult](t, out)
	if code != 0 || !res.Changed || !strings.Contains(errs, "warning: fleet default: configuration 2 (etcd revision ") || !strings.Contains(errs, "replacing it with "+file) {
		t.Fatalf("fleet apply over a forgery: exit %d changed %v, stderr %q", code, res.Changed, errs)
	}
	third, err := cl.Config(ctx)
	if err != nil || third.Verify([]ed25519.PublicKey{mustPub(t, key)}) != nil || strings.Contains(string(third.Doc), "evil") {
		t.Fatalf("after fleet apply: %v, the operator's document signed by the operator's key expected", err)
	}

	// A server runs the third revision; the first one's value is written back.
	info, _ := json.Marshal(bootsrv.MemberInfo{URL: "http://10.0.0.1:8080", Running: &bootsrv.RevisionInfo{Revision: third.Revision, Number: third.Number, Serial: third.Serial, SHA256: third.SHA256}})
	bs0, err := cl.Join(ctx, "bs0", info, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer bs0.Leave(context.Background())
	raw.put(ctx, fleet.Root+"default/config", firstValue)
	code, _, errs = runBootctl(t, ctx, "node", "delete", "n7", "--etcd", etcd, "--sign-key", key)
	wantRefused(t, "node delete on a rollback", code, errs, "is refused: configuration revision is older than one applied before", "which server bs0 runs")
	code, out, errs = runBootctl(t, ctx, "fleet", "apply", "-f", file, "--etcd", etcd, "--sign-key", key, "--wait", "0", "-o", "json")
	res = decodeJSONOut[bootsrv.FleetApplyResult](t, out)
	after, _ := cl.Config(ctx)
	if code != 0 || !res.Changed || after.Serial <= third.Serial {
		t.Errorf("fleet apply of the rolled-back document: exit %d changed %v, serial %d after the server's %d; stderr %q", code, res.Changed, after.Serial, third.Serial, errs)
	}
}

// mustPub is the public key of the signing key file path.
func mustPub(t *testing.T, path string) ed25519.PublicKey {
	t.Helper()
	k, err := fleet.LoadSigningKey(path)
	if err != nil {
		t.Fatal(err)
	}
	return k.Public().(ed25519.PublicKey)
}
