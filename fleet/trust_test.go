package fleet

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// signedRevision is doc signed by key with serial, as a server reads it from etcd.
func signedRevision(t *testing.T, doc string, serial uint64, key ed25519.PrivateKey, etcdRev int64) ConfigRevision {
	t.Helper()
	v, err := encodeConfig([]byte(doc), sha256.Sum256([]byte(doc)), "test", serial, key)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := decodeConfig("test", &mvccpb.KeyValue{Value: v, ModRevision: etcdRev, Version: etcdRev - 1})
	if err != nil {
		t.Fatal(err)
	}
	return cr
}

// TestTrustCheck: a server applies a revision signed by a trusted key whose serial is neither
// below the last it applied nor more than MaxSerialAhead ahead of its clock, so that a revision
// signed far in the future (a skewed clock, a leaked retiring key) cannot hold back every later
// one.
func TestTrustCheck(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) uint64 { return uint64(now.Add(d).UnixNano()) }
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	tr, err := OpenTrust([]ed25519.PublicKey{testKey.Public().(ed25519.PublicKey)}, filepath.Join(t.TempDir(), "applied.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr.now = func() time.Time { return now }
	applied := signedRevision(t, "v1", at(-time.Hour), testKey, 5)
	if err := tr.Check(applied); err != nil {
		t.Fatalf("first revision: %v", err)
	}
	if err := tr.Record(applied); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rev  ConfigRevision
		want error // nil: applied
	}{
		{"the one applied, again", applied, nil},
		{"newer", signedRevision(t, "v2", at(0), testKey, 6), nil},
		{"ahead within the limit", signedRevision(t, "v2", at(MaxSerialAhead-time.Second), testKey, 6), nil},
		{"an hour ahead", signedRevision(t, "v2", at(time.Hour), testKey, 6), ErrSerialAhead},
		{"the last serial", signedRevision(t, "v2", math.MaxUint64, testKey, 6), ErrSerialAhead},
		{"older", signedRevision(t, "v0", at(-2*time.Hour), testKey, 6), ErrRollback},
		{"same serial, other document", signedRevision(t, "v9", at(-time.Hour), testKey, 6), ErrRollback},
		{"untrusted key", signedRevision(t, "v2", at(0), other, 6), ErrUntrusted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tr.Check(tc.rev)
			if !errors.Is(err, tc.want) {
				t.Errorf("Check = %v, want %v", err, tc.want)
			}
			t.Log(err)
		})
	}
}

// TestTrustLast: the record keeps the revision applied, so that a restarted server can serve it
// while the current one is refused; it is given back only for its fleet and while its key is
// trusted, and a record of an earlier version (serial and sha256 only) still guards rollbacks.
func TestTrustLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "applied.json")
	pub := testKey.Public().(ed25519.PublicKey)
	tr, err := OpenTrust([]ed25519.PublicKey{pub}, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Last("test"); ok {
		t.Fatal("a fresh server has a last revision")
	}
	rev := signedRevision(t, "servers: [bs0]\n", uint64(time.Now().UnixNano()), testKey, 9)
	if err := tr.Record(rev); err != nil {
		t.Fatal(err)
	}
	again, err := OpenTrust([]ed25519.PublicKey{pub}, path)
	if err != nil {
		t.Fatal(err)
	}
	last, ok := again.Last("test")
	if !ok || !bytes.Equal(last.Doc, rev.Doc) || last.Revision != 9 || last.Number != 8 || last.Serial != rev.Serial || again.Check(last) != nil {
		t.Fatalf("Last after a restart = %+v, %v", last, ok)
	}
	if _, ok := again.Last("prod"); ok {
		t.Error("Last gave the revision of fleet test to fleet prod")
	}
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	rotated, err := OpenTrust([]ed25519.PublicKey{other.Public().(ed25519.PublicKey)}, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rotated.Last("test"); ok {
		t.Error("Last gave a revision whose key is no longer trusted")
	}
	old := filepath.Join(t.TempDir(), "old.json")
	os.WriteFile(old, []byte(`{"serial": `+strconv.FormatUint(rev.Serial, 10)+`, "sha256": "`+rev.SHA256+`"}`), 0o600)
	before, err := OpenTrust([]ed25519.PublicKey{pub}, old)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before.Last("test"); ok {
		t.Error("an old record without the revision gave one")
	}
	if err := before.Check(signedRevision(t, "v0", rev.Serial-1, testKey, 10)); !errors.Is(err, ErrRollback) {
		t.Errorf("old record: Check of an older revision = %v, want %v", err, ErrRollback)
	}
}
