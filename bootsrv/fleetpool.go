package bootsrv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/fleet"
)

// fleetOfferHold is how long this server keeps an offered pool address for the client before its
// REQUEST (in memory: offers write nothing to etcd).
const fleetOfferHold = time.Minute

// errFenced is returned by the fleet pool while this server's membership is not valid: it
// allocates nothing then, so that no address can go to two MACs through a stale view.
var errFenced = errors.New("fleet pool: membership not valid (etcd unreachable or lease lost): no pool address is allocated")

// fleetPool is dhcp.pool in a fleet: one range for every server, each address bound to a MAC by
// an etcd transaction that compares the keys' revisions (fleet.PoolCache.Take), so that no
// address ever goes to two MACs across the fleet, whichever servers answer. Offers come from a
// watched in-memory copy of the pool. It implements dhcpd.AddressPool.
type fleetPool struct {
	c           *fleet.Client
	cache       *fleet.PoolCache
	member      *fleet.Membership
	first, last netip.Addr
	// start is where this server's search begins (its share of the range, as a single server's
	// pool would have it), so that servers offering at once rarely pick the same address.
	start netip.Addr
	lease time.Duration
	now   func() time.Time
	// unknown says which MACs are outside the inventory (nil: none reach the pool). They take
	// addresses only from first..unknownLast (invalid: none), the first unknownShare addresses of
	// the range; inventory nodes take the rest first, then any free address. A part of the range,
	// not a count, because it holds across the fleet without coordination: etcd already keeps each
	// address to one MAC, so the unknown MACs of all servers together never hold more than it.
	unknown     func(net.HardwareAddr) bool
	unknownLast netip.Addr

	// offered is what this server offered, by address (so at most one entry per address of the
	// range): a REQUEST may bind only the MAC's own lease or an address offered to it here, so
	// that a spoofed REQUEST with a node's MAC cannot move the node's lease in etcd.
	mu      sync.Mutex
	offered map[netip.Addr]fleetOffer
}

// fleetOffer is one address offered by this server: to whom, until when.
type fleetOffer struct {
	mac   string
	until time.Time
}

var _ dhcpd.AddressPool = (*fleetPool)(nil)

// LeaseTime implements dhcpd.AddressPool.
func (p *fleetPool) LeaseTime() time.Duration { return p.lease }

func (p *fleetPool) valid() error {
	if !p.member.Valid() {
		return errFenced
	}
	return nil
}

func (p *fleetPool) inRange(a netip.Addr) bool {
	return a.Is4() && !a.Less(p.first) && !p.last.Less(a)
}

func addrOf(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip.To4())
	return a
}

// Offer implements dhcpd.AddressPool: the MAC's address, or a free one, picked from the pool's
// cache without a write (the REQUEST's transaction decides); this server holds it for the MAC for
// fleetOfferHold.
func (p *fleetPool) Offer(ctx context.Context, mac net.HardwareAddr, requested net.IP) (net.IP, error) {
	if err := p.valid(); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := p.cache.Wait(wctx); err != nil {
		return nil, err
	}
	var a netip.Addr
	var err error
	switch {
	case p.unknown == nil:
		a, err = p.cache.Pick(mac.String(), p.whole(), addrOf(requested))
	case p.unknown(mac):
		if !p.unknownLast.IsValid() {
			return nil, fmt.Errorf("%w: no pool address is left for MACs outside the inventory", dhcpd.ErrPoolShare)
		}
		a, err = p.cache.Pick(mac.String(), fleet.PoolRange{First: p.first, Last: p.unknownLast, Start: p.start}, addrOf(requested))
		if errors.Is(err, fleet.ErrPoolExhausted) {
			return nil, fmt.Errorf("%w: %v", dhcpd.ErrPoolShare, err)
		}
	default:
		a, err = p.pickKnown(mac.String(), addrOf(requested))
	}
	if errors.Is(err, fleet.ErrPoolExhausted) {
		return nil, fmt.Errorf("%w: %v", dhcpd.ErrPoolExhausted, err)
	}
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.offered == nil {
		p.offered = map[netip.Addr]fleetOffer{}
	}
	p.offered[a] = fleetOffer{mac: mac.String(), until: p.now().Add(fleetOfferHold)}
	p.mu.Unlock()
	return a.AsSlice(), nil
}

// offeredTo says whether this server offered a to mac within fleetOfferHold.
func (p *fleetPool) offeredTo(mac net.HardwareAddr, a netip.Addr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	o, ok := p.offered[a]
	return ok && o.mac == mac.String() && o.until.After(p.now())
}

// forgetOffer drops the offer of a to mac once a REQUEST bound it.
func (p *fleetPool) forgetOffer(mac net.HardwareAddr, a netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o, ok := p.offered[a]; ok && o.mac == mac.String() {
		delete(p.offered, a)
	}
}

// whole is the pool's range for Pick.
func (p *fleetPool) whole() fleet.PoolRange {
	return fleet.PoolRange{First: p.first, Last: p.last, Start: p.start}
}

// pickKnown picks for an inventory node while unknown MACs use the pool: the address it holds
// anywhere in the range, else a free one past the unknown MACs' part (which it would shrink),
// else any free one.
func (p *fleetPool) pickKnown(mac string, requested netip.Addr) (netip.Addr, error) {
	if own, ok := p.cache.Lease(mac); ok && p.inRange(own) {
		return p.cache.Pick(mac, p.whole(), requested)
	}
	rest := p.first
	if p.unknownLast.IsValid() {
		rest = p.unknownLast.Next()
	}
	if p.inRange(rest) {
		start := p.start
		if start.Less(rest) {
			start = rest
		}
		a, err := p.cache.Pick(mac, fleet.PoolRange{First: rest, Last: p.last, Start: start}, requested)
		if !errors.Is(err, fleet.ErrPoolExhausted) {
			return a, err
		}
	}
	return p.cache.Pick(mac, p.whole(), requested)
}

// CommitLease implements dhcpd.AddressPool: the lease is renewed to its full time in etcd before
// the ACK; an address another MAC holds is refused, and so is one that is neither the MAC's lease
// in etcd (expired or not) nor offered to it by this server (ErrNotOwned, a NAK, nothing written).
// The second rule is against a host that sends REQUESTs with a node's MAC: taking a new address
// gives up the MAC's old one in the same transaction, so before it a spoofed REQUEST moved the
// node's lease and freed the address the node still uses for the next client.
func (p *fleetPool) CommitLease(ctx context.Context, mac net.HardwareAddr, ip net.IP) (time.Duration, error) {
	a := addrOf(ip)
	if !p.inRange(a) {
		return 0, dhcpd.ErrNotInPool
	}
	if p.unknown != nil && p.unknown(mac) && (!p.unknownLast.IsValid() || p.unknownLast.Less(a)) {
		// Outside the unknown MACs' part, even a lease the MAC holds (taken before the part
		// shrank): the NAK sends it back to DISCOVER, which offers one inside.
		return 0, fmt.Errorf("%w: %s is outside the pool's part for MACs outside the inventory", dhcpd.ErrPoolShare, a)
	}
	if err := p.valid(); err != nil {
		return 0, err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := p.cache.Wait(wctx); err != nil {
		return 0, err
	}
	// A lease less than half used is answered as it stands, without a transaction: a booting node
	// asks two or three times within a minute (firmware, iPXE, the OS).
	now := p.now()
	until, own := p.cache.Holds(mac.String(), a)
	if own && until.Sub(now) >= p.lease/2 {
		return until.Sub(now), nil
	}
	if !own && !p.offeredTo(mac, a) {
		return 0, fmt.Errorf("%w: %s is neither %s's lease nor offered to it by this server", dhcpd.ErrNotOwned, a, mac)
	}
	err := p.cache.Take(ctx, mac.String(), a, now.Add(p.lease))
	if errors.Is(err, fleet.ErrAddressTaken) {
		return 0, fmt.Errorf("%w: %v", dhcpd.ErrNotOwned, err)
	}
	if err != nil {
		return 0, err
	}
	p.forgetOffer(mac, a)
	return p.lease, nil
}

// Holds implements dhcpd.AddressPool, from the pool's cache.
func (p *fleetPool) Holds(_ context.Context, mac net.HardwareAddr, ip net.IP) (bool, error) {
	until, ok := p.cache.Holds(mac.String(), addrOf(ip))
	return ok && until.After(p.now()), nil
}

// Release implements dhcpd.AddressPool: only when mac holds ip (ciaddr of a RELEASE, option 50 of
// a DECLINE), so that a spoofed RELEASE naming another address frees nothing.
func (p *fleetPool) Release(ctx context.Context, mac net.HardwareAddr, ip net.IP) error {
	if err := p.valid(); err != nil {
		return err
	}
	if _, ok := p.cache.Holds(mac.String(), addrOf(ip)); !ok {
		return nil
	}
	return p.c.Release(ctx, mac.String())
}

// Decline implements dhcpd.AddressPool. A declined address is released like a released one: the
// fleet pool keeps no quarantine (the bbolt pool of a single server does).
func (p *fleetPool) Decline(ctx context.Context, mac net.HardwareAddr, ip net.IP) error {
	return p.Release(ctx, mac, ip)
}
