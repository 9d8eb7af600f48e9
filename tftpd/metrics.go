package tftpd

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus collectors. They are created per
// Server so that tests and several servers in one process do not collide.
type metrics struct {
	transfers   *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	bytes       prometheus.Counter
	retransmits prometheus.Counter
	active      prometheus.Gauge
	badRequests prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		transfers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "tftp", Name: "transfers_total",
			Help: "TFTP read transfers by outcome (ok, probe, aborted, not_found, refused, timeout, error).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "bootfabric", Subsystem: "tftp", Name: "transfer_duration_seconds",
			Help:    "Duration of TFTP read transfers by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms .. ~4.4 min
		}, []string{"outcome"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "tftp", Name: "sent_bytes_total",
			Help: "File bytes sent by TFTP read transfers.",
		}),
		retransmits: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "tftp", Name: "retransmissions_total",
			Help: "TFTP DATA and OACK datagrams sent again after a timeout.",
		}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "bootfabric", Subsystem: "tftp", Name: "active_transfers",
			Help: "TFTP transfers in progress.",
		}),
		badRequests: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "tftp", Name: "bad_requests_total",
			Help: "Datagrams on the TFTP port that could not start a transfer (malformed or unexpected).",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.transfers, m.duration, m.bytes, m.retransmits, m.active, m.badRequests} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("tftpd: registering metrics: already registered (one registry per server): %w", err)
			}
			return nil, fmt.Errorf("tftpd: registering metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) done(r TransferResult) {
	o := string(r.Outcome)
	m.transfers.WithLabelValues(o).Inc()
	m.duration.WithLabelValues(o).Observe(r.Duration.Seconds())
	if r.Bytes > 0 {
		m.bytes.Add(float64(r.Bytes))
	}
	if r.Retransmissions > 0 {
		m.retransmits.Add(float64(r.Retransmissions))
	}
}
