package dhcpd

import (
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"
)

// Pool errors. Handlers turn ErrNotOwned and ErrNotInPool into a NAK and
// ErrPoolExhausted into silence.
var (
	ErrPoolExhausted = errors.New("dhcpd: address pool exhausted")
	ErrNotOwned      = errors.New("dhcpd: address leased to another client")
	ErrNotInPool     = errors.New("dhcpd: address outside the pool")
	ErrPoolClosed    = errors.New("dhcpd: address pool closed")
	// ErrPoolShare: a limited client (PoolOptions.Limited) asked for an
	// address while the limited clients hold their whole share. Handlers
	// stay silent to a DISCOVER and NAK a REQUEST.
	ErrPoolShare = errors.New("dhcpd: address pool: the share of limited clients is full")
)

// LeaseState is the state of a lease.
type LeaseState uint8

const (
	// LeaseOffered: offered, not yet requested; expires after OfferTime.
	// Offers live in memory only (see Pool).
	LeaseOffered LeaseState = 1
	// LeaseBound: acknowledged; expires after LeaseTime.
	LeaseBound LeaseState = 2
	// LeaseDeclined: a client reported the address in use (DHCPDECLINE);
	// quarantined for LeaseTime.
	LeaseDeclined LeaseState = 3
	// LeaseReleased: the client gave the address back (DHCPRELEASE). The
	// address is free, but it stays remembered for the client so that the
	// client gets it back if nobody took it in between.
	LeaseReleased LeaseState = 4
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
	// BatchDelay is ignored: lease writes are always grouped (see Pool).
	//
	// Deprecated: kept so that old callers compile.
	BatchDelay time.Duration
	// Registerer receives the pool's metrics (exhaustion, leases by state,
	// commits). Nil: the metrics are kept (Stats) but not registered.
	Registerer prometheus.Registerer
	// Limited, if set, names the clients that share at most LimitedMax
	// addresses between them (offered or bound, unexpired); past that they
	// get ErrPoolShare, while the other clients always find the room left.
	// bootsrv limits the MACs outside its inventory so that they cannot
	// take the addresses its inventory nodes need. It is called once per
	// Offer and CommitLease, and for each lease when the pool opens; it must
	// be fast and safe for concurrent use. Nil: no client is limited.
	Limited func(mac net.HardwareAddr) bool
	// LimitedMax is the limited clients' share; 0 or less: none.
	LimitedMax int
}

// Pool is a dynamic address range whose leases live in a bbolt file; safe for concurrent use. A
// lease is on disk before CommitLease returns, so no ACK names a lease a restart could forget;
// offers stay in memory (RFC 2131 4.3.1), so a crash costs at most a NAK. One writer goroutine
// commits all dirty leases in one transaction, so fsyncs do not grow with the request rate.
type Pool struct {
	db         *bolt.DB
	start, end uint32
	opts       PoolOptions
	m          *poolMetrics

	// The lease tables hold no pointers (records by value, MACs as arrays), so the garbage
	// collector never scans them, however large the range.
	mu      sync.Mutex
	byIP    map[uint32]leaseRec
	byMAC   map[hwKey]uint32
	gen     uint32     // stamps each record change; heap entries with an older stamp are stale
	next    uint32     // where the next scan for a never-used address starts
	unused  int        // addresses of the range without a record
	expiry  expiryHeap // records of the range by expiry; stale entries are skipped
	dirty   map[uint32]struct{}
	pending *commitBatch // the batch that dirty will be written in
	closed  bool
	// The addresses limited clients hold (PoolOptions.Limited), to the stamp
	// of the record that counts, and their expiries (stale entries skipped):
	// the share is checked in O(log n), not by a scan of the range.
	limited    map[uint32]uint32
	limitedExp expiryHeap

	kick chan struct{} // wakes the writer; capacity 1
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the writer has finished
}

type leaseRec struct {
	mac     hwKey // zero for LeaseDeclined
	expiry  int64 // Unix nanoseconds
	state   LeaseState
	limited bool   // the client is limited (PoolOptions.Limited); in memory only
	gen     uint32 // stamp of this version
	durable uint32 // stamp of the version last written to disk
}

// hwKey is a hardware address as a comparable value without pointers.
type hwKey struct {
	b [16]byte
	n uint8
}

func keyOf(mac net.HardwareAddr) hwKey {
	var k hwKey
	k.n = uint8(copy(k.b[:], mac))
	return k
}

func (k hwKey) hw() net.HardwareAddr {
	if k.n == 0 {
		return nil
	}
	return append(net.HardwareAddr(nil), k.b[:k.n]...)
}

// OpenPool opens (creating if needed) the lease file at path for the
// inclusive range start..end. Leases outside the range are kept on disk
// but not used. Close it to stop its writer and release the file.
func OpenPool(path string, start, end net.IP, opts PoolOptions) (*Pool, error) {
	s, e := ip2u(start), ip2u(end)
	if start.To4() == nil || end.To4() == nil || s > e {
		return nil, fmt.Errorf("dhcpd: pool %s: bad range %v-%v", path, start, end)
	}
	db, err := openLeaseDB(path)
	if err != nil {
		return nil, err
	}
	p := &Pool{
		db: db, start: s, end: e, opts: opts.withDefaults(),
		byIP: map[uint32]leaseRec{}, byMAC: map[hwKey]uint32{}, next: s, limited: map[uint32]uint32{},
		dirty: map[uint32]struct{}{}, pending: newBatch(),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if err := db.Update(p.loadLeases); err != nil {
		db.Close()
		return nil, fmt.Errorf("dhcpd: load leases from %s: %w", path, err)
	}
	p.indexRange()
	if p.m, err = newPoolMetrics(opts.Registerer, p.countLeases); err != nil {
		db.Close()
		return nil, fmt.Errorf("dhcpd: pool metrics: %w", err)
	}
	p.m.size.Set(float64(uint64(e) - uint64(s) + 1))
	go p.writer()
	return p, nil
}

// withDefaults returns o with every zero field set to its default.
func (o PoolOptions) withDefaults() PoolOptions {
	if o.LeaseTime <= 0 {
		o.LeaseTime = time.Hour
	}
	if o.OfferTime <= 0 {
		o.OfferTime = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// isLimited reports whether mac is a limited client (PoolOptions.Limited).
func (p *Pool) isLimited(mac net.HardwareAddr) bool {
	return p.opts.Limited != nil && p.opts.Limited(mac)
}

// indexRange counts the addresses of the range without a record and puts
// those with one in the expiry heap.
func (p *Pool) indexRange() {
	p.unused = int(uint64(p.end) - uint64(p.start) + 1)
	for ip, r := range p.byIP {
		if p.inRange(ip) {
			p.unused--
			p.expiry = append(p.expiry, expiryEntry{at: r.expiry, ip: ip, gen: r.gen})
			p.trackLocked(ip, r)
		}
	}
	heap.Init(&p.expiry)
}

// Close writes what is still pending, stops the writer and closes the lease
// file. Offers, which are never written, are forgotten.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	return p.db.Close()
}

// Contains reports whether ip is in the pool's range.
func (p *Pool) Contains(ip net.IP) bool {
	return ip.To4() != nil && p.inRange(ip2u(ip))
}

func (p *Pool) inRange(u uint32) bool { return u >= p.start && u <= p.end }

// AddressPool hands out dynamic addresses: what the handler needs of a pool. Offer reserves an
// address for a DISCOVER (briefly: nothing durable), CommitLease binds it for a REQUEST and says
// how long the lease lasts (ErrNotOwned when another client holds it, ErrNotInPool outside the
// range), Release and Decline give it back. Implementations are safe for concurrent use.
type AddressPool interface {
	LeaseTime() time.Duration
	Offer(ctx context.Context, mac net.HardwareAddr, requested net.IP) (net.IP, error)
	CommitLease(ctx context.Context, mac net.HardwareAddr, ip net.IP) (time.Duration, error)
	Release(ctx context.Context, mac net.HardwareAddr, ip net.IP) error
	Decline(ctx context.Context, mac net.HardwareAddr, ip net.IP) error
	// Holds reports whether mac holds an unexpired bound lease on ip: a
	// DHCPINFORM is answered for that address only.
	Holds(ctx context.Context, mac net.HardwareAddr, ip net.IP) (bool, error)
}

var _ AddressPool = (*Pool)(nil)

// LeaseTime returns the lease time of bound leases.
func (p *Pool) LeaseTime() time.Duration { return p.opts.LeaseTime }

// Offer reserves an address for mac, in memory: its current lease if any (also
// an expired or released one nobody took since), else requested when free,
// else a never-used address, else the longest-expired one. It writes nothing.
func (p *Pool) Offer(ctx context.Context, mac net.HardwareAddr, requested net.IP) (net.IP, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := p.opts.Now().UnixNano()
	key, lim := keyOf(mac), p.isLimited(mac)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrPoolClosed
	}
	ip, ok := p.byMAC[key]
	if ok && p.inRange(ip) {
		rec := p.byIP[ip]
		if rec.state == LeaseBound && rec.expiry > now {
			return u2ip(ip), nil // a rebooting client: its lease stands
		}
		if lim && p.shareFullLocked(key, now) {
			return nil, ErrPoolShare
		}
		rec.state, rec.limited = LeaseOffered, lim
		p.putLocked(ip, rec, now+int64(p.opts.OfferTime))
		return u2ip(ip), nil
	}
	if lim && p.shareFullLocked(key, now) {
		return nil, ErrPoolShare
	}
	ip, ok = p.pickLocked(requested, now)
	if !ok {
		p.m.exhausted.Inc()
		return nil, ErrPoolExhausted
	}
	p.takeLocked(ip, key, lim, LeaseOffered, now+int64(p.opts.OfferTime))
	return u2ip(ip), nil
}

// Commit binds ip to mac (DHCPREQUEST) as CommitLease does, without telling
// when the lease ends.
func (p *Pool) Commit(ctx context.Context, mac net.HardwareAddr, ip net.IP) error {
	_, err := p.CommitLease(ctx, mac, ip)
	return err
}

// CommitLease binds ip to mac (DHCPREQUEST) and returns, once the lease is on
// disk, how long it lasts: LeaseTime, or, for a client whose durable lease on
// ip is less than half used, what is left of that lease, without writing
// anything. The second case is why it returns the time: a booting node asks two or three times
// within a minute (firmware PXE, iPXE, the OS), and answering those with the
// lease already on disk (telling the client its true remaining time) spares an
// fsync and the wait for it, as Kea's lease cache does. It fails with
// ErrNotOwned when another client holds ip, or when this client holds an unexpired lease on another
// address (a spoofed REQUEST with its MAC would move it), and ErrNotInPool outside the range.
func (p *Pool) CommitLease(ctx context.Context, mac net.HardwareAddr, ip net.IP) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !p.Contains(ip) {
		return 0, ErrNotInPool
	}
	b, left, err := p.bind(ip2u(ip), keyOf(mac), p.isLimited(mac), p.opts.Now().UnixNano())
	if err != nil {
		return 0, err
	}
	if b == nil {
		p.m.cached.AddN(1)
		return left, nil
	}
	select {
	case <-b.done:
		return p.opts.LeaseTime, b.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// bind binds address u to the client key (limited: PoolOptions.Limited says
// so) at now, in memory, and returns the batch that writes it; or, when the
// client's lease on u is on disk and less than half used, no batch and what
// is left of that lease.
func (p *Pool) bind(u uint32, key hwKey, lim bool, now int64) (*commitBatch, time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, 0, ErrPoolClosed
	}
	rec, held := p.byIP[u]
	if held && rec.mac != key && rec.expiry > now {
		return nil, 0, ErrNotOwned
	}
	if held && p.durableLease(rec, key, now) {
		return nil, time.Duration(rec.expiry - now), nil
	}
	if p.holdsOtherLocked(key, u, now) {
		return nil, 0, ErrNotOwned
	}
	// A REQUEST may come without a DISCOVER (INIT-REBOOT): the share is
	// checked here too, or a limited client could bind past it.
	if lim && p.shareFullLocked(key, now) {
		return nil, 0, ErrPoolShare
	}
	if old, ok := p.byMAC[key]; ok && old != u {
		p.deleteLocked(old) // one address per client
		p.markLocked(old)
	}
	if held && rec.mac == key {
		rec.state, rec.limited = LeaseBound, lim
		p.putLocked(u, rec, now+int64(p.opts.LeaseTime))
	} else {
		p.takeLocked(u, key, lim, LeaseBound, now+int64(p.opts.LeaseTime))
	}
	return p.markLocked(u), 0, nil
}

// holdsOtherLocked reports whether client key has a live bound lease on an address other than u.
// A client's live lease moves only through a lease of its own: Offer always offers a client its
// unexpired lease, so a REQUEST for another address comes from someone else with its MAC, and
// binding it would free the address the client still uses for the next one.
func (p *Pool) holdsOtherLocked(key hwKey, u uint32, now int64) bool {
	old, ok := p.byMAC[key]
	if !ok || old == u {
		return false
	}
	orec := p.byIP[old]
	return orec.state == LeaseBound && orec.expiry > now
}

// durableLease reports whether rec is key's bound lease, written to disk
// as it is and less than half used at now: a request for it needs no write.
func (p *Pool) durableLease(rec leaseRec, key hwKey, now int64) bool {
	return rec.mac == key && rec.state == LeaseBound && rec.durable == rec.gen && rec.expiry-now >= int64(p.opts.LeaseTime)/2
}

// Release frees ip if mac holds it (DHCPRELEASE). The address stays remembered
// for mac until another client needs it.
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
	now := p.opts.Now().UnixNano()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrPoolClosed
	}
	rec, held := p.byIP[u]
	if !held || !p.inRange(u) || rec.mac != keyOf(mac) {
		return nil
	}
	if quarantine {
		p.deleteLocked(u)
		p.takeLocked(u, hwKey{}, false, LeaseDeclined, now+int64(p.opts.LeaseTime))
	} else {
		rec.state = LeaseReleased
		p.putLocked(u, rec, now)
	}
	p.markLocked(u) // written with the next batch; nobody waits for it
	return nil
}

// Holds implements AddressPool: whether mac holds an unexpired bound lease
// on ip.
func (p *Pool) Holds(ctx context.Context, mac net.HardwareAddr, ip net.IP) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if !p.Contains(ip) {
		return false, nil
	}
	now := p.opts.Now().UnixNano()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false, ErrPoolClosed
	}
	rec, held := p.byIP[ip2u(ip)]
	return held && rec.mac == keyOf(mac) && rec.state == LeaseBound && rec.expiry > now, nil
}

// Leases returns a snapshot of all leases (offers included) sorted by address.
func (p *Pool) Leases() []Lease {
	p.mu.Lock()
	out := make([]Lease, 0, len(p.byIP))
	for ip, r := range p.byIP {
		out = append(out, Lease{IP: u2ip(ip), MAC: r.mac.hw(), Expiry: time.Unix(0, r.expiry), State: r.state})
	}
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return ip2u(out[i].IP) < ip2u(out[j].IP) })
	return out
}

// pickLocked finds an address for a new client: requested if free, else a
// never-used one, else the longest-expired one. Never-used addresses go
// first so that expired leases stay with their clients as long as possible.
func (p *Pool) pickLocked(requested net.IP, now int64) (uint32, bool) {
	if requested.To4() != nil && p.Contains(requested) {
		u := ip2u(requested)
		if r, held := p.byIP[u]; !held || r.expiry <= now {
			return u, true
		}
	}
	if p.unused > 0 {
		// Amortised O(1): the pointer passes every address once per lap, and
		// a lap ends on an unused address because unused > 0.
		for cur := p.next; ; {
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
	}
	for len(p.expiry) > 0 {
		top := p.expiry[0]
		if r, held := p.byIP[top.ip]; !held || r.gen != top.gen {
			heap.Pop(&p.expiry) // stale: the record changed or went
			continue
		}
		if top.at > now {
			return 0, false // the earliest expiry is still ahead: exhausted
		}
		return top.ip, true
	}
	return 0, false
}

// takeLocked gives ip to mac (zero: nobody, a quarantine; lim: a limited
// client), replacing whatever record ip had.
func (p *Pool) takeLocked(ip uint32, mac hwKey, lim bool, st LeaseState, exp int64) {
	p.deleteLocked(ip)
	if mac.n > 0 {
		p.byMAC[mac] = ip
	}
	if p.inRange(ip) {
		p.unused--
	}
	p.putLocked(ip, leaseRec{mac: mac, state: st, limited: lim}, exp)
}

// deleteLocked removes ip's record, if any.
func (p *Pool) deleteLocked(ip uint32) {
	old, held := p.byIP[ip]
	if !held {
		return
	}
	if old.mac.n > 0 && p.byMAC[old.mac] == ip {
		delete(p.byMAC, old.mac)
	}
	delete(p.byIP, ip)
	delete(p.limited, ip)
	if p.inRange(ip) {
		p.unused++
	}
}

// putLocked stores r for ip with expiry exp and a new stamp, and files it in
// the heap; the entry of the record's previous version becomes stale.
func (p *Pool) putLocked(ip uint32, r leaseRec, exp int64) {
	p.gen++
	r.expiry, r.gen = exp, p.gen
	p.byIP[ip] = r
	if !p.inRange(ip) {
		return
	}
	p.trackLocked(ip, r)
	heap.Push(&p.expiry, expiryEntry{at: exp, ip: ip, gen: r.gen})
	if len(p.expiry) > 2*len(p.byIP)+1024 {
		// Too many stale entries (renewals push one each): rebuild.
		p.expiry = p.expiry[:0]
		for ip, r := range p.byIP {
			if p.inRange(ip) {
				p.expiry = append(p.expiry, expiryEntry{at: r.expiry, ip: ip, gen: r.gen})
			}
		}
		heap.Init(&p.expiry)
	}
}

// trackLocked counts ip against the limited clients' share when r, its
// current record, is a limited client's offer or lease, and stops counting
// it otherwise. An expired record stops counting when limitedLocked reaches
// its expiry.
func (p *Pool) trackLocked(ip uint32, r leaseRec) {
	if !r.limited || (r.state != LeaseOffered && r.state != LeaseBound) {
		delete(p.limited, ip)
		return
	}
	p.limited[ip] = r.gen
	heap.Push(&p.limitedExp, expiryEntry{at: r.expiry, ip: ip, gen: r.gen})
	if len(p.limitedExp) > 2*len(p.limited)+1024 {
		// Too many stale entries (renewals push one each): rebuild.
		p.limitedExp = p.limitedExp[:0]
		for ip, gen := range p.limited {
			p.limitedExp = append(p.limitedExp, expiryEntry{at: p.byIP[ip].expiry, ip: ip, gen: gen})
		}
		heap.Init(&p.limitedExp)
	}
}

// limitedLocked returns how many addresses limited clients hold unexpired at
// now, forgetting those that expired.
func (p *Pool) limitedLocked(now int64) int {
	for len(p.limitedExp) > 0 && p.limitedExp[0].at <= now {
		e := heap.Pop(&p.limitedExp).(expiryEntry)
		if gen, ok := p.limited[e.ip]; ok && gen == e.gen {
			delete(p.limited, e.ip)
		}
	}
	return len(p.limited)
}

// shareFullLocked reports whether the limited client key may not take an
// address at now: it holds none that counts (one it holds it may keep, or
// trade for another), and the limited clients hold LimitedMax.
func (p *Pool) shareFullLocked(key hwKey, now int64) bool {
	n := p.limitedLocked(now)
	if ip, ok := p.byMAC[key]; ok {
		if _, counted := p.limited[ip]; counted {
			return false
		}
	}
	return n >= p.opts.LimitedMax
}

// expiryHeap orders the range's records by expiry, then address. It stays on container/heap, not
// internal/heapq: its key is Unix nanoseconds, which a float64 key would round to 256 ns, so the
// "earliest expiry is still ahead" test could look at the wrong record; and it is off the hot path
// (a push per lease written, not per packet).
type expiryHeap []expiryEntry

type expiryEntry struct {
	at  int64 // expiry, Unix nanoseconds
	ip  uint32
	gen uint32 // the stamp of the record version the entry was filed for
}

func (h expiryHeap) Len() int { return len(h) }
func (h expiryHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].ip < h[j].ip)
}
func (h expiryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)   { *h = append(*h, x.(expiryEntry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
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
