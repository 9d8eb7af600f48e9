package fabricsim

import "testing"

// BenchmarkHealth simulates health aggregation over 40,960 nodes (the paper machine's size). The
// sim-us metric is the simulated completion time; ns/op is what the simulation costs.
//
//	go test ./fabricsim -run '^$' -bench Health -benchtime 3x
func BenchmarkHealth(b *testing.B) {
	const p = 40960
	for _, sc := range []struct {
		name string
		edit func(*HealthConfig)
	}{
		{"idle", func(*HealthConfig) {}},
		{"stragglers10pct", func(c *HealthConfig) {
			c.Stragglers = HealthStragglers{Fraction: 0.1, Slowdown: 20, MinSlowdown: 1}
		}},
		{"stragglers30pct", func(c *HealthConfig) {
			c.Stragglers = HealthStragglers{Fraction: 0.3, Slowdown: 20, MinSlowdown: 1}
		}},
		{"fault1", func(c *HealthConfig) { c.Faults, c.FaultWindowSeconds = 1, 1e-3 }},
		{"faults100", func(c *HealthConfig) { c.Faults, c.FaultWindowSeconds = 100, 1e-3 }},
	} {
		var sim [2]float64
		for i, alg := range HealthAlgorithms() {
			c := DefaultHealthConfig(alg, p)
			c.FailedFraction, c.Seed = 0.01, 1
			sc.edit(&c)
			b.Run(string(alg)+"/"+sc.name, func(b *testing.B) {
				var r HealthResult
				for i := 0; i < b.N; i++ {
					var err error
					if r, err = SimulateHealth(c); err != nil {
						b.Fatal(err)
					}
				}
				if !r.Accounted {
					b.Fatal("not every node accounted for")
				}
				b.ReportMetric(r.CompletionSeconds*1e6, "sim-us")
				b.ReportMetric(float64(r.Summary.Counts().Unreachable), "unreachable")
				sim[i] = r.CompletionSeconds
			})
		}
		if sim[1] > 0 {
			b.Logf("%s: binomial %.0f us, task %.0f us, binomial/task %.2f", sc.name, sim[0]*1e6, sim[1]*1e6, sim[0]/sim[1])
		}
	}
}
