package fleet

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
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
			v, err := encodeConfig(tc.doc, sum)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("encode: %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			again, _ := encodeConfig(tc.doc, sum)
			if !bytes.Equal(v, again) {
				t.Error("encoding not deterministic")
			}
			cr, err := decodeConfig(&mvccpb.KeyValue{Value: v, ModRevision: 7})
			if err != nil || !bytes.Equal(cr.Doc, tc.doc) || cr.Revision != 7 {
				t.Fatalf("decode: %v, %d bytes rev %d", err, len(cr.Doc), cr.Revision)
			}
			v[len(v)-8] ^= 1 // gzip's CRC-32
			if _, err := decodeConfig(&mvccpb.KeyValue{Value: v}); err == nil {
				t.Error("corrupt value decoded")
			}
		})
	}
	if _, err := decodeConfig(&mvccpb.KeyValue{Value: []byte("plain yaml")}); err == nil {
		t.Error("foreign value decoded")
	}
}
