package fleet

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

func TestValidFleetName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"prod", true},
		{"rack-7", true},
		{"0", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"", false},
		{"Prod", false},
		{"a/b", false},
		{"a_b", false},
		{"a b", false},
	} {
		if err := ValidFleetName(tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidFleetName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	ctx := ctxFor(t, 10*time.Second)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"bad fleet", Options{Endpoints: []string{"127.0.0.1:1"}, Fleet: "A"}, "fleet name"},
		{"no endpoints", Options{Fleet: "a"}, "no etcd endpoints"},
		{"unreachable", Options{Endpoints: []string{"127.0.0.1:1"}, Fleet: "a", DialTimeout: 300 * time.Millisecond}, "etcd at 127.0.0.1:1 unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Open(ctx, tc.opts)
			if err == nil {
				c.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open: %v, want it to say %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}

func TestMargin(t *testing.T) {
	for _, tc := range []struct{ ttl, want time.Duration }{
		{time.Second, 500 * time.Millisecond},
		{time.Second + 400*time.Millisecond, 500 * time.Millisecond},
		{3 * time.Second, time.Second},
		{30 * time.Second, 10 * time.Second},
	} {
		if got := Margin(tc.ttl); got != tc.want {
			t.Errorf("Margin(%v) = %v, want %v", tc.ttl, got, tc.want)
		}
	}
}

func TestConfigEncoding(t *testing.T) {
	small := []byte("servers: [bs0, bs1]\n")
	big := make([]byte, 2<<20) // random: does not compress
	rand.Read(big)
	for _, tc := range []struct {
		name    string
		doc     []byte
		wantErr error
	}{
		{"small", small, nil},
		{"empty", nil, nil},
		{"compressible 8 MiB", bytes.Repeat([]byte("node,aa:bb:cc:dd:ee:ff,10.0.0.1\n"), 8<<20/32), nil},
		{"random 2 MiB", big, ErrConfigTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := sha256.Sum256(tc.doc)
			v, err := encodeConfig(tc.doc, sum, "test", 5, testKey)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("encode: %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			again, _ := encodeConfig(tc.doc, sum, "test", 5, testKey)
			if !bytes.Equal(v, again) {
				t.Error("encoding not deterministic")
			}
			cr, err := decodeConfig("test", &mvccpb.KeyValue{Value: v, ModRevision: 7})
			if err != nil || !bytes.Equal(cr.Doc, tc.doc) || cr.Revision != 7 || cr.Serial != 5 {
				t.Fatalf("decode: %v, %d bytes rev %d serial %d", err, len(cr.Doc), cr.Revision, cr.Serial)
			}
			v[len(v)-8] ^= 1 // gzip's CRC-32
			if _, err := decodeConfig("test", &mvccpb.KeyValue{Value: v}); err == nil {
				t.Error("corrupt value decoded")
			}
		})
	}
	if _, err := decodeConfig("test", &mvccpb.KeyValue{Value: []byte("plain yaml")}); err == nil {
		t.Error("foreign value decoded")
	}
}

// TestConfigSignature: a revision verifies only under the key that signed it, for the fleet it was
// signed for, with the serial and document it was signed with.
func TestConfigSignature(t *testing.T) {
	doc := []byte("servers: [bs0]\n")
	sum := sha256.Sum256(doc)
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	trusted := []ed25519.PublicKey{testKey.Public().(ed25519.PublicKey)}
	signed, err := encodeConfig(doc, sum, "test", 42, testKey)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte { v := bytes.Clone(signed); v[i] ^= 1; return v }
	unsigned := append([]byte(configMagicUnsigned), sum[:]...)
	unsigned = append(unsigned, signed[configHeader:]...)
	bySigned, _ := encodeConfig(doc, sum, "test", 42, other)
	for _, tc := range []struct {
		name  string
		fleet string
		value []byte
		want  error // nil: verifies
	}{
		{"signed", "test", signed, nil},
		{"read from another fleet", "prod", signed, ErrUntrusted},
		{"serial changed", "test", flip(len(configMagic) + sha256.Size + 7), ErrUntrusted},
		{"signature changed", "test", flip(configHeader - 1), ErrUntrusted},
		{"other key", "test", bySigned, ErrUntrusted},
		{"unsigned format", "test", unsigned, ErrUnsigned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr, err := decodeConfig(tc.fleet, &mvccpb.KeyValue{Value: tc.value, ModRevision: 3})
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if err := cr.Verify(trusted); !errors.Is(err, tc.want) {
				t.Errorf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
	// A changed document fails its sha256 before any signature is looked at.
	if _, err := decodeConfig("test", &mvccpb.KeyValue{Value: flip(len(configMagic))}); err == nil {
		t.Error("value with a changed sha256 decoded")
	}
}

// TestKeyFiles: keygen's files load back; a private key others can read, a public key given as the
// private one, and garbage are refused with the file's name.
func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	priv, pub, err := GenerateSigningKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	k, err := LoadSigningKey(write("key", priv, 0o600))
	if err != nil {
		t.Fatalf("LoadSigningKey: %v", err)
	}
	keys, err := LoadTrustedKeys(write("key.pub", append(bytes.Clone(pub), pub...), 0o644))
	if err != nil || len(keys) != 2 || !keys[0].Equal(k.Public()) {
		t.Fatalf("LoadTrustedKeys = %d keys, %v", len(keys), err)
	}
	for _, tc := range []struct {
		name, want string
		load       func() error
	}{
		{"readable by others", "mode 0644", func() error { _, err := LoadSigningKey(write("open", priv, 0o644)); return err }},
		{"public as private", "PRIVATE KEY", func() error { _, err := LoadSigningKey(write("pubpriv", pub, 0o600)); return err }},
		{"private as public", `"PRIVATE KEY", want "PUBLIC KEY"`, func() error { _, err := LoadTrustedKeys(write("privpub", priv, 0o600)); return err }},
		{"no key", "no PEM", func() error { _, err := LoadTrustedKeys(write("empty", []byte("hello\n"), 0o644)); return err }},
	} {
		err := tc.load()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: %v, want an error naming the file and %q", tc.name, err, tc.want)
		}
	}
}
