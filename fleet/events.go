package fleet

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Event is one appended event.
type Event struct {
	Seq      int64 // 1, 2, ... per kind, in append order across the fleet
	Revision int64 // etcd revision of the append
	Rec      []byte
}

// maxAppendTries bounds AppendEvent's retries when other servers append to the same kind at once.
const maxAppendTries = 64

// AppendEvent appends rec to the events of kind (takeovers, say) and returns its sequence number.
// The sequence is the version of the kind's counter key, bumped in the same transaction that
// writes the event, so sequence numbers are dense and ordered across the fleet.
func (c *Client) AppendEvent(ctx context.Context, kind string, rec []byte) (int64, error) {
	if err := validElement("event kind", kind); err != nil {
		return 0, err
	}
	seqKey := c.keys.eventSeq(kind)
	for try := 0; try < maxAppendTries; try++ {
		kv, err := c.getKey(ctx, "event_seq", seqKey)
		if err != nil {
			return 0, err
		}
		var version int64
		if kv != nil {
			version = kv.Version
		}
		seq := version + 1
		var resp *clientv3.TxnResponse
		err = c.do(ctx, "event_append", func(ctx context.Context) (err error) {
			resp, err = c.cli.Txn(ctx).
				If(clientv3.Compare(clientv3.Version(seqKey), "=", version)).
				Then(clientv3.OpPut(seqKey, strconv.FormatInt(seq, 10)),
					clientv3.OpPut(c.eventKey(kind, seq), string(rec))).
				Commit()
			return err
		})
		if err != nil {
			return 0, c.wrap("append event "+kind, err)
		}
		if resp.Succeeded {
			return seq, nil
		}
	}
	return 0, fmt.Errorf("fleet %s: append event %s: lost %d races, giving up", c.fleet, kind, maxAppendTries)
}

// Events returns the events of kind in sequence order.
func (c *Client) Events(ctx context.Context, kind string) ([]Event, error) {
	if err := validElement("event kind", kind); err != nil {
		return nil, err
	}
	prefix := c.keys.eventsPrefix(kind)
	kvs, _, err := c.getPrefix(ctx, "events_get", prefix)
	if err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(kvs))
	for _, kv := range kvs {
		seq, err := strconv.ParseInt(strings.TrimPrefix(string(kv.Key), prefix), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, Event{Seq: seq, Revision: kv.ModRevision, Rec: kv.Value})
	}
	return out, nil // zero-padded keys: key order is sequence order
}

// eventKey is events/KIND/SEQ, SEQ zero-padded to 20 digits so that key order is numeric order.
func (c *Client) eventKey(kind string, seq int64) string {
	return fmt.Sprintf("%s%020d", c.keys.eventsPrefix(kind), seq)
}

// TrimEvents deletes the events of kind older than the newest keep, in one request, so that a
// long-running fleet's history stays bounded.
func (c *Client) TrimEvents(ctx context.Context, kind string, keep int) error {
	if err := validElement("event kind", kind); err != nil {
		return err
	}
	kv, err := c.getKey(ctx, "event_seq", c.keys.eventSeq(kind))
	if err != nil || kv == nil {
		return err
	}
	last := kv.Version - int64(max(keep, 0)) // delete 1..last
	if last < 1 {
		return nil
	}
	return c.do(ctx, "events_trim", func(ctx context.Context) error {
		_, err := c.cli.Delete(ctx, c.eventKey(kind, 1), clientv3.WithRange(c.eventKey(kind, last+1)))
		if err != nil {
			return c.wrap("trim events "+kind, err)
		}
		return nil
	})
}
