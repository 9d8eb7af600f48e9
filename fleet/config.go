package fleet

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// MaxConfigSize is the largest compressed configuration ApplyConfig stores: etcd refuses requests
// over 1.5 MiB by default, and every server reads the whole value at every revision.
const MaxConfigSize = 1 << 20

// maxConfigDoc bounds a configuration's uncompressed size when it is read, so that a corrupt or
// hostile value cannot make every server inflate gigabytes.
const maxConfigDoc = 256 << 20

// configMagic starts every stored configuration value: the format's name and version.
const configMagic = "bfc1"

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
}

// ApplyConfig stores doc as the fleet's configuration and returns its revision. A document equal
// to the stored one is not written again: its revision is returned, so applying the same file
// twice does not make every server reload.
func (c *Client) ApplyConfig(ctx context.Context, doc []byte) (int64, error) {
	sum := sha256.Sum256(doc)
	val, err := encodeConfig(doc, sum)
	if err != nil {
		return 0, err
	}
	cur, err := c.Config(ctx)
	switch {
	case err == nil && cur.SHA256 == hex.EncodeToString(sum[:]):
		return cur.Revision, nil
	case err != nil && !errors.Is(err, ErrNoConfig):
		return 0, err
	}
	var resp *clientv3.PutResponse
	err = c.do(ctx, "config_put", func(ctx context.Context) (err error) {
		resp, err = c.cli.Put(ctx, c.keys.config(), string(val))
		return err
	})
	if err != nil {
		return 0, c.wrap("apply config", err)
	}
	return resp.Header.Revision, nil
}

// Config returns the fleet's current configuration, or ErrNoConfig.
func (c *Client) Config(ctx context.Context) (ConfigRevision, error) {
	var resp *clientv3.GetResponse
	err := c.do(ctx, "config_get", func(ctx context.Context) (err error) {
		resp, err = c.cli.Get(ctx, c.keys.config())
		return err
	})
	if err != nil {
		return ConfigRevision{}, c.wrap("read config", err)
	}
	if len(resp.Kvs) == 0 {
		return ConfigRevision{}, ErrNoConfig
	}
	return decodeConfig(resp.Kvs[0])
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
		cr, err := decodeConfig(kv)
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

// encodeConfig makes the stored value: magic, sha256 of the document, gzip of the document.
// gzip with no name and no time is deterministic, so equal documents give equal values.
func encodeConfig(doc []byte, sum [32]byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(configMagic)
	buf.Write(sum[:])
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

// decodeConfig checks and inflates a stored configuration.
func decodeConfig(kv *mvccpb.KeyValue) (ConfigRevision, error) {
	v := kv.Value
	if len(v) < len(configMagic)+sha256.Size || string(v[:len(configMagic)]) != configMagic {
		return ConfigRevision{}, fmt.Errorf("configuration at revision %d: not a %s value", kv.ModRevision, configMagic)
	}
	want := v[len(configMagic) : len(configMagic)+sha256.Size]
	zr, err := gzip.NewReader(bytes.NewReader(v[len(configMagic)+sha256.Size:]))
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
	return ConfigRevision{Doc: doc, SHA256: hex.EncodeToString(sum[:]), Revision: kv.ModRevision}, nil
}
