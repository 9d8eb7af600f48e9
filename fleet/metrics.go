package fleet

import (
	"errors"
	"time"

	"github.com/bootfabric/bootfabric/internal/promreg"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the client's Prometheus collectors.
type metrics struct {
	latency  *prometheus.HistogramVec // etcd request seconds, by operation
	errors   *prometheus.CounterVec   // failed etcd requests, by operation
	renewals *prometheus.CounterVec   // lease keep-alive outcomes: ok, failed
	rejoins  prometheus.Counter       // memberships re-created after their lease was lost
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "bootfabric", Subsystem: "fleet", Name: "etcd_request_seconds",
			Help:    "Latency of etcd requests, by operation.",
			Buckets: prometheus.ExponentialBuckets(250e-6, 2, 16),
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "fleet", Name: "etcd_errors_total",
			Help: "etcd requests that failed, by operation.",
		}, []string{"op"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "fleet", Name: "lease_renewals_total",
			Help: "Membership lease renewals, by outcome (ok: etcd extended the lease; failed: a keep-alive stream broke or the lease was gone).",
		}, []string{"outcome"}),
		rejoins: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "fleet", Name: "rejoins_total",
			Help: "Memberships re-created with a new lease after the old one was lost.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	if err := errors.Join(promreg.Register(reg, &m.latency), promreg.Register(reg, &m.errors),
		promreg.Register(reg, &m.renewals), promreg.Register(reg, &m.rejoins)); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) observe(op string, d time.Duration, err error) {
	m.latency.WithLabelValues(op).Observe(d.Seconds())
	if err != nil {
		m.errors.WithLabelValues(op).Inc()
	}
}
