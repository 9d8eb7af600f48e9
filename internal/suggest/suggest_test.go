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

func TestNearest(t *testing.T) {
	names := []string{"plan", "simulate", "serve", "status", "report", "route", "topology"}
	for _, tc := range []struct{ in, want string }{
		{"plna", "plan"}, {"simualte", "simulate"}, {"stauts", "status"}, {"topo", "topology"},
		{"rout", "route"}, {"xyz", ""}, {"s", ""}, {"reprot", "report"}, {"se", "serve"}, {"st", "status"}, {"sx", ""},
	} {
		if got := Nearest(tc.in, names); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
