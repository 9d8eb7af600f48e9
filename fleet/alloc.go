package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var (
	// ErrPoolExhausted is returned by Allocate when every candidate is held by another MAC.
	ErrPoolExhausted = errors.New("address pool exhausted")
	// ErrAddressTaken is returned by Renew when another MAC holds the address.
	ErrAddressTaken = errors.New("address held by another MAC")
)

const (
	// maxConflicts is how many lost transactions Allocate accepts on one read of the pool before
	// it reads the pool again: past that its view is too stale to pick well.
	maxConflicts = 32
	// maxRounds bounds the reads of the pool in one Allocate.
	maxRounds = 8
)

// Lease is an address lease of the fleet's DHCP pool (not an etcd lease).
type Lease struct {
	Addr     netip.Addr
	MAC      string    // canonical form, aa:bb:cc:dd:ee:ff
	Expires  time.Time // the lease is free for another MAC after this (by the servers' clocks)
	Revision int64     // etcd mod revision of the lease's key
}

// addrValue is the value of addr/IP.
type addrValue struct {
	MAC     string    `json:"mac"`
	Expires time.Time `json:"expires"`
}

// Allocate gives mac an address until expires, and returns it. A MAC that already holds one of
// the candidates (expired or not, as long as no other MAC took it since) keeps it, renewed.
// Otherwise it gets the first candidate, in the order given, that no key holds or whose lease
// has expired. Each address is taken by one transaction that compares the address key's revision
// with the one read, so an address is never held by two MACs, however many servers allocate at
// once; a lost race moves on to the next candidate (bounded). Candidates may be iterated more than
// once. A MAC that holds an address costs three requests; a new one costs a read of the fleet's
// address leases (one range read) and one transaction per race lost.
func (c *Client) Allocate(ctx context.Context, mac string, candidates iter.Seq[netip.Addr], expires time.Time) (netip.Addr, error) {
	hw, err := canonicalMAC(mac)
	if err != nil {
		return netip.Addr{}, err
	}
	if ip, ok, err := c.renewOwn(ctx, hw, candidates, expires); err != nil || ok {
		return ip, err
	}
	for round := 0; round < maxRounds; round++ {
		ip, outcome, err := c.allocateRound(ctx, hw, candidates, expires)
		if err != nil {
			return netip.Addr{}, err
		}
		switch outcome {
		case roundTook:
			return ip, nil
		case roundExhausted:
			return netip.Addr{}, fmt.Errorf("fleet %s: allocate for %s: %w", c.fleet, hw, ErrPoolExhausted)
		}
	}
	return netip.Addr{}, fmt.Errorf("fleet %s: allocate for %s: lost %d rounds of races, giving up", c.fleet, hw, maxRounds)
}

// roundOutcome is how one round of Allocate, on one read of the pool, ended.
type roundOutcome int

const (
	roundTook      roundOutcome = iota // an address was taken
	roundExhausted                     // every candidate is held by another MAC
	roundStale                         // races lost or the MAC's key changed: read the pool again
)

// allocateRound reads the pool once and takes, on that read, the MAC's own candidate if it holds
// one, else the first free candidate.
func (c *Client) allocateRound(ctx context.Context, hw string, candidates iter.Seq[netip.Addr], expires time.Time) (netip.Addr, roundOutcome, error) {
	macKV, held, err := c.poolSnapshot(ctx, hw)
	if err != nil {
		return netip.Addr{}, roundStale, err
	}
	// The MAC's own address first.
	own, ownKV := heldBy(hw, macKV, held)
	if ownKV != nil && contains(candidates, own) {
		ok, err := c.takeAddr(ctx, hw, own, ownKV, macKV, nil, expires)
		if err != nil || !ok {
			return netip.Addr{}, roundStale, err // !ok: changed under us, read again
		}
		return own, roundTook, nil
	}
	// The address the MAC held outside the candidates (the pool changed) is given up in the
	// transaction that takes the new one, so that a MAC holds one address.
	return c.takeFirstFree(ctx, hw, candidates, held, macKV, ownKV, expires)
}

// heldBy returns the address mac/MAC names (macKV) and its addr/ key in held when that key still
// says the MAC holds it; the key is nil otherwise.
func heldBy(hw string, macKV *mvccpb.KeyValue, held map[netip.Addr]*mvccpb.KeyValue) (netip.Addr, *mvccpb.KeyValue) {
	if macKV == nil {
		return netip.Addr{}, nil
	}
	ip, err := netip.ParseAddr(string(macKV.Value))
	if err != nil {
		return netip.Addr{}, nil
	}
	if kv := held[ip]; kv != nil && decodeAddr(kv).MAC == hw {
		return ip, kv
	}
	return ip, nil
}

// takeFirstFree takes the first candidate that no other MAC holds unexpired on the read held,
// giving up drop (the MAC's address outside the candidates) in the same transaction. It stops
// after maxConflicts lost races, or as soon as the MAC's key changed (another server allocated
// for it meanwhile: the next round takes that one).
func (c *Client) takeFirstFree(ctx context.Context, hw string, candidates iter.Seq[netip.Addr], held map[netip.Addr]*mvccpb.KeyValue,
	macKV, drop *mvccpb.KeyValue, expires time.Time) (netip.Addr, roundOutcome, error) {
	now := c.opts.Now()
	conflicts := 0
	for ip := range candidates {
		kv := held[ip.Unmap()]
		if kv != nil {
			if v := decodeAddr(kv); v.MAC != hw && v.Expires.After(now) {
				continue
			}
		}
		ok, err := c.takeAddr(ctx, hw, ip.Unmap(), kv, macKV, drop, expires)
		if err != nil {
			return netip.Addr{}, roundStale, err
		}
		if ok {
			return ip.Unmap(), roundTook, nil
		}
		conflicts++
		if conflicts >= maxConflicts {
			return netip.Addr{}, roundStale, nil
		}
		if cur, err := c.macKey(ctx, hw); err != nil {
			return netip.Addr{}, roundStale, err
		} else if modRev(cur) != modRev(macKV) {
			// Another server allocated for this MAC meanwhile: take that one.
			return netip.Addr{}, roundStale, nil
		}
	}
	return netip.Addr{}, roundExhausted, nil
}

// renewOwn renews the address mac holds, without reading the pool (three requests, whatever the
// pool's size): the common case of a node that boots again. It reports false when mac holds no
// candidate or lost a race, and Allocate goes the long way.
func (c *Client) renewOwn(ctx context.Context, mac string, candidates iter.Seq[netip.Addr], expires time.Time) (netip.Addr, bool, error) {
	macKV, err := c.macKey(ctx, mac)
	if err != nil || macKV == nil {
		return netip.Addr{}, false, err
	}
	ip, err := netip.ParseAddr(string(macKV.Value))
	if err != nil || !contains(candidates, ip) {
		return netip.Addr{}, false, nil
	}
	kv, err := c.getKey(ctx, "addr_get", c.keys.addr(ip.String()))
	if err != nil || kv == nil || decodeAddr(kv).MAC != mac {
		return netip.Addr{}, false, err
	}
	ok, err := c.takeAddr(ctx, mac, ip, kv, macKV, nil, expires)
	return ip, ok, err
}

// takeAddr writes addr/IP -> (mac, expires) and mac/MAC -> IP in one transaction, provided
// neither key changed since it was read (seen, macSeen; nil: did not exist), and deletes drop (the
// MAC's previous address, when not nil and still as read). It reports whether the transaction
// succeeded.
func (c *Client) takeAddr(ctx context.Context, mac string, ip netip.Addr, seen, macSeen, drop *mvccpb.KeyValue, expires time.Time) (bool, error) {
	ok, _, err := c.takeAddrAt(ctx, mac, ip, seen, macSeen, drop, expires)
	return ok, err
}

// takeAddrAt is takeAddr that also returns the keys it wrote, at the transaction's revision (nil
// when it failed), for a cache to record without waiting for its watch.
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

// Renew extends mac's lease on ip until expires, taking ip when it is free (DHCPREQUEST for an
// address the client knows). It fails with ErrAddressTaken when another MAC holds ip unexpired.
func (c *Client) Renew(ctx context.Context, mac string, ip netip.Addr, expires time.Time) error {
	hw, err := canonicalMAC(mac)
	if err != nil {
		return err
	}
	ip = ip.Unmap()
	for try := 0; try < maxRounds; try++ {
		kv, err := c.getKey(ctx, "addr_get", c.keys.addr(ip.String()))
		if err != nil {
			return err
		}
		if kv != nil {
			if v := decodeAddr(kv); v.MAC != hw && v.Expires.After(c.opts.Now()) {
				return fmt.Errorf("fleet %s: renew %s for %s: %w (%s until %s)", c.fleet, ip, hw, ErrAddressTaken, v.MAC, v.Expires.Format(time.RFC3339))
			}
		}
		macKV, err := c.macKey(ctx, hw)
		if err != nil {
			return err
		}
		var drop *mvccpb.KeyValue
		if macKV != nil && string(macKV.Value) != ip.String() {
			if drop, err = c.getKey(ctx, "addr_get", c.keys.addr(string(macKV.Value))); err != nil {
				return err
			}
			if drop != nil && decodeAddr(drop).MAC != hw {
				drop = nil
			}
		}
		ok, err := c.takeAddr(ctx, hw, ip, kv, macKV, drop, expires)
		if err != nil || ok {
			return err
		}
	}
	return fmt.Errorf("fleet %s: renew %s for %s: lost %d races, giving up", c.fleet, ip, hw, maxRounds)
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

// Leases returns every address lease, expired ones included, sorted by address.
func (c *Client) Leases(ctx context.Context) ([]Lease, error) {
	kvs, _, err := c.getPrefix(ctx, "addr_list", c.keys.addrPrefix())
	if err != nil {
		return nil, err
	}
	var out []Lease
	for _, kv := range kvs {
		ip, err := netip.ParseAddr(strings.TrimPrefix(string(kv.Key), c.keys.addrPrefix()))
		if err != nil {
			continue
		}
		v := decodeAddr(kv)
		out = append(out, Lease{Addr: ip, MAC: v.MAC, Expires: v.Expires, Revision: kv.ModRevision})
	}
	slices.SortFunc(out, func(a, b Lease) int { return a.Addr.Compare(b.Addr) })
	return out, nil
}

// poolSnapshot reads mac's key and every address lease at one revision, in one transaction.
func (c *Client) poolSnapshot(ctx context.Context, mac string) (*mvccpb.KeyValue, map[netip.Addr]*mvccpb.KeyValue, error) {
	var resp *clientv3.TxnResponse
	err := c.do(ctx, "addr_snapshot", func(ctx context.Context) (err error) {
		resp, err = c.cli.Txn(ctx).Then(
			clientv3.OpGet(c.keys.mac(mac)),
			clientv3.OpGet(c.keys.addrPrefix(), clientv3.WithPrefix()),
		).Commit()
		return err
	})
	if err != nil {
		return nil, nil, c.wrap("read address pool", err)
	}
	var macKV *mvccpb.KeyValue
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		macKV = kvs[0]
	}
	held := map[netip.Addr]*mvccpb.KeyValue{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		if ip, err := netip.ParseAddr(strings.TrimPrefix(string(kv.Key), c.keys.addrPrefix())); err == nil {
			held[ip] = kv
		}
	}
	return macKV, held, nil
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

func modRev(kv *mvccpb.KeyValue) int64 {
	if kv == nil {
		return 0
	}
	return kv.ModRevision
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

func contains(seq iter.Seq[netip.Addr], ip netip.Addr) bool {
	for a := range seq {
		if a.Unmap() == ip {
			return true
		}
	}
	return false
}

// canonicalMAC returns mac in the form keys use, aa:bb:cc:dd:ee:ff.
func canonicalMAC(mac string) (string, error) {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return "", fmt.Errorf("MAC %q: %w", mac, err)
	}
	return hw.String(), nil
}
