package fleet

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// MaxConfigSize is the largest compressed configuration ApplyConfig stores: etcd refuses requests
// over 1.5 MiB by default, and every server reads the whole value at every revision.
const MaxConfigSize = 1 << 20

// maxConfigDoc bounds a configuration's uncompressed size when it is read, so that a corrupt or
// hostile value cannot make every server inflate gigabytes.
const maxConfigDoc = 256 << 20

// Every stored configuration value starts with its format's name and version: bfc2 is signed
// (signing.go), bfc1 is the unsigned format of earlier versions, read only to be refused clearly.
const (
	configMagic         = "bfc2"
	configMagicUnsigned = "bfc1"
)

// configHeader is the length of a bfc2 value's fixed part: magic, sha256 of the document, serial,
// signing key's id, signature.
const configHeader = len(configMagic) + sha256.Size + 8 + 8 + ed25519.SignatureSize

var (
	// ErrNoConfig is returned when the fleet has no configuration yet.
	ErrNoConfig = errors.New("fleet has no configuration (run bootctl fleet apply)")
	// ErrConfigTooLarge is returned by ApplyConfig for a document over MaxConfigSize compressed.
	ErrConfigTooLarge = errors.New("configuration too large")
)

// ConfigRevision is one stored configuration.
type ConfigRevision struct {
	Doc      []byte // the document as applied
	SHA256   string // hex sha256 of Doc
	Revision int64  // etcd revision of the write: increases with every new configuration
	// Number counts the configurations the fleet's key has held: 1 for the first applied (etcd's
	// version of the key). The etcd revision is shared by every key of the store, so an empty
	// etcd's first configuration is at revision 2 or later; this is the number to show people.
	Number int64
	// Serial is the signed sequence number: it grows with every revision the operator applies,
	// so a server can refuse an older revision written back (signing.go).
	Serial uint64
	// KeyID names the key that signed the revision (KeyID); Signature is the signature, empty
	// for an unsigned revision. Verify checks them.
	KeyID     string
	Signature []byte

	fleet string // the fleet it was read from: part of what is signed
	value []byte // the value as etcd stores it: a server keeps it to serve again (Trust.Last)
}

// ErrConflict is returned by PublishConfig when the configuration it built on is no longer the
// current one: another was written in between, and writing over it would lose its change.
var ErrConflict = errors.New("a new configuration was written meanwhile")

// PublishOptions say what a new revision builds on.
type PublishOptions struct {
	// Trusted are the keys the servers trust (their --config-key); the signing key is added. The
	// current revision counts (its serial, the same-document shortcut) only when CheckRevision
	// passes it under them: a forged one must not push the serials on.
	Trusted []ed25519.PublicKey
	// Base, when not 0, is the etcd revision of the configuration the document was edited from:
	// when another is current at the write, nothing is written (ErrConflict).
	Base int64
	// After is a serial the new one must exceed: the newest a server says it applied, so that the
	// servers do not take the new revision for a rollback.
	After uint64
}

// ApplyConfig is PublishConfig with the signing key alone trusted and nothing to build on.
func (c *Client) ApplyConfig(ctx context.Context, doc []byte, key ed25519.PrivateKey) (int64, error) {
	rev, _, err := c.PublishConfig(ctx, doc, key, PublishOptions{})
	return rev.Revision, err
}

// PublishConfig signs doc with key and stores it as the fleet's configuration, returning the
// revision now current and whether it was written. A document equal to the current revision, which
// CheckRevision passes and whose serial exceeds opts.After, is not written again, so applying the
// same file twice does not make every server reload. The write is a transaction on the revision
// read, so that nothing written in between (a forgery, another operator's apply) is overwritten
// unseen: that is ErrConflict.
func (c *Client) PublishConfig(ctx context.Context, doc []byte, key ed25519.PrivateKey, opts PublishOptions) (ConfigRevision, bool, error) {
	if len(key) != ed25519.PrivateKeySize {
		return ConfigRevision{}, false, errors.New("apply config: no signing key")
	}
	trusted := append(slices.Clone(opts.Trusted), key.Public().(ed25519.PublicKey))
	sum := sha256.Sum256(doc)
	now := c.opts.Now()
	// The serial is the time of the apply, or one more than the current revision's or the newest
	// applied when the operator's clock is behind them (within MaxSerialAhead, which the check
	// bounds).
	serial := max(uint64(now.UnixNano()), opts.After+1)
	// A value that does not even decode is no revision to build on: it is written over, which is
	// how the operator recovers from one.
	var read int64
	kv, err := c.configKV(ctx)
	switch {
	case err == nil:
		read = kv.ModRevision
		cur, derr := decodeConfig(c.fleet, kv)
		if derr != nil || CheckRevision(cur, trusted, now) != nil || cur.Serial <= opts.After {
			break
		}
		if cur.SHA256 == hex.EncodeToString(sum[:]) && (opts.Base == 0 || opts.Base == cur.Revision) {
			return cur, false, nil
		}
		serial = max(serial, cur.Serial+1)
	case !errors.Is(err, ErrNoConfig):
		return ConfigRevision{}, false, err
	}
	if opts.Base != 0 && read != opts.Base {
		return ConfigRevision{}, false, fmt.Errorf("%w (etcd revision %d, built on %d)", ErrConflict, read, opts.Base)
	}
	val, err := encodeConfig(doc, sum, c.fleet, serial, key)
	if err != nil {
		return ConfigRevision{}, false, err
	}
	out, err := c.putConfigIf(ctx, read, val)
	return out, err == nil, err
}

// putConfigIf writes val as the configuration if its key is still at etcd revision read (0: absent).
func (c *Client) putConfigIf(ctx context.Context, read int64, val []byte) (ConfigRevision, error) {
	k := c.keys.config()
	var resp *clientv3.TxnResponse
	err := c.do(ctx, "config_put", func(ctx context.Context) (err error) {
		resp, err = c.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", read)).
			Then(clientv3.OpPut(k, string(val)), clientv3.OpGet(k)).Commit()
		return err
	})
	if err != nil {
		return ConfigRevision{}, c.wrap("apply config", err)
	}
	if !resp.Succeeded {
		return ConfigRevision{}, fmt.Errorf("%w (since etcd revision %d was read)", ErrConflict, read)
	}
	kvs := resp.Responses[1].GetResponseRange().Kvs
	if len(kvs) != 1 {
		return ConfigRevision{}, fmt.Errorf("apply config: the configuration is gone right after its write")
	}
	return decodeConfig(c.fleet, kvs[0])
}

// Config returns the fleet's current configuration, or ErrNoConfig.
func (c *Client) Config(ctx context.Context) (ConfigRevision, error) {
	kv, err := c.configKV(ctx)
	if err != nil {
		return ConfigRevision{}, err
	}
	return decodeConfig(c.fleet, kv)
}

// configKV reads the configuration's key as etcd stores it, or ErrNoConfig.
func (c *Client) configKV(ctx context.Context) (*mvccpb.KeyValue, error) {
	var resp *clientv3.GetResponse
	err := c.do(ctx, "config_get", func(ctx context.Context) (err error) {
		resp, err = c.cli.Get(ctx, c.keys.config())
		return err
	})
	if err != nil {
		return nil, c.wrap("read config", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, ErrNoConfig
	}
	return resp.Kvs[0], nil
}

// WatchConfig delivers the current configuration (when there is one) and then every new one, in
// revision order, until ctx ends or the client is closed; then the channel is closed. It survives
// etcd restarts, member failures and compactions (after a compaction it delivers the current
// configuration, skipping revisions it can no longer see). A stored value that cannot be decoded
// is logged and skipped.
func (c *Client) WatchConfig(ctx context.Context) <-chan ConfigRevision {
	ch := make(chan ConfigRevision)
	var last int64
	deliver := func(kv *mvccpb.KeyValue) bool {
		if kv.ModRevision <= last {
			return true
		}
		cr, err := decodeConfig(c.fleet, kv)
		if err != nil {
			c.log.Sugar().Errorf("fleet %s: skipping configuration revision %d: %v", c.fleet, kv.ModRevision, err)
			return true
		}
		last = kv.ModRevision
		return send(ctx, ch, cr)
	}
	go func() {
		defer close(ch)
		c.watchKeys(ctx, "config_watch", c.keys.config(), false, watcher{
			reset: func(kvs []*mvccpb.KeyValue, _ int64) bool {
				for _, kv := range kvs {
					if !deliver(kv) {
						return false
					}
				}
				return true
			},
			apply: func(evs []*clientv3.Event, _ int64) bool {
				for _, ev := range evs {
					if ev.Type == clientv3.EventTypePut && !deliver(ev.Kv) {
						return false
					}
				}
				return true
			},
		})
	}()
	return ch
}

// encodeConfig makes the stored value: magic, sha256 of the document, serial, the signing key's
// id and the signature (signing.go), gzip of the document.
func encodeConfig(doc []byte, sum [32]byte, fleet string, serial uint64, key ed25519.PrivateKey) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(configMagic)
	buf.Write(sum[:])
	buf.Write(binary.BigEndian.AppendUint64(nil, serial))
	id, _ := hex.DecodeString(KeyID(key.Public().(ed25519.PublicKey)))
	buf.Write(id)
	buf.Write(ed25519.Sign(key, signedMessage(fleet, serial, sum[:])))
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(doc); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if n := buf.Len(); n > MaxConfigSize {
		return nil, fmt.Errorf("%w: %d bytes compressed (%d uncompressed), limit %d: keep image files out of the configuration", ErrConfigTooLarge, n, len(doc), MaxConfigSize)
	}
	return buf.Bytes(), nil
}

// decodeConfig checks and inflates a stored configuration; the signature is Verify's business. An
// unsigned (bfc1) value decodes with no signature, so that the refusal can say so.
func decodeConfig(fleet string, kv *mvccpb.KeyValue) (ConfigRevision, error) {
	v := kv.Value
	cr := ConfigRevision{Revision: kv.ModRevision, Number: kv.Version, fleet: fleet, value: bytes.Clone(v)}
	var want, body []byte
	switch {
	case len(v) >= configHeader && string(v[:len(configMagic)]) == configMagic:
		h := v[len(configMagic):]
		want, h = h[:sha256.Size], h[sha256.Size:]
		cr.Serial, h = binary.BigEndian.Uint64(h[:8]), h[8:]
		cr.KeyID, h = hex.EncodeToString(h[:8]), h[8:]
		cr.Signature = bytes.Clone(h[:ed25519.SignatureSize])
		body = v[configHeader:]
	case len(v) >= len(configMagicUnsigned)+sha256.Size && string(v[:len(configMagicUnsigned)]) == configMagicUnsigned:
		want, body = v[len(configMagicUnsigned):len(configMagicUnsigned)+sha256.Size], v[len(configMagicUnsigned)+sha256.Size:]
	default:
		return ConfigRevision{}, fmt.Errorf("configuration at revision %d: not a %s value", kv.ModRevision, configMagic)
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return ConfigRevision{}, fmt.Errorf("configuration at revision %d: %w", kv.ModRevision, err)
	}
	doc, err := io.ReadAll(io.LimitReader(zr, maxConfigDoc+1))
	if err != nil {
		return ConfigRevision{}, fmt.Errorf("configuration at revision %d: %w", kv.ModRevision, err)
	}
	if len(doc) > maxConfigDoc {
		return ConfigRevision{}, fmt.Errorf("configuration at revision %d: over %d bytes uncompressed", kv.ModRevision, maxConfigDoc)
	}
	sum := sha256.Sum256(doc)
	if !bytes.Equal(sum[:], want) {
		return ConfigRevision{}, fmt.Errorf("configuration at revision %d: sha256 mismatch (corrupt value)", kv.ModRevision)
	}
	cr.Doc, cr.SHA256 = doc, hex.EncodeToString(sum[:])
	return cr, nil
}
