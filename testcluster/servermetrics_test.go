package testcluster

import (
	"strings"
	"testing"
)

func TestSumMetric(t *testing.T) {
	const text = `# HELP bootfabric_tftp_transfers_total TFTP transfers by outcome.
# TYPE bootfabric_tftp_transfers_total counter
bootfabric_tftp_transfers_total{outcome="ok"} 3
bootfabric_tftp_transfers_total{outcome="probe",note="a } b"} 2 1700000000000
bootfabric_tftp_transfers_total_extra 100
bootfabric_tftp_sent_bytes_total 5e+06
`
	for _, tc := range []struct {
		name string
		want float64
	}{{"bootfabric_tftp_transfers_total", 5}, {"bootfabric_tftp_sent_bytes_total", 5e6}, {"absent", 0}} {
		got, err := sumMetric(strings.NewReader(text), tc.name)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{"m{a=\"b\" 1\n", "m{a=\"b\"}\n", "m x\n"} {
		if _, err := sumMetric(strings.NewReader(bad), "m"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
