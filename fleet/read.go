package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// pageSize is how many keys one range request returns: a fleet's records of one kind can be tens
// of thousands, and one response of them all would be tens of megabytes.
const pageSize = 1000

// getPrefix reads every key under prefix at one revision (the first page's), page by page, and
// returns them in key order with that revision.
func (c *Client) getPrefix(ctx context.Context, op, prefix string) ([]*mvccpb.KeyValue, int64, error) {
	end := clientv3.GetPrefixRangeEnd(prefix)
	var (
		kvs []*mvccpb.KeyValue
		rev int64
	)
	from := prefix
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		var resp *clientv3.GetResponse
		err := c.do(ctx, op, func(ctx context.Context) (err error) {
			resp, err = c.cli.Get(ctx, from, opts...)
			return err
		})
		if err != nil {
			return nil, 0, c.wrap(op, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		kvs = append(kvs, resp.Kvs...)
		if !resp.More || len(resp.Kvs) == 0 {
			return kvs, rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// wrap names the operation and the endpoints in an etcd error, and says what to do.
func (c *Client) wrap(op string, err error) error {
	hint := "check that etcd is up and reachable"
	switch {
	case errors.Is(err, rpctypes.ErrPermissionDenied):
		hint = fmt.Sprintf("etcd's authentication is on and %s may not do this: see its roles (bootctl fleet auth)", c.user())
	case errors.Is(err, rpctypes.ErrUserEmpty), errors.Is(err, rpctypes.ErrInvalidAuthToken), errors.Is(err, rpctypes.ErrAuthFailed):
		hint = "etcd's authentication is on: connect with a client certificate or a user and password"
	}
	return fmt.Errorf("fleet %s: %s: etcd at %v: %w (%s)", c.fleet, op, c.opts.Endpoints, err, hint)
}

// user names the etcd user the client connects as, as far as it knows.
func (c *Client) user() string {
	switch {
	case c.opts.Username != "":
		return "user " + c.opts.Username
	case c.opts.TLS != nil && len(c.opts.TLS.Certificates) > 0 && c.opts.TLS.Certificates[0].Leaf != nil:
		return "user " + c.opts.TLS.Certificates[0].Leaf.Subject.CommonName + " (the certificate's common name)"
	}
	return "this client's user"
}

// backoff returns the wait before retry n (from 0): 100 ms doubling to 2 s.
func backoff(n int) time.Duration {
	d := 100 * time.Millisecond
	for i := 0; i < n && d < 2*time.Second; i++ {
		d *= 2
	}
	return min(d, 2*time.Second)
}

// sleep waits d or until ctx ends, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
