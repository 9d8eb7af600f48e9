package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

const (
	// DefaultTTL is a membership's lease TTL when Join is given none.
	DefaultTTL = 3 * time.Second
	// MinTTL is the shortest TTL Join accepts. etcd itself raises TTLs below 1.5 election
	// timeouts (1.5 s with its defaults) to that.
	MinTTL = time.Second
	// minMargin is the least fencing margin, whatever the TTL.
	minMargin = 500 * time.Millisecond
)

var (
	// ErrNameTaken is returned by Join when a live member already holds the name.
	ErrNameTaken = errors.New("member name held by another live server")
	// ErrFenced is returned by guarded writes when the membership is not Valid or its lease no
	// longer holds the member key.
	ErrFenced = errors.New("membership not valid (lease not renewed in time, or lost): this server must not act for the fleet")
)

// Margin is the fencing margin for a TTL: max(TTL/3, 500 ms). Membership.Valid turns false that
// long before the lease can expire in etcd.
func Margin(ttl time.Duration) time.Duration { return max(ttl/3, minMargin) }

// Membership is this server's live membership in the fleet: the member key members/NAME attached
// to an etcd lease that a background loop renews. It re-joins by itself, with a new lease and the
// same name, after the lease was lost.
type Membership struct {
	c      *Client
	name   string
	info   []byte
	ttl    time.Duration // the lease TTL asked for, whole seconds
	margin time.Duration

	mu         sync.Mutex
	lease      clientv3.LeaseID
	validUntil time.Time     // send time of the last renewal + TTL - margin
	lastRenew  time.Time     // send time of the last successful renewal or grant
	lost       chan struct{} // closed when the current lease is gone
	left       bool
	term       uint64 // see Term

	renewals, failures, rejoins atomic.Int64

	cancel context.CancelFunc
	done   chan struct{}
}

// MembershipStats counts what a membership's renewal loop did.
type MembershipStats struct {
	Renewals        int64     // successful renewals
	RenewalFailures int64     // renewals that failed (etcd unreachable, lease gone)
	Rejoins         int64     // new leases after a lost one
	LeaseID         int64     // the current lease
	LastRenewal     time.Time // when the last successful renewal (or grant) was sent
}

// Join makes this server a live member called name, with info as its member record (its URLs,
// say), on a lease of ttl (DefaultTTL when 0; whole seconds, rounded up; at least MinTTL). It fails
// with ErrNameTaken while another live member holds name. The membership lives until Leave or
// until the client is closed (then its lease expires after ttl); ctx bounds only the join itself.
func (c *Client) Join(ctx context.Context, name string, info []byte, ttl time.Duration) (*Membership, error) {
	if err := validElement("member name", name); err != nil {
		return nil, err
	}
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < MinTTL {
		return nil, fmt.Errorf("membership TTL %v: at least %v", ttl, MinTTL)
	}
	ttl = (ttl + time.Second - 1).Truncate(time.Second)
	m := &Membership{c: c, name: name, info: append([]byte(nil), info...), ttl: ttl, margin: Margin(ttl)}
	if err := m.join(ctx); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(c.cli.Ctx())
	m.cancel, m.done = cancel, make(chan struct{})
	go m.run(lctx)
	return m, nil
}

// join grants a lease and creates the member key with it, unless a live member holds the name.
func (m *Membership) join(ctx context.Context) error {
	c := m.c
	sent := c.opts.Now()
	var grant *clientv3.LeaseGrantResponse
	err := c.do(ctx, "lease_grant", func(ctx context.Context) (err error) {
		grant, err = c.cli.Grant(ctx, int64(m.ttl/time.Second))
		return err
	})
	if err != nil {
		return c.wrap("join "+m.name, err)
	}
	key := c.keys.member(m.name)
	m.mu.Lock()
	info := string(m.info) // SetInfo may change it meanwhile
	m.mu.Unlock()
	var resp *clientv3.TxnResponse
	err = c.do(ctx, "member_join", func(ctx context.Context) (err error) {
		resp, err = c.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, info, clientv3.WithLease(grant.ID))).
			Else(clientv3.OpGet(key)).
			Commit()
		return err
	})
	if err != nil || !resp.Succeeded {
		m.revoke(grant.ID)
	}
	if err != nil {
		return c.wrap("join "+m.name, err)
	}
	if !resp.Succeeded {
		holder := int64(0)
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			holder = kvs[0].Lease
		}
		return fmt.Errorf("fleet %s: join %s: %w (lease %x): is another server running with this name?", c.fleet, m.name, ErrNameTaken, holder)
	}
	m.mu.Lock()
	m.lease = grant.ID
	m.lost = make(chan struct{})
	m.renewedLocked(sent, grant.TTL)
	m.mu.Unlock()
	return nil
}

// renewedLocked records a renewal (or grant) whose request was sent at sent and that etcd
// answered with ttl seconds: the lease lasts at least until sent + ttl wherever it is kept.
func (m *Membership) renewedLocked(sent time.Time, ttlSeconds int64) {
	if !m.c.opts.Now().Before(m.validUntil) {
		m.term++ // Valid was false until now (or this is a new lease)
	}
	ttl := min(time.Duration(ttlSeconds)*time.Second, m.ttl)
	until := sent.Add(ttl - m.margin)
	if until.After(m.validUntil) {
		m.validUntil = until
	}
	if sent.After(m.lastRenew) {
		m.lastRenew = sent
	}
}

// run renews the lease every (TTL - margin)/4 until ctx ends, and re-joins after a lost lease.
// It renews with one keep-alive request at a time (KeepAliveOnce) rather than the client's
// keep-alive stream, because fencing needs the time each renewal was sent, which the stream
// does not tell.
func (m *Membership) run(ctx context.Context) {
	defer close(m.done)
	interval := (m.ttl - m.margin) / 4
	wait := interval
	failing := false
	for {
		if !sleep(ctx, wait) {
			return
		}
		m.mu.Lock()
		lease := m.lease
		m.mu.Unlock()
		sent := m.c.opts.Now()
		var resp *clientv3.LeaseKeepAliveResponse
		err := m.c.do(ctx, "lease_keepalive", func(rctx context.Context) error {
			// One attempt may not take the whole fencing window: the next one should still
			// have a chance to keep the membership valid.
			actx, cancel := context.WithTimeout(rctx, 2*interval)
			defer cancel()
			var err error
			resp, err = m.c.cli.KeepAliveOnce(actx, lease)
			return err
		})
		switch {
		case err == nil:
			m.mu.Lock()
			m.renewedLocked(sent, resp.TTL)
			m.mu.Unlock()
			m.renewals.Add(1)
			m.c.metrics.renewals.WithLabelValues("ok").Inc()
			if failing {
				m.c.log.Info("fleet lease renewed again", zap.String("member", m.name))
				failing = false
			}
			wait = interval
		case ctx.Err() != nil:
			return
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			m.failed()
			m.c.log.Warn("fleet lease lost (expired or revoked in etcd); re-joining", zap.String("member", m.name), zap.String("lease", fmt.Sprintf("%x", lease)))
			m.markLost(lease)
			if !m.rejoin(ctx) {
				return
			}
			failing, wait = false, interval
		default:
			m.failed()
			if !failing {
				m.c.log.Warn("fleet lease renewal failed; retrying", zap.String("member", m.name), zap.Error(err))
				failing = true
			}
			wait = min(interval, 100*time.Millisecond)
		}
	}
}

func (m *Membership) failed() {
	m.failures.Add(1)
	m.c.metrics.renewals.WithLabelValues("failed").Inc()
}

// markLost ends the lease's validity and closes its Lost channel.
func (m *Membership) markLost(lease clientv3.LeaseID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease != lease {
		return
	}
	m.validUntil = time.Time{}
	select {
	case <-m.lost:
	default:
		close(m.lost)
	}
}

// rejoin joins again under the same name until it succeeds or ctx ends.
func (m *Membership) rejoin(ctx context.Context) bool {
	for n := 0; ; n++ {
		err := m.join(ctx)
		if err == nil {
			m.rejoins.Add(1)
			m.c.metrics.rejoins.Inc()
			m.c.log.Info("fleet membership re-joined", zap.String("member", m.name))
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		m.c.log.Warn("fleet re-join failed; retrying", zap.String("member", m.name), zap.Error(err))
		if !sleep(ctx, backoff(n)) {
			return false
		}
	}
}

// SetInfo replaces the member record: at once when the member key is still on this membership's
// lease, and at the next re-join in any case. A lost lease is no error here: the re-join
// publishes info.
func (m *Membership) SetInfo(ctx context.Context, info []byte) error {
	m.mu.Lock()
	m.info = bytes.Clone(info)
	lease, left := m.lease, m.left
	m.mu.Unlock()
	if left {
		return nil
	}
	key := m.c.keys.member(m.name)
	err := m.c.do(ctx, "member_info", func(ctx context.Context) error {
		_, err := m.c.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.LeaseValue(key), "=", lease)).
			Then(clientv3.OpPut(key, string(info), clientv3.WithLease(lease))).Commit()
		return err
	})
	if err != nil {
		return m.c.wrap("publish "+m.name+"'s member record", err)
	}
	return nil
}

// Valid reports whether this server may act as a member now: the time since the last renewal was
// sent is below TTL - margin, so the lease cannot have expired in etcd yet (see the package doc).
// Check it before every answer that only the owner of a node may give.
func (m *Membership) Valid() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.left && m.c.opts.Now().Before(m.validUntil)
}

// Term numbers the unbroken stretches of validity: it grows whenever Valid turns true again (a
// renewal that came after validity had lapsed, or a new lease after a lost one). A decision made
// from what the fleet looked like under one term (which server owns which node) must be made
// again under the next: the fleet may have changed meanwhile, unseen.
func (m *Membership) Term() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.term
}

// ValidUntil is the instant Valid turns false unless a renewal succeeds before it.
func (m *Membership) ValidUntil() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.validUntil
}

// Lost returns a channel closed when the current lease is gone (expired in etcd, or revoked by
// Leave). After a re-join Lost returns a new channel, for the new lease.
func (m *Membership) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lost
}

// Name is the member's name.
func (m *Membership) Name() string { return m.name }

// TTL is the lease's TTL.
func (m *Membership) TTL() time.Duration { return m.ttl }

// LeaseID is the current lease.
func (m *Membership) LeaseID() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(m.lease)
}

// Stats returns the renewal loop's counters.
func (m *Membership) Stats() MembershipStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return MembershipStats{
		Renewals: m.renewals.Load(), RenewalFailures: m.failures.Load(), Rejoins: m.rejoins.Load(),
		LeaseID: int64(m.lease), LastRenewal: m.lastRenew,
	}
}

// Leave stops renewing and revokes the lease, which deletes the member key at once: the other
// servers take this one's nodes over without waiting for the TTL. Valid is false from the start
// of Leave on.
func (m *Membership) Leave(ctx context.Context) error {
	m.mu.Lock()
	if m.left {
		m.mu.Unlock()
		return nil
	}
	m.left = true
	m.mu.Unlock()
	m.cancel()
	select {
	case <-m.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	m.mu.Lock()
	lease := m.lease
	m.mu.Unlock()
	err := m.c.do(ctx, "lease_revoke", func(ctx context.Context) error {
		_, err := m.c.cli.Revoke(ctx, lease)
		return err
	})
	if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return m.c.wrap("leave "+m.name, err)
	}
	m.markLost(lease)
	return nil
}

// revoke revokes a lease that Join did not use, best effort: it expires anyway.
func (m *Membership) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(m.c.cli.Ctx(), m.c.opts.RequestTimeout)
	defer cancel()
	m.c.cli.Revoke(ctx, id)
}
