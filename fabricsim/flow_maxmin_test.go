package fabricsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// certify checks rate against the max-min certificate: no channel over capacity, no flow over its
// limit, and each flow either at its limit or crossing a saturated channel on which no flow has a
// higher rate.
func certify(in *maxMinInput, rate []float64) error {
	const tol = 1e-9
	load := make([]float64, len(in.capacity))
	maxRate := make([]float64, len(in.capacity))
	for k, p := range in.paths {
		if !(rate[k] >= 0) {
			return fmt.Errorf("class %d: rate %v", k, rate[k])
		}
		for _, c := range p {
			load[c] += in.weight[k] * rate[k]
			maxRate[c] = max(maxRate[c], rate[k])
		}
	}
	for c, l := range load {
		if l > in.capacity[c]*(1+tol)+tol {
			return fmt.Errorf("channel %d carries %v > capacity %v", c, l, in.capacity[c])
		}
	}
	for k, p := range in.paths {
		if rate[k] > in.limit[k]*(1+tol)+tol {
			return fmt.Errorf("class %d: rate %v over its limit %v", k, rate[k], in.limit[k])
		}
		if rate[k] >= in.limit[k]*(1-tol) {
			continue
		}
		ok := false
		for _, c := range p {
			if load[c] >= in.capacity[c]*(1-tol) && rate[k] >= maxRate[c]*(1-tol) {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("class %d (rate %v, limit %v) is below its limit and has no saturated channel where it is the fastest", k, rate[k], in.limit[k])
		}
	}
	return nil
}

func TestMaxMinGolden(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name string
		in   maxMinInput
		want []float64
	}{
		{"one bottleneck, weights", maxMinInput{capacity: []float64{100}, weight: []float64{3, 1}, limit: []float64{inf, inf},
			paths: [][]int32{{0}, {0}}}, []float64{25, 25}},
		// The classic: L0 (10) carries a, b, c; L1 (6) carries c, d. L1 saturates first at 3.
		{"two bottlenecks", maxMinInput{capacity: []float64{10, 6}, weight: []float64{1, 1, 1, 1}, limit: []float64{inf, inf, inf, inf},
			paths: [][]int32{{0}, {0}, {0, 1}, {1}}}, []float64{3.5, 3.5, 3, 3}},
		{"limit frees capacity", maxMinInput{capacity: []float64{30}, weight: []float64{1, 2}, limit: []float64{4, inf},
			paths: [][]int32{{0}, {0}}}, []float64{4, 13}},
		{"limit only", maxMinInput{capacity: []float64{30}, weight: []float64{1, 1}, limit: []float64{4, 7},
			paths: [][]int32{{}, {}}}, []float64{4, 7}},
		{"limit above share", maxMinInput{capacity: []float64{30}, weight: []float64{1, 1}, limit: []float64{20, inf},
			paths: [][]int32{{0}, {0}}}, []float64{15, 15}},
	}
	var m maxMin
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := m.solve(&tc.in); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, m.rate, cmpopts.EquateApprox(1e-12, 1e-12)); diff != "" {
				t.Errorf("rates (-want +got):\n%s", diff)
			}
			if err := certify(&tc.in, m.rate); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestMaxMinNoConstraint(t *testing.T) {
	var m maxMin
	in := maxMinInput{capacity: []float64{1}, weight: []float64{1}, limit: []float64{math.Inf(1)}, paths: [][]int32{{}}}
	if err := m.solve(&in); err == nil {
		t.Fatal("a class with neither channel nor limit was given a rate")
	}
}

// TestMaxMinCertificateRandom checks random problems, reusing one solver to catch stale buffers.
func TestMaxMinCertificateRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var m maxMin
	for trial := 0; trial < 500; trial++ {
		nc := 1 + rng.IntN(20)
		in := maxMinInput{capacity: make([]float64, nc)}
		for c := range in.capacity {
			in.capacity[c] = float64(1 + rng.IntN(1000))
		}
		for k := rng.IntN(40) + 1; k > 0; k-- {
			var p []int32
			for c := 0; c < nc; c++ {
				if rng.IntN(4) == 0 {
					p = append(p, int32(c))
				}
			}
			lim := math.Inf(1)
			if len(p) == 0 || rng.IntN(3) == 0 {
				lim = float64(1 + rng.IntN(300))
			}
			in.paths = append(in.paths, p)
			in.weight = append(in.weight, float64(1+rng.IntN(8)))
			in.limit = append(in.limit, lim)
		}
		if err := m.solve(&in); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if err := certify(&in, m.rate); err != nil {
			t.Fatalf("trial %d: %v\n%+v\nrates %v", trial, err, in, m.rate)
		}
	}
}
