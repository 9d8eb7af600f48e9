package bootsrv

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/netip"
	"time"

	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/fleet"
)

// fleetOfferHold is how long an offered pool address stays the client's in etcd before its
// REQUEST: an offer is a lease this short, so an unanswered one frees itself.
const fleetOfferHold = time.Minute

// errFenced is returned by the fleet pool while this server's membership is not valid: it
// allocates nothing then, so that no address can go to two MACs through a stale view.
var errFenced = errors.New("fleet pool: membership not valid (etcd unreachable or lease lost): no pool address is allocated")

// fleetPool is dhcp.pool in a fleet: one range for every server, each address taken for a MAC by
// an etcd transaction (fleet.Client.Allocate), so that no address ever goes to two MACs across the
// fleet, whichever servers answer. It implements dhcpd.AddressPool.
type fleetPool struct {
	c           *fleet.Client
	member      func() *fleet.Membership
	first, last netip.Addr
	lease       time.Duration
	now         func() time.Time
}

var _ dhcpd.AddressPool = (*fleetPool)(nil)

// LeaseTime implements dhcpd.AddressPool.
func (p *fleetPool) LeaseTime() time.Duration { return p.lease }

func (p *fleetPool) valid() error {
	if m := p.member(); m == nil || !m.Valid() {
		return errFenced
	}
	return nil
}

func (p *fleetPool) inRange(a netip.Addr) bool {
	return a.Is4() && !a.Less(p.first) && !p.last.Less(a)
}

// candidates yields the requested address first (when in the range), then the range in order.
func (p *fleetPool) candidates(requested netip.Addr) iter.Seq[netip.Addr] {
	return func(yield func(netip.Addr) bool) {
		if p.inRange(requested) && !yield(requested) {
			return
		}
		for a := p.first; !p.last.Less(a); a = a.Next() {
			if a != requested && !yield(a) {
				return
			}
		}
	}
}

func addrOf(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip.To4())
	return a
}

// Offer implements dhcpd.AddressPool: the MAC's address, or a new one, held for fleetOfferHold.
func (p *fleetPool) Offer(ctx context.Context, mac net.HardwareAddr, requested net.IP) (net.IP, error) {
	if err := p.valid(); err != nil {
		return nil, err
	}
	a, err := p.c.Allocate(ctx, mac.String(), p.candidates(addrOf(requested)), p.now().Add(fleetOfferHold))
	if errors.Is(err, fleet.ErrPoolExhausted) {
		return nil, fmt.Errorf("%w: %v", dhcpd.ErrPoolExhausted, err)
	}
	if err != nil {
		return nil, err
	}
	return a.AsSlice(), nil
}

// CommitLease implements dhcpd.AddressPool: the lease is renewed to its full time in etcd before
// the ACK; an address another MAC holds is refused.
func (p *fleetPool) CommitLease(ctx context.Context, mac net.HardwareAddr, ip net.IP) (time.Duration, error) {
	a := addrOf(ip)
	if !p.inRange(a) {
		return 0, dhcpd.ErrNotInPool
	}
	if err := p.valid(); err != nil {
		return 0, err
	}
	err := p.c.Renew(ctx, mac.String(), a, p.now().Add(p.lease))
	if errors.Is(err, fleet.ErrAddressTaken) {
		return 0, fmt.Errorf("%w: %v", dhcpd.ErrNotOwned, err)
	}
	if err != nil {
		return 0, err
	}
	return p.lease, nil
}

// Release implements dhcpd.AddressPool.
func (p *fleetPool) Release(ctx context.Context, mac net.HardwareAddr, ip net.IP) error {
	if err := p.valid(); err != nil {
		return err
	}
	return p.c.Release(ctx, mac.String())
}

// Decline implements dhcpd.AddressPool. A declined address is released like a released one: the
// fleet pool keeps no quarantine (the bbolt pool of a single server does).
func (p *fleetPool) Decline(ctx context.Context, mac net.HardwareAddr, ip net.IP) error {
	return p.Release(ctx, mac, ip)
}
