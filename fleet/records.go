package fleet

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// MaxTxnOps is how many writes one transaction carries: etcd 3.4 refuses transactions of more
// than 128 operations by default (--max-txn-ops), and half of that leaves room for compares and
// for clusters configured lower.
const MaxTxnOps = 64

// PutRecords writes node records of one kind (records/KIND/NAME), MaxTxnOps per transaction, in
// name order. Each transaction is atomic; the batch as a whole is not: after an error, a prefix
// of the names (by order) may have been written.
func (c *Client) PutRecords(ctx context.Context, kind string, recs map[string][]byte) error {
	return c.putRecords(ctx, nil, kind, recs)
}

// PutRecordsIfMember is PutRecords for a server that may write only while it is a member: it
// fails with ErrFenced when m is nil or not Valid, and each transaction also compares that m's
// member key still holds m's lease, so a server fenced out while the batch was on its way writes
// nothing more. Use it for the records of the nodes a server owns, such as boot states.
func (c *Client) PutRecordsIfMember(ctx context.Context, m *Membership, kind string, recs map[string][]byte) error {
	if m == nil {
		// No membership is no right to write: never an unguarded write.
		return fmt.Errorf("fleet %s: records_put without a membership: %w", c.fleet, ErrFenced)
	}
	return c.putRecords(ctx, m, kind, recs)
}

func (c *Client) putRecords(ctx context.Context, m *Membership, kind string, recs map[string][]byte) error {
	if err := validElement("record kind", kind); err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(recs))
	for _, name := range names {
		if err := validElement("record name", name); err != nil {
			return err
		}
	}
	ops := make([]clientv3.Op, 0, len(names))
	for _, name := range names {
		ops = append(ops, clientv3.OpPut(c.keys.record(kind, name), string(recs[name])))
	}
	return c.batch(ctx, "records_put", m, ops)
}

// DeleteRecords deletes the named records of one kind, MaxTxnOps per transaction.
func (c *Client) DeleteRecords(ctx context.Context, kind string, names []string) error {
	if err := validElement("record kind", kind); err != nil {
		return err
	}
	ops := make([]clientv3.Op, 0, len(names))
	for _, name := range names {
		if err := validElement("record name", name); err != nil {
			return err
		}
		ops = append(ops, clientv3.OpDelete(c.keys.record(kind, name)))
	}
	return c.batch(ctx, "records_delete", nil, ops)
}

// Records returns every record of one kind, by name, read at one revision.
func (c *Client) Records(ctx context.Context, kind string) (map[string][]byte, error) {
	if err := validElement("record kind", kind); err != nil {
		return nil, err
	}
	prefix := c.keys.recordsPrefix(kind)
	kvs, _, err := c.getPrefix(ctx, "records_get", prefix)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(kvs))
	for _, kv := range kvs {
		out[strings.TrimPrefix(string(kv.Key), prefix)] = kv.Value
	}
	return out, nil
}

// batch commits ops in transactions of at most MaxTxnOps, each guarded by m's membership when m
// is not nil.
func (c *Client) batch(ctx context.Context, op string, m *Membership, ops []clientv3.Op) error {
	for start := 0; start < len(ops); start += MaxTxnOps {
		chunk := ops[start:min(start+MaxTxnOps, len(ops))]
		var cmps []clientv3.Cmp
		if m != nil {
			if !m.Valid() {
				return fmt.Errorf("fleet %s: %s as %s: %w", c.fleet, op, m.name, ErrFenced)
			}
			cmps = append(cmps, clientv3.Compare(clientv3.LeaseValue(c.keys.member(m.name)), "=", m.LeaseID()))
		}
		var resp *clientv3.TxnResponse
		err := c.do(ctx, op, func(ctx context.Context) (err error) {
			resp, err = c.cli.Txn(ctx).If(cmps...).Then(chunk...).Commit()
			return err
		})
		if err != nil {
			return c.wrap(op, err)
		}
		if !resp.Succeeded {
			return fmt.Errorf("fleet %s: %s as %s: member key no longer holds lease %x: %w", c.fleet, op, m.name, m.LeaseID(), ErrFenced)
		}
	}
	return nil
}
