package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"plan", "plan", 0},
		{"plna", "plan", 1},  // adjacent transposition
		{"pln", "plan", 1},   // insertion
		{"plans", "plan", 1}, // deletion
		{"plon", "plan", 1},  // substitution
		{"latencyus", "latency_us", 1},
		{"", "abc", 3},
		{"route", "mcast", 5},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
