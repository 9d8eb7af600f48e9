package fabricsim

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hsRandomReports draws n nodes' statuses plus, for some, extra contradictory or duplicate reports.
func hsRandomReports(rng *rand.Rand, n int) []HealthEntry {
	var es []HealthEntry
	for id := 0; id < n; id++ {
		es = append(es, HealthEntry{Node: id, Status: HealthStatus(1 + rng.IntN(3))})
		for rng.IntN(4) == 0 {
			es = append(es, HealthEntry{Node: id, Status: HealthStatus(1 + rng.IntN(3))})
		}
	}
	return es
}

// hsMergeRandomly folds the single-entry summaries of es in a random order and grouping, with some
// summaries merged more than once.
func hsMergeRandomly(t *testing.T, rng *rand.Rand, es []HealthEntry) HealthSummary {
	t.Helper()
	parts := make([]HealthSummary, 0, len(es))
	for _, e := range es {
		s, err := NewHealthSummary(e)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, s)
		if rng.IntN(5) == 0 {
			parts = append(parts, s) // duplicate delivery
		}
	}
	for len(parts) > 1 {
		i := rng.IntN(len(parts))
		j := rng.IntN(len(parts) - 1)
		if j >= i {
			j++
		}
		m := parts[i].Merge(parts[j])
		if rng.IntN(7) == 0 {
			m = m.Merge(parts[j]) // a partial folded in twice
		}
		parts[i] = m
		parts[j] = parts[len(parts)-1]
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 {
		return HealthSummary{}
	}
	return parts[0]
}

func TestHealthSummaryMergeOrderFree(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := rng.IntN(60)
		es := hsRandomReports(rng, n)
		want, err := NewHealthSummary(es...)
		if err != nil {
			t.Fatal(err)
		}
		// The expected status is the maximum reported for each node.
		top := make([]HealthStatus, n)
		for _, e := range es {
			top[e.Node] = max(top[e.Node], e.Status)
		}
		for id, st := range top {
			if got := want.Status(id); got != st {
				t.Fatalf("seed %d: node %d: status %v, want %v", seed, id, got, st)
			}
		}
		c := want.Counts()
		if c.Total() != n || !want.CoversExactly(n) {
			t.Fatalf("seed %d: counts %+v / coverage wrong for %d nodes", seed, c, n)
		}
		for trial := 0; trial < 5; trial++ {
			rng.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
			got := hsMergeRandomly(t, rng, es)
			if diff := cmp.Diff(want.Entries(), got.Entries()); diff != "" || got.Counts() != want.Counts() {
				t.Fatalf("seed %d trial %d: random merge order differs (-want +got):\n%s counts %+v want %+v",
					seed, trial, diff, got.Counts(), want.Counts())
			}
		}
	}
}

func TestHealthSummaryLaws(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	gen := func() HealthSummary {
		var es []HealthEntry
		for i := rng.IntN(20); i > 0; i-- {
			es = append(es, HealthEntry{Node: rng.IntN(30), Status: HealthStatus(1 + rng.IntN(3))})
		}
		s, err := NewHealthSummary(es...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for i := 0; i < 500; i++ {
		a, b, c := gen(), gen(), gen()
		if !a.Merge(b).Equal(b.Merge(a)) {
			t.Fatalf("not commutative: %v %v", a.Entries(), b.Entries())
		}
		if !a.Merge(b).Merge(c).Equal(a.Merge(b.Merge(c))) {
			t.Fatalf("not associative: %v %v %v", a.Entries(), b.Entries(), c.Entries())
		}
		if !a.Merge(a).Equal(a) || a.Merge(a).Counts() != a.Counts() {
			t.Fatalf("not idempotent: %v", a.Entries())
		}
		if !a.Merge(HealthSummary{}).Equal(a) {
			t.Fatalf("empty summary is not neutral: %v", a.Entries())
		}
	}
}

func TestHealthSummaryJSON(t *testing.T) {
	s, err := NewHealthSummary(
		HealthEntry{Node: 2, Status: HealthFailed},
		HealthEntry{Node: 0, Status: HealthHealthy},
		HealthEntry{Node: 1, Status: HealthUnreachable},
		HealthEntry{Node: 0, Status: HealthUnknown},
	)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"healthy":1,"failed":1,"unreachable":1,"nodes":{"0":"healthy","1":"unreachable","2":"failed"}}`
	if string(b) != want {
		t.Fatalf("JSON %s, want %s", b, want)
	}
	var back HealthSummary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(s) || back.Counts() != s.Counts() {
		t.Fatalf("round trip: %v, want %v", back.Entries(), s.Entries())
	}
}

func TestHealthSummaryBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []HealthEntry
	}{
		{"negative node", []HealthEntry{{Node: -1, Status: HealthHealthy}}},
		{"unknown status", []HealthEntry{{Node: 1, Status: 9}}},
	} {
		if _, err := NewHealthSummary(tc.in...); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	var s HealthSummary
	for _, in := range []string{`{"nodes":{"x":"healthy"}}`, `{"nodes":{"1":"sick"}}`, `[`} {
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestParseHealthStragglers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want HealthStragglers
		bad  bool
	}{
		{in: "", want: HealthStragglers{Slowdown: 1}},
		{in: "0.1:20", want: HealthStragglers{Fraction: 0.1, Slowdown: 20}},
		{in: "0.25:1-50", want: HealthStragglers{Fraction: 0.25, Slowdown: 50, MinSlowdown: 1}},
		{in: "1:2-2:net", want: HealthStragglers{Fraction: 1, Slowdown: 2, MinSlowdown: 2, SlowNetwork: true}},
		{in: "0.1", bad: true},
		{in: "2:20", bad: true},
		{in: "0.1:0.5", bad: true},
		{in: "0.1:20-5", bad: true},
		{in: "0.1:20:disk", bad: true},
		{in: "NaN:20", bad: true},
		{in: "0.1:Inf", bad: true},
	} {
		got, err := ParseHealthStragglers(tc.in)
		if (err != nil) != tc.bad {
			t.Errorf("%q: error %v, want error %v", tc.in, err, tc.bad)
			continue
		}
		if diff := cmp.Diff(tc.want, got); !tc.bad && diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.in, diff)
		}
	}
}

// FuzzParseHealthStragglers: any accepted spec is a valid straggler configuration.
func FuzzParseHealthStragglers(f *testing.F) {
	for _, s := range []string{"", "0.1:20", "0.25:1-50", "1:2-2:net", "0.1:20-5", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseHealthStragglers(s)
		if err != nil {
			return
		}
		c := DefaultHealthConfig(HealthTask, 4)
		c.Stragglers = st
		if err := c.check(); err != nil {
			t.Fatalf("%q parsed to %+v, which the config rejects: %v", s, st, err)
		}
	})
}
