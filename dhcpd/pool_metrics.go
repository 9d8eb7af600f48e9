package dhcpd

import (
	"errors"
	"sync/atomic"

	"github.com/bootfabric/bootfabric/internal/promreg"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolStats are the pool's counters since it was opened.
type PoolStats struct {
	// Exhausted counts offers refused because no address was free.
	Exhausted uint64
	// Transactions counts lease-file commits (one fsync each); Writes the
	// lease records they wrote or deleted.
	Transactions, Writes uint64
	// Cached counts requests answered with a lease already on disk.
	Cached uint64
}

// Stats returns the pool's counters.
func (p *Pool) Stats() PoolStats {
	return PoolStats{Exhausted: p.m.nExhausted.Load(), Transactions: p.m.nTx.Load(), Writes: p.m.nWrites.Load(), Cached: p.m.nCached.Load()}
}

// countLeases counts the leases of the range by state, for the metrics.
func (p *Pool) countLeases() map[string]int {
	now := p.opts.Now().UnixNano()
	p.mu.Lock()
	defer p.mu.Unlock()
	c := map[string]int{"free": p.unused, "offered": 0, "bound": 0, "declined": 0, "expired": 0}
	for ip, r := range p.byIP {
		if !p.inRange(ip) {
			continue
		}
		switch {
		case r.expiry <= now:
			c["expired"]++
		case r.state == LeaseOffered:
			c["offered"]++
		case r.state == LeaseBound:
			c["bound"]++
		case r.state == LeaseDeclined:
			c["declined"]++
		default:
			c["expired"]++
		}
	}
	return c
}

// poolMetrics are the pool's collectors, with plain counters for Stats.
type poolMetrics struct {
	exhausted     prometheus.Counter
	tx            prometheus.Counter
	writes        prometheus.Counter
	commitSeconds prometheus.Histogram
	size          prometheus.Gauge
	cached        countingCounter

	nExhausted, nTx, nWrites, nCached atomic.Uint64
}

func newPoolMetrics(reg prometheus.Registerer, leases func() map[string]int) (*poolMetrics, error) {
	m := &poolMetrics{}
	ex := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "bootfabric", Subsystem: "dhcp_pool", Name: "exhausted_total",
		Help: "DHCPDISCOVERs left unanswered because no pool address was free.",
	})
	cached := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "bootfabric", Subsystem: "dhcp_pool", Name: "cached_total",
		Help: "DHCPREQUESTs answered with a lease already on disk and less than half used (no write).",
	})
	m.tx = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "bootfabric", Subsystem: "dhcp_pool", Name: "commits_total",
		Help: "Lease-file transactions committed (one fsync each); many leases share one.",
	})
	m.writes = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "bootfabric", Subsystem: "dhcp_pool", Name: "lease_writes_total",
		Help: "Lease records written or deleted by those transactions.",
	})
	m.commitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "bootfabric", Subsystem: "dhcp_pool", Name: "commit_seconds",
		Help:    "Time to write and fsync one lease-file transaction.",
		Buckets: prometheus.ExponentialBuckets(100e-6, 2, 14),
	})
	m.size = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "bootfabric", Subsystem: "dhcp_pool", Name: "size",
		Help: "Addresses in the pool's range.",
	})
	lc := &leaseCollector{count: leases, desc: prometheus.NewDesc("bootfabric_dhcp_pool_leases",
		"Pool addresses by state (free: never used; expired: reclaimable).", []string{"state"}, nil)}
	if err := errors.Join(promreg.Register(reg, &ex), promreg.Register(reg, &cached), promreg.Register(reg, &m.tx),
		promreg.Register(reg, &m.writes), promreg.Register(reg, &m.commitSeconds), promreg.Register(reg, &m.size),
		promreg.Register(reg, &lc)); err != nil {
		return nil, err
	}
	m.exhausted = countingCounter{ex, &m.nExhausted}
	m.cached = countingCounter{cached, &m.nCached}
	return m, nil
}

// countingCounter is a Prometheus counter that also keeps a count Stats can read.
type countingCounter struct {
	prometheus.Counter
	n *atomic.Uint64
}

func (c countingCounter) Inc() { c.Counter.Inc(); c.n.Add(1) }

// AddN adds n.
func (c countingCounter) AddN(n uint64) { c.Counter.Add(float64(n)); c.n.Add(n) }

// leaseCollector reports the leases by state when scraped.
type leaseCollector struct {
	count func() map[string]int
	desc  *prometheus.Desc
}

func (c *leaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *leaseCollector) Collect(ch chan<- prometheus.Metric) {
	for st, n := range c.count() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), st)
	}
}
