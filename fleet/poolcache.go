package fleet

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// PoolCache keeps the fleet's address leases (the addr/ and mac/ keys) in memory, kept current by
// a watch, so that a DHCP server can pick an address without reading the pool and take it with
// one transaction. Allocate reads the whole pool per new MAC, which is right for a tool and wrong
// for thousands of DHCP exchanges a second. The view may lag etcd by a watch event: every write
// still compares the keys' revisions, so a stale view costs a retry, never an address held by two
// MACs. Offers are local: Pick remembers, in memory only, which address it offered to which MAC
// for the hold time, so that this server does not offer one address to two clients; two servers
// may, and the second REQUEST then loses Take's transaction and gets ErrAddressTaken (a NAK).
type PoolCache struct {
	c    *Client
	hold time.Duration

	mu      sync.Mutex
	addrs   map[netip.Addr]*mvccpb.KeyValue
	macs    map[string]*mvccpb.KeyValue
	offers  map[netip.Addr]localOffer
	offerOf map[string]netip.Addr // the address offered here to each MAC (offers' inverse)
	cursor  netip.Addr            // where the next search for a free address begins
	ready   map[string]bool       // which of the two watches delivered their first read
	readyC  chan struct{}
}

type localOffer struct {
	mac   string
	until time.Time
}

// WatchPool starts a PoolCache that follows the pool until ctx ends; hold is how long a local
// offer keeps its address from other MACs (default one minute).
func (c *Client) WatchPool(ctx context.Context, hold time.Duration) *PoolCache {
	if hold <= 0 {
		hold = time.Minute
	}
	p := &PoolCache{c: c, hold: hold, addrs: map[netip.Addr]*mvccpb.KeyValue{}, macs: map[string]*mvccpb.KeyValue{},
		offers: map[netip.Addr]localOffer{}, offerOf: map[string]netip.Addr{}, ready: map[string]bool{}, readyC: make(chan struct{})}
	for _, prefix := range []string{c.keys.addrPrefix(), c.keys.macPrefix()} {
		go c.watchKeys(ctx, "pool_watch", prefix, true, watcher{
			reset: func(kvs []*mvccpb.KeyValue, _ int64) bool { p.reset(prefix, kvs); return true },
			apply: func(evs []*clientv3.Event, _ int64) bool {
				p.mu.Lock()
				defer p.mu.Unlock()
				for _, ev := range evs {
					p.putLocked(ev.Kv, ev.Type == clientv3.EventTypeDelete)
				}
				return true
			},
		})
	}
	return p
}

// Wait blocks until the cache holds a first full read of the pool, or ctx ends.
func (p *PoolCache) Wait(ctx context.Context) error {
	select {
	case <-p.readyC:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("fleet %s: address pool not read yet: %w", p.c.fleet, ctx.Err())
	}
}

func (p *PoolCache) reset(prefix string, kvs []*mvccpb.KeyValue) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if prefix == p.c.keys.addrPrefix() {
		p.addrs = map[netip.Addr]*mvccpb.KeyValue{}
	} else {
		p.macs = map[string]*mvccpb.KeyValue{}
	}
	for _, kv := range kvs {
		p.putLocked(kv, false)
	}
	if !p.ready[prefix] {
		p.ready[prefix] = true
		if len(p.ready) == 2 {
			close(p.readyC)
		}
	}
}

// putLocked records kv (or its deletion), unless the cache already has a newer revision of it.
func (p *PoolCache) putLocked(kv *mvccpb.KeyValue, deleted bool) {
	key := string(kv.Key)
	if rest, ok := strings.CutPrefix(key, p.c.keys.addrPrefix()); ok {
		ip, err := netip.ParseAddr(rest)
		if err != nil {
			return
		}
		if old := p.addrs[ip]; old != nil && old.ModRevision > kv.ModRevision {
			return
		}
		if deleted {
			delete(p.addrs, ip)
		} else {
			p.addrs[ip] = kv
		}
		return
	}
	if mac, ok := strings.CutPrefix(key, p.c.keys.macPrefix()); ok {
		if old := p.macs[mac]; old != nil && old.ModRevision > kv.ModRevision {
			return
		}
		if deleted {
			delete(p.macs, mac)
		} else {
			p.macs[mac] = kv
		}
	}
}

// Holds says until when mac holds ip, as the cache knows it (false when another MAC, or none,
// holds it). A server answers a REQUEST for a lease that is still mostly left without a write, as
// a single server's pool does: the cache may lag, but a MAC's own lease only changes through
// itself.
func (p *PoolCache) Holds(mac string, ip netip.Addr) (time.Time, bool) {
	hw, err := canonicalMAC(mac)
	if err != nil {
		return time.Time{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	kv := p.addrs[ip.Unmap()]
	if kv == nil {
		return time.Time{}, false
	}
	v := decodeAddr(kv)
	if v.MAC != hw {
		return time.Time{}, false
	}
	return v.Expires, true
}

// Lease returns the address mac holds as the cache knows it, expired or not (false when it holds
// none): a server that keeps some MACs to part of the range asks it before Pick, so that a MAC
// holding an address elsewhere keeps it.
func (p *PoolCache) Lease(mac string) (netip.Addr, bool) {
	hw, err := canonicalMAC(mac)
	if err != nil {
		return netip.Addr{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	kv := p.macs[hw]
	if kv == nil {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(string(kv.Value))
	if err != nil {
		return netip.Addr{}, false
	}
	if a := p.addrs[ip]; a == nil || decodeAddr(a).MAC != hw {
		return netip.Addr{}, false
	}
	return ip, true
}

// PoolRange is the part of the address space Pick draws from.
type PoolRange struct {
	First, Last netip.Addr // inclusive
	// Start is where this server's first search begins (its share of the range), so that
	// servers offering at once rarely pick the same address. Zero: First.
	Start netip.Addr
}

func (r PoolRange) contains(a netip.Addr) bool {
	return a.IsValid() && !a.Less(r.First) && !r.Last.Less(a)
}

// Pick chooses an address of r for mac without writing anything: the address mac holds (or was
// offered here) when it is in r, else requested when free, else the next free address after the
// last one picked (starting at r.Start), round the range once. An address is free when no other
// MAC holds it unexpired and it was not offered here to another MAC within the hold. It fails
// with ErrPoolExhausted.
func (p *PoolCache) Pick(mac string, r PoolRange, requested netip.Addr) (netip.Addr, error) {
	hw, err := canonicalMAC(mac)
	if err != nil {
		return netip.Addr{}, err
	}
	if !r.First.Is4() || !r.Last.Is4() || r.Last.Less(r.First) {
		return netip.Addr{}, fmt.Errorf("fleet %s: pick: bad range %v-%v", p.c.fleet, r.First, r.Last)
	}
	now := p.c.opts.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if ip, ok := p.pickKnownLocked(hw, r, requested, now); ok {
		return ip, nil
	}
	if ip, ok := p.pickNextFreeLocked(hw, r, now); ok {
		return ip, nil
	}
	p.forgetExpiredOffersLocked(now)
	return netip.Addr{}, fmt.Errorf("fleet %s: pick for %s: %w", p.c.fleet, hw, ErrPoolExhausted)
}

// pickKnownLocked picks, when it is in r and free for hw, the address hw holds, else the one
// offered here to hw, else requested.
func (p *PoolCache) pickKnownLocked(hw string, r PoolRange, requested netip.Addr, now time.Time) (netip.Addr, bool) {
	if kv := p.macs[hw]; kv != nil {
		if ip, err := netip.ParseAddr(string(kv.Value)); err == nil && r.contains(ip) && p.freeForLocked(ip, hw, now) {
			p.offerLocked(ip, hw, now)
			return ip, true
		}
	}
	if ip, ok := p.offerOf[hw]; ok {
		if o := p.offers[ip]; o.mac == hw && o.until.After(now) && r.contains(ip) && p.freeForLocked(ip, hw, now) {
			return ip, true
		}
	}
	if requested = requested.Unmap(); r.contains(requested) && p.freeForLocked(requested, hw, now) {
		p.offerLocked(requested, hw, now)
		return requested, true
	}
	return netip.Addr{}, false
}

// pickNextFreeLocked offers hw the next free address of r after the last one picked (from r.Start
// the first time), going round the range once.
func (p *PoolCache) pickNextFreeLocked(hw string, r PoolRange, now time.Time) (netip.Addr, bool) {
	cur := p.cursor
	if !r.contains(cur) {
		cur = r.Start
		if !r.contains(cur) {
			cur = r.First
		}
	}
	// One round of the range from the cursor: leases are taken mostly in order, so the next free
	// address is usually the cursor's.
	for a, first := cur, true; first || a != cur; first = false {
		if p.freeForLocked(a, hw, now) {
			p.offerLocked(a, hw, now)
			p.cursor = a.Next()
			return a, true
		}
		if a = a.Next(); !r.contains(a) {
			a = r.First
		}
	}
	return netip.Addr{}, false
}

// forgetExpiredOffersLocked drops the local offers whose hold ended. Pick calls it now and then
// (when the pool is exhausted): the map stays bounded by the pool's size anyway.
func (p *PoolCache) forgetExpiredOffersLocked(now time.Time) {
	for ip, o := range p.offers {
		if !o.until.After(now) {
			delete(p.offers, ip)
			if p.offerOf[o.mac] == ip {
				delete(p.offerOf, o.mac)
			}
		}
	}
}

// offerLocked records a local offer of ip to mac, replacing the MAC's other offers.
func (p *PoolCache) offerLocked(ip netip.Addr, mac string, now time.Time) {
	if old, ok := p.offerOf[mac]; ok && old != ip && p.offers[old].mac == mac {
		delete(p.offers, old)
	}
	if o, ok := p.offers[ip]; ok && o.mac != mac && p.offerOf[o.mac] == ip {
		delete(p.offerOf, o.mac) // an expired offer to another MAC, taken over
	}
	p.offers[ip] = localOffer{mac: mac, until: now.Add(p.hold)}
	p.offerOf[mac] = ip
}

// freeForLocked says whether ip may go to mac: no other MAC holds it unexpired in etcd, and this
// server did not offer it to another MAC within the hold.
func (p *PoolCache) freeForLocked(ip netip.Addr, mac string, now time.Time) bool {
	if kv := p.addrs[ip]; kv != nil {
		v := decodeAddr(kv)
		if v.MAC != mac && v.Expires.After(now) {
			return false
		}
		if v.MAC == mac && v.Expires.After(now) {
			return true // the MAC's own lease beats an offer made here to another MAC
		}
	}
	if o, ok := p.offers[ip]; ok && o.mac != mac && o.until.After(now) {
		return false
	}
	return true
}

// Take binds ip to mac until expires in one transaction that compares the address's and the MAC's
// keys with the cache's revisions, giving up the MAC's previous address in the same transaction.
// When the cache was stale it reads the two keys and tries again (bounded). It fails with
// ErrAddressTaken when another MAC holds ip unexpired.
func (p *PoolCache) Take(ctx context.Context, mac string, ip netip.Addr, expires time.Time) error {
	hw, err := canonicalMAC(mac)
	if err != nil {
		return err
	}
	ip = ip.Unmap()
	c := p.c
	for try := 0; try < maxRounds; try++ {
		seen, macSeen, drop := p.takeView(hw, ip)
		if seen != nil {
			if v := decodeAddr(seen); v.MAC != hw && v.Expires.After(c.opts.Now()) {
				return fmt.Errorf("fleet %s: take %s for %s: %w (%s until %s)", c.fleet, ip, hw, ErrAddressTaken, v.MAC, v.Expires.Format(time.RFC3339))
			}
		}
		ok, wrote, err := c.takeAddrAt(ctx, hw, ip, seen, macSeen, drop, expires)
		if err != nil {
			return err
		}
		if ok {
			p.recordTake(hw, ip, wrote, drop)
			return nil
		}
		// Stale: read the keys the transaction compared, then decide again.
		if err := p.refreshTake(ctx, hw, ip, drop); err != nil {
			return err
		}
	}
	return fmt.Errorf("fleet %s: take %s for %s: lost %d races, giving up", c.fleet, ip, hw, maxRounds)
}

// takeView returns what the cache knows of the keys Take compares: ip's key (seen), the MAC's key
// (macSeen) and the key of the other address the MAC holds, to give up (drop; nil when none).
func (p *PoolCache) takeView(hw string, ip netip.Addr) (seen, macSeen, drop *mvccpb.KeyValue) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen, macSeen = p.addrs[ip], p.macs[hw]
	if macSeen != nil && string(macSeen.Value) != ip.String() {
		if old, err := netip.ParseAddr(string(macSeen.Value)); err == nil {
			if kv := p.addrs[old]; kv != nil && decodeAddr(kv).MAC == hw {
				drop = kv
			}
		}
	}
	return seen, macSeen, drop
}

// recordTake puts what Take's transaction wrote into the cache (the watch would bring it a little
// later), forgets the address it gave up and the local offer it fulfilled.
func (p *PoolCache) recordTake(hw string, ip netip.Addr, wrote []*mvccpb.KeyValue, drop *mvccpb.KeyValue) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, kv := range wrote {
		p.putLocked(kv, false)
	}
	if drop != nil && string(drop.Key) != string(wrote[0].Key) {
		p.dropLocked(string(drop.Key))
	}
	if o, held := p.offers[ip]; held && o.mac == hw {
		delete(p.offers, ip)
		delete(p.offerOf, hw)
	}
}

// refreshTake reads again the keys a lost Take transaction compared.
func (p *PoolCache) refreshTake(ctx context.Context, hw string, ip netip.Addr, drop *mvccpb.KeyValue) error {
	if err := p.refresh(ctx, p.c.keys.addr(ip.String()), p.c.keys.mac(hw)); err != nil {
		return err
	}
	if drop != nil {
		return p.refresh(ctx, string(drop.Key))
	}
	return nil
}

// refresh reads keys from etcd into the cache (a missing key is deleted from it).
func (p *PoolCache) refresh(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		kv, err := p.c.getKey(ctx, "pool_refresh", k)
		if err != nil {
			return err
		}
		p.mu.Lock()
		if kv != nil {
			p.putLocked(kv, false)
		} else {
			p.dropLocked(k)
		}
		p.mu.Unlock()
	}
	return nil
}

// dropLocked removes key's entry whatever its revision.
func (p *PoolCache) dropLocked(key string) {
	if rest, ok := strings.CutPrefix(key, p.c.keys.addrPrefix()); ok {
		if ip, err := netip.ParseAddr(rest); err == nil {
			delete(p.addrs, ip)
		}
	} else if mac, ok := strings.CutPrefix(key, p.c.keys.macPrefix()); ok {
		delete(p.macs, mac)
	}
}
