package tftpd

import (
	"errors"
	"fmt"

	"github.com/bootfabric/bootfabric/internal/promreg"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus collectors. Servers that share a
// registry share them (internal/promreg).
type metrics struct {
	transfers   *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	bytes       prometheus.Counter
	retransmits prometheus.Counter
	active      prometheus.Gauge
	badRequests prometheus.Counter
	repeated    prometheus.Counter
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
		repeated: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "tftp", Name: "repeated_requests_total",
			Help: "Read requests from a client port whose transfer is running (a retransmitted request): not started twice.",
		}),
	}
	if err := errors.Join(promreg.Register(reg, &m.transfers), promreg.Register(reg, &m.duration), promreg.Register(reg, &m.bytes),
		promreg.Register(reg, &m.retransmits), promreg.Register(reg, &m.active), promreg.Register(reg, &m.badRequests),
		promreg.Register(reg, &m.repeated)); err != nil {
		return nil, fmt.Errorf("tftpd: %w", err)
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
