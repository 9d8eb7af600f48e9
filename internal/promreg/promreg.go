// Package promreg is the one way bootfabric's packages register their Prometheus collectors.
//
// Several servers of one process may share a registry (dhcpd's sockets on ports 67 and 4011, two
// interfaces, a test's servers), so a collector whose identical twin is already registered is not
// an error: the caller gets the registered one and counts into it. Any other conflict (a metric
// of the same name with other labels or help) is an error naming the metric. A nil registry
// registers nothing: the collectors still count, and nobody reads them.
package promreg

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers *c with reg, or, when an identical collector of the same type is already
// registered, replaces *c with it.
func Register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	if reg == nil {
		return nil
	}
	err := reg.Register(*c)
	if err == nil {
		return nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			*c = existing
			return nil
		}
	}
	return fmt.Errorf("metrics: %s: %w", describe(*c), err)
}

// describe names a collector by its first metric family, for errors.
func describe(c prometheus.Collector) string {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	name := "collector"
	if d, ok := <-ch; ok {
		name = d.String()
	}
	for range ch { // let Describe finish
	}
	return name
}
