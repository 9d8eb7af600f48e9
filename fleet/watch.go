package fleet

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// watcher receives what watchKeys sees: reset with a full read (at start and after a compaction)
// and apply with each batch of changes after it. Both return false when ctx ended while they
// delivered, which ends the watch.
type watcher struct {
	reset func(kvs []*mvccpb.KeyValue, rev int64) bool
	apply func(evs []*clientv3.Event, rev int64) bool
}

// watchKeys reads key (or every key under it, with prefix) and then follows its changes until ctx
// ends or the client is closed. After a watch error it resumes from the revision after the last
// one delivered, so no change is lost or repeated; after a compaction made that revision
// unavailable it reads everything again. It never gives up while ctx lives.
func (c *Client) watchKeys(ctx context.Context, op, key string, prefix bool, w watcher) {
	var next int64 // revision to watch from; 0: read first
	for failures := 0; ; failures++ {
		if c.ended(ctx) {
			return
		}
		if next == 0 {
			kvs, rev, err := c.readKeys(ctx, op, key, prefix)
			if err != nil {
				c.log.Debug("watch: read failed, retrying", zap.String("key", key), zap.Error(err))
				if !sleep(ctx, backoff(failures)) {
					return
				}
				continue
			}
			if !w.reset(kvs, rev) {
				return
			}
			next = rev + 1
		}
		run := c.follow(ctx, key, prefix, next, w)
		if run.stopped || c.ended(ctx) {
			return
		}
		next = run.next
		if run.delivered {
			failures = 0
		}
		if run.err != nil && !errors.Is(run.err, context.Canceled) {
			c.log.Debug("watch: error, resuming", zap.String("key", key), zap.Int64("from", next), zap.Error(run.err))
		}
		if !sleep(ctx, backoff(failures)) {
			return
		}
	}
}

// ended says whether ctx ended or the client was closed: either ends a watch.
func (c *Client) ended(ctx context.Context) bool {
	return ctx.Err() != nil || c.cli.Ctx().Err() != nil
}

// watchRun is what one watch stream delivered before it ended.
type watchRun struct {
	next      int64 // the revision to watch from next; 0: read everything again (compacted)
	delivered bool  // changes arrived: the stream worked, so the failures start again from 0
	err       error // why the stream failed, if it did
	stopped   bool  // the watcher's apply returned false: the watch ends
}

// follow watches key (or every key under it) from revision next and hands each batch of changes
// to w.apply, until the stream ends (an error, a lost leader, ctx) or a compaction made next
// unavailable.
func (c *Client) follow(ctx context.Context, key string, prefix bool, next int64, w watcher) watchRun {
	run := watchRun{next: next}
	opts := []clientv3.OpOption{clientv3.WithRev(next)}
	if prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	// WithRequireLeader ends the watch when its member loses the cluster's leader, so that a
	// watch on the minority side of a partition is moved to another member instead of
	// waiting silently.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range c.cli.Watch(wctx, key, opts...) {
		if wr.CompactRevision != 0 {
			c.log.Info("watch: revision compacted, reading again", zap.String("key", key),
				zap.Int64("from", run.next), zap.Int64("compacted", wr.CompactRevision))
			run.next = 0
			return run
		}
		if run.err = wr.Err(); run.err != nil {
			return run
		}
		if len(wr.Events) == 0 {
			continue
		}
		run.delivered = true
		if !w.apply(wr.Events, wr.Header.Revision) {
			run.stopped = true
			return run
		}
		run.next = wr.Events[len(wr.Events)-1].Kv.ModRevision + 1
	}
	return run
}

// readKeys reads key, or every key under it.
func (c *Client) readKeys(ctx context.Context, op, key string, prefix bool) ([]*mvccpb.KeyValue, int64, error) {
	if prefix {
		return c.getPrefix(ctx, op, key)
	}
	var resp *clientv3.GetResponse
	err := c.do(ctx, op, func(ctx context.Context) (err error) {
		resp, err = c.cli.Get(ctx, key)
		return err
	})
	if err != nil {
		return nil, 0, c.wrap(op, err)
	}
	return resp.Kvs, resp.Header.Revision, nil
}

// send delivers v on ch unless ctx ends first.
func send[T any](ctx context.Context, ch chan<- T, v T) bool {
	select {
	case ch <- v:
		return true
	case <-ctx.Done():
		return false
	}
}
