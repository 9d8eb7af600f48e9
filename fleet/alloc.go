package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var (
	// ErrPoolExhausted is returned by PoolCache.Pick when every address is held by another MAC.
	ErrPoolExhausted = errors.New("address pool exhausted")
	// ErrAddressTaken is returned by PoolCache.Take when another MAC holds the address.
	ErrAddressTaken = errors.New("address held by another MAC")
)

// maxRounds bounds the transactions lost to races in one Take or Release.
const maxRounds = 8

// addrValue is the value of addr/IP.
type addrValue struct {
	MAC     string    `json:"mac"`
	Expires time.Time `json:"expires"`
}

// takeAddrAt writes addr/IP -> (mac, expires) and mac/MAC -> IP in one transaction, provided
// neither key changed since it was read (seen, macSeen; nil: did not exist), and deletes drop (the
// MAC's previous address, when not nil and still as read). It reports whether the transaction
// succeeded and returns the keys it wrote, at the transaction's revision (nil when it failed), for
// a cache to record without waiting for its watch.
func (c *Client) takeAddrAt(ctx context.Context, mac string, ip netip.Addr, seen, macSeen, drop *mvccpb.KeyValue, expires time.Time) (bool, []*mvccpb.KeyValue, error) {
	val, err := json.Marshal(addrValue{MAC: mac, Expires: expires.UTC()})
	if err != nil {
		return false, nil, err
	}
	ak, mk := c.keys.addr(ip.String()), c.keys.mac(mac)
	cmps := []clientv3.Cmp{unchanged(ak, seen), unchanged(mk, macSeen)}
	ops := []clientv3.Op{clientv3.OpPut(ak, string(val)), clientv3.OpPut(mk, ip.String())}
	if drop != nil && string(drop.Key) != ak {
		cmps = append(cmps, unchanged(string(drop.Key), drop))
		ops = append(ops, clientv3.OpDelete(string(drop.Key)))
	}
	var resp *clientv3.TxnResponse
	err = c.do(ctx, "addr_take", func(ctx context.Context) (err error) {
		resp, err = c.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		return err
	})
	if err != nil {
		return false, nil, c.wrap("allocate "+ip.String()+" for "+mac, err)
	}
	if !resp.Succeeded {
		return false, nil, nil
	}
	rev := resp.Header.Revision
	return true, []*mvccpb.KeyValue{
		{Key: []byte(ak), Value: val, ModRevision: rev},
		{Key: []byte(mk), Value: []byte(ip.String()), ModRevision: rev},
	}, nil
}

// Release frees the address mac holds, if any.
func (c *Client) Release(ctx context.Context, mac string) error {
	hw, err := canonicalMAC(mac)
	if err != nil {
		return err
	}
	for try := 0; try < maxRounds; try++ {
		macKV, err := c.macKey(ctx, hw)
		if err != nil || macKV == nil {
			return err
		}
		ops := []clientv3.Op{clientv3.OpDelete(c.keys.mac(hw))}
		cmps := []clientv3.Cmp{unchanged(c.keys.mac(hw), macKV)}
		ak := c.keys.addr(string(macKV.Value))
		kv, err := c.getKey(ctx, "addr_get", ak)
		if err != nil {
			return err
		}
		if kv != nil && decodeAddr(kv).MAC == hw {
			ops = append(ops, clientv3.OpDelete(ak))
			cmps = append(cmps, unchanged(ak, kv))
		}
		var resp *clientv3.TxnResponse
		err = c.do(ctx, "addr_release", func(ctx context.Context) (err error) {
			resp, err = c.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
			return err
		})
		if err != nil {
			return c.wrap("release "+hw, err)
		}
		if resp.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("fleet %s: release %s: lost %d races, giving up", c.fleet, hw, maxRounds)
}

func (c *Client) macKey(ctx context.Context, mac string) (*mvccpb.KeyValue, error) {
	return c.getKey(ctx, "mac_get", c.keys.mac(mac))
}

// getKey reads one key; nil when it does not exist.
func (c *Client) getKey(ctx context.Context, op, key string) (*mvccpb.KeyValue, error) {
	var resp *clientv3.GetResponse
	err := c.do(ctx, op, func(ctx context.Context) (err error) {
		resp, err = c.cli.Get(ctx, key)
		return err
	})
	if err != nil {
		return nil, c.wrap(op, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return resp.Kvs[0], nil
}

// unchanged compares that key is as seen: absent when seen is nil, else at seen's mod revision.
func unchanged(key string, seen *mvccpb.KeyValue) clientv3.Cmp {
	if seen == nil {
		return clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(key), "=", seen.ModRevision)
}

// decodeAddr decodes addr/IP's value; a value that does not decode holds the address for no
// MAC, expired: free to take (its revision is still compared).
func decodeAddr(kv *mvccpb.KeyValue) addrValue {
	var v addrValue
	if json.Unmarshal(kv.Value, &v) != nil {
		return addrValue{}
	}
	return v
}

// canonicalMAC returns mac in the form keys use, aa:bb:cc:dd:ee:ff.
func canonicalMAC(mac string) (string, error) {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return "", fmt.Errorf("MAC %q: %w", mac, err)
	}
	return hw.String(), nil
}
