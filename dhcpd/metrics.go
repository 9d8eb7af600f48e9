package dhcpd

import (
	"errors"

	"github.com/bootfabric/bootfabric/internal/promreg"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus collectors.
type metrics struct {
	packets *prometheus.CounterVec // by message type and outcome
	latency prometheus.Histogram   // receive to reply sent
	drops   *prometheus.CounterVec // by reason
	queue   prometheus.Gauge       // packets waiting for a worker
	// queueWait is how long a request waited for a worker, by queue class (request, discover).
	queueWait *prometheus.HistogramVec
	replies   *prometheus.CounterVec // sent, by delivery
	// unicastFallbacks counts replies broadcast because the neighbour
	// entry for a unicast could not be installed.
	unicastFallbacks prometheus.Counter
	refused          *prometheus.CounterVec // by Decision.Reason
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		packets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "dhcp", Name: "packets_total",
			Help: "DHCP requests handled, by message type and outcome.",
		}, []string{"type", "outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "bootfabric", Subsystem: "dhcp", Name: "handler_seconds",
			Help:    "Time from receiving a DHCP request to sending its reply.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16),
		}),
		drops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "dhcp", Name: "dropped_total",
			Help: "DHCP packets dropped without an answer, by reason (malformed, duplicate, queue_full, " +
				"superseded and stale: dropped from the queue because the client moved on or stopped asking, send_failed, error).",
		}, []string{"reason"}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "bootfabric", Subsystem: "dhcp", Name: "queue_length",
			Help: "DHCP requests waiting for a worker.",
		}),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "bootfabric", Subsystem: "dhcp", Name: "queue_wait_seconds",
			Help: "Time DHCP requests served waited for a worker, by queue: request (every message but DISCOVER, served first) or discover.",
			// Around clients' retransmit intervals (udhcpc 3 s, RFC 2131 4 s) and udhcpc's 9 s for three REQUESTs.
			Buckets: []float64{0.001, 0.01, 0.1, 0.5, 1, 2, 3, 5, 9, 15, 30},
		}, []string{"queue"}),
		replies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "dhcp", Name: "replies_total",
			Help: "DHCP replies sent, by delivery (unicast, broadcast, relay, ciaddr, peer).",
		}, []string{"delivery"}),
		unicastFallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "dhcp", Name: "unicast_fallbacks_total",
			Help: "Replies broadcast because the neighbour entry for unicast delivery could not be installed (needs CAP_NET_ADMIN).",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "dhcp", Name: "refused_total",
			Help: "DHCP requests refused, by reason: a giaddr no relay can have (giaddr_*: self, attached, broadcast, loopback...), " +
				"an INFORM for an address that is not the client's (ciaddr_*), a client past its kind's share of the pool (pool_share).",
		}, []string{"reason"}),
	}
	if reg == nil {
		return m, nil
	}
	err := errors.Join(
		promreg.Register(reg, &m.packets), promreg.Register(reg, &m.latency), promreg.Register(reg, &m.drops),
		promreg.Register(reg, &m.queue), promreg.Register(reg, &m.queueWait), promreg.Register(reg, &m.replies), promreg.Register(reg, &m.unicastFallbacks),
		promreg.Register(reg, &m.refused),
	)
	if err != nil {
		return nil, err
	}
	return m, nil
}
