package dhcpd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Pool errors. Handlers turn ErrNotOwned and ErrNotInPool into a NAK and
// ErrPoolExhausted into silence.
var (
	ErrPoolExhausted = errors.New("dhcpd: address pool exhausted")
	ErrNotOwned      = errors.New("dhcpd: address leased to another client")
	ErrNotInPool     = errors.New("dhcpd: address outside the pool")
)

// LeaseState is the state of a persisted lease.
type LeaseState uint8

const (
	// LeaseOffered: offered, not yet requested; expires after OfferTime.
	LeaseOffered LeaseState = 1
	// LeaseBound: acknowledged; expires after LeaseTime.
	LeaseBound LeaseState = 2
	// LeaseDeclined: a client reported the address in use (DHCPDECLINE);
	// quarantined for LeaseTime.
	LeaseDeclined LeaseState = 3
)

// Lease is one address of the pool held by a client.
type Lease struct {
	IP     net.IP
	MAC    net.HardwareAddr // nil for LeaseDeclined
	Expiry time.Time
	State  LeaseState
}

// PoolOptions tune a Pool. Zero values have the documented defaults.
type PoolOptions struct {
	// LeaseTime of bound leases. Default 1 h.
	LeaseTime time.Duration
	// OfferTime an offered address stays reserved for the client.
	// Default 60 s.
	OfferTime time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// BatchDelay is how long a lease write waits to share one fsync with
	// concurrent writes (bbolt Batch). Default 0: every write commits (and
	// fsyncs) on its own.
	BatchDelay time.Duration
}

// Pool is a dynamic address range whose leases live in a bbolt file. Every
// change is committed (fsync) before Offer/Commit return, so a reply is never
// sent for a lease a restart could forget; after a crash no address is handed
// to two MACs. Safe for concurrent use.
type Pool struct {
	db         *bolt.DB
	start, end uint32
	opts       PoolOptions

	mu    sync.Mutex
	byIP  map[uint32]*leaseRec
	byMAC map[string]uint32
	next  uint32 // where the next free-address scan starts
}

type leaseRec struct {
	mac    net.HardwareAddr
	expiry time.Time
	state  LeaseState
}

var leaseBucket = []byte("leases")

// OpenPool opens (creating if needed) the lease file at path for the
// inclusive range start..end. Leases outside the range are kept on disk
// but not used.
func OpenPool(path string, start, end net.IP, opts PoolOptions) (*Pool, error) {
	s, e := ip2u(start), ip2u(end)
	if start.To4() == nil || end.To4() == nil || s > e {
		return nil, fmt.Errorf("dhcpd: pool %s: bad range %v-%v", path, start, end)
	}
	if opts.LeaseTime <= 0 {
		opts.LeaseTime = time.Hour
	}
	if opts.OfferTime <= 0 {
		opts.OfferTime = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("dhcpd: open lease store %s: %w", path, err)
	}
	if opts.BatchDelay > 0 {
		db.MaxBatchDelay = opts.BatchDelay
	}
	p := &Pool{db: db, start: s, end: e, opts: opts, byIP: map[uint32]*leaseRec{}, byMAC: map[string]uint32{}, next: s}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(leaseBucket)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			if len(k) != 4 {
				return fmt.Errorf("lease key %x: want 4 bytes", k)
			}
			rec, err := decodeLease(v)
			if err != nil {
				return fmt.Errorf("lease %v: %w", net.IP(k), err)
			}
			ip := binary.BigEndian.Uint32(k)
			p.byIP[ip] = rec
			if rec.mac != nil {
				p.byMAC[macKey(rec.mac)] = ip
			}
			return nil
		})
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("dhcpd: load leases from %s: %w", path, err)
	}
	return p, nil
}

// Close closes the lease file.
func (p *Pool) Close() error { return p.db.Close() }

// Contains reports whether ip is in the pool's range.
func (p *Pool) Contains(ip net.IP) bool {
	u := ip2u(ip)
	return ip.To4() != nil && u >= p.start && u <= p.end
}

// Offer reserves an address for mac: its current lease if any, else
// requested when free, else the next free or expired address. The
// reservation is on disk when Offer returns.
func (p *Pool) Offer(ctx context.Context, mac net.HardwareAddr, requested net.IP) (net.IP, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := p.opts.Now()
	key := macKey(mac)
	p.mu.Lock()
	ip, ok := p.byMAC[key]
	if ok {
		rec := p.byIP[ip]
		if rec.state == LeaseBound && rec.expiry.After(now) {
			// A rebooting client: its lease is on disk already.
			p.mu.Unlock()
			return u2ip(ip), nil
		}
		rec.state = LeaseOffered
		rec.expiry = now.Add(p.opts.OfferTime)
	} else {
		ip, ok = p.pickLocked(requested, now)
		if !ok {
			p.mu.Unlock()
			return nil, ErrPoolExhausted
		}
		p.takeLocked(ip, mac, LeaseOffered, now.Add(p.opts.OfferTime))
	}
	p.mu.Unlock()
	if err := p.persist(ip); err != nil {
		return nil, err
	}
	return u2ip(ip), nil
}

// Commit binds ip to mac for LeaseTime (DHCPREQUEST). It fails with
// ErrNotOwned when another client holds ip and ErrNotInPool outside the range.
func (p *Pool) Commit(ctx context.Context, mac net.HardwareAddr, ip net.IP) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !p.Contains(ip) {
		return ErrNotInPool
	}
	now := p.opts.Now()
	u := ip2u(ip)
	key := macKey(mac)
	p.mu.Lock()
	rec := p.byIP[u]
	if rec != nil && macKey(rec.mac) != key && rec.expiry.After(now) {
		p.mu.Unlock()
		return ErrNotOwned
	}
	changed := []uint32{u}
	if old, ok := p.byMAC[key]; ok && old != u {
		delete(p.byIP, old) // one address per client
		changed = append(changed, old)
	}
	p.takeLocked(u, mac, LeaseBound, now.Add(p.opts.LeaseTime))
	p.mu.Unlock()
	return p.persist(changed...)
}

// Release frees ip if mac holds it (DHCPRELEASE).
func (p *Pool) Release(ctx context.Context, mac net.HardwareAddr, ip net.IP) error {
	return p.drop(ctx, mac, ip, false)
}

// Decline quarantines ip for LeaseTime if mac holds it (DHCPDECLINE).
func (p *Pool) Decline(ctx context.Context, mac net.HardwareAddr, ip net.IP) error {
	return p.drop(ctx, mac, ip, true)
}

func (p *Pool) drop(ctx context.Context, mac net.HardwareAddr, ip net.IP, quarantine bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u := ip2u(ip)
	p.mu.Lock()
	rec := p.byIP[u]
	if rec == nil || macKey(rec.mac) != macKey(mac) {
		p.mu.Unlock()
		return nil
	}
	delete(p.byMAC, macKey(mac))
	if quarantine {
		p.byIP[u] = &leaseRec{state: LeaseDeclined, expiry: p.opts.Now().Add(p.opts.LeaseTime)}
	} else {
		delete(p.byIP, u)
	}
	p.mu.Unlock()
	return p.persist(u)
}

// Leases returns a snapshot of all leases sorted by address.
func (p *Pool) Leases() []Lease {
	p.mu.Lock()
	out := make([]Lease, 0, len(p.byIP))
	for ip, r := range p.byIP {
		out = append(out, Lease{IP: u2ip(ip), MAC: r.mac, Expiry: r.expiry, State: r.state})
	}
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return ip2u(out[i].IP) < ip2u(out[j].IP) })
	return out
}

// pickLocked finds an address for a new client: requested if free, else
// the next never-used one, else the longest-expired one.
func (p *Pool) pickLocked(requested net.IP, now time.Time) (uint32, bool) {
	if requested.To4() != nil && p.Contains(requested) {
		u := ip2u(requested)
		if r := p.byIP[u]; r == nil || r.expiry.Before(now) {
			return u, true
		}
	}
	size := uint64(p.end) - uint64(p.start) + 1
	cur := p.next
	for i := uint64(0); i < size; i++ {
		if _, used := p.byIP[cur]; !used {
			p.next = cur + 1
			if p.next > p.end || p.next < p.start {
				p.next = p.start
			}
			return cur, true
		}
		if cur == p.end {
			cur = p.start
		} else {
			cur++
		}
	}
	var best uint32
	var bestExp time.Time
	found := false
	for ip, r := range p.byIP {
		if ip < p.start || ip > p.end || !r.expiry.Before(now) {
			continue
		}
		if !found || r.expiry.Before(bestExp) || (r.expiry.Equal(bestExp) && ip < best) {
			best, bestExp, found = ip, r.expiry, true
		}
	}
	return best, found
}

func (p *Pool) takeLocked(ip uint32, mac net.HardwareAddr, st LeaseState, exp time.Time) {
	if old := p.byIP[ip]; old != nil && old.mac != nil {
		delete(p.byMAC, macKey(old.mac))
	}
	p.byIP[ip] = &leaseRec{mac: append(net.HardwareAddr(nil), mac...), expiry: exp, state: st}
	p.byMAC[macKey(mac)] = ip
}

// persist writes the current in-memory state of ips. Reading the state inside
// the transaction means a later commit never writes an older state back.
func (p *Pool) persist(ips ...uint32) error {
	fn := func(tx *bolt.Tx) error {
		b := tx.Bucket(leaseBucket)
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, ip := range ips {
			var k [4]byte
			binary.BigEndian.PutUint32(k[:], ip)
			r := p.byIP[ip]
			if r == nil {
				if err := b.Delete(k[:]); err != nil {
					return err
				}
				continue
			}
			if err := b.Put(k[:], encodeLease(r)); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if p.opts.BatchDelay > 0 {
		err = p.db.Batch(fn)
	} else {
		err = p.db.Update(fn)
	}
	if err != nil {
		return fmt.Errorf("dhcpd: write lease: %w", err)
	}
	return nil
}

// Lease record: state(1) expiry-unix-nanos(8) maclen(1) mac.
func encodeLease(r *leaseRec) []byte {
	v := make([]byte, 10+len(r.mac))
	v[0] = byte(r.state)
	binary.BigEndian.PutUint64(v[1:9], uint64(r.expiry.UnixNano()))
	v[9] = byte(len(r.mac))
	copy(v[10:], r.mac)
	return v
}

func decodeLease(v []byte) (*leaseRec, error) {
	if len(v) < 10 || len(v) != 10+int(v[9]) {
		return nil, fmt.Errorf("record of %d bytes is malformed", len(v))
	}
	r := &leaseRec{state: LeaseState(v[0]), expiry: time.Unix(0, int64(binary.BigEndian.Uint64(v[1:9])))}
	if v[9] > 0 {
		r.mac = append(net.HardwareAddr(nil), v[10:]...)
	}
	return r, nil
}

func ip2u(ip net.IP) uint32 {
	v4 := ip.To4()
	if v4 == nil {
		return 0
	}
	return binary.BigEndian.Uint32(v4)
}

func u2ip(u uint32) net.IP {
	ip := make(net.IP, 4)
	binary.BigEndian.PutUint32(ip, u)
	return ip
}
