package promreg

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func counter(help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "bootfabric_test_total", Help: help})
}

func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := counter("h")
	if err := Register(reg, &a); err != nil {
		t.Fatal(err)
	}
	b := counter("h")
	if err := Register(reg, &b); err != nil {
		t.Fatalf("an identical twin: %v", err)
	}
	if b != a {
		t.Fatal("the twin was not replaced by the registered collector")
	}
	b.Inc()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if got := mfs[0].GetMetric()[0].GetCounter().GetValue(); got != 1 {
		t.Fatalf("registered counter reads %v after the twin counted 1", got)
	}
	c := counter("other help")
	err = Register(reg, &c)
	if err == nil || !strings.Contains(err.Error(), "bootfabric_test_total") {
		t.Fatalf("a conflicting collector: got %v, want an error naming the metric", err)
	}
	d := counter("h")
	if err := Register(nil, &d); err != nil || d == nil {
		t.Fatalf("nil registry: %v", err)
	}
}
