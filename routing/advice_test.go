package routing

import (
	"slices"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/topology"
)

// TestSuggest: on a 2-D fat-tree, up*/down* from the top level cannot route every pair, the fabric
// is connected, and the engines suggested are vtftr (deadlock-free, first), updn from one root,
// and minhop (every pair, not deadlock-free) last.
func TestSuggest(t *testing.T) {
	g, _ := fat2d(t, 4, 2, nil)
	fab := topology.NewFabric(g)
	eng, err := New("updn", Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := eng.Compute(g)
	if err != nil {
		t.Fatal(err)
	}
	if rep := Check(tb, CheckOptions{}); rep.Unreachable == 0 {
		t.Fatal("updn routed every pair of a 2-D fat-tree; the test needs a mismatch")
	}
	if !Connected(g, tb) {
		t.Fatal("Connected: false for an intact fabric")
	}
	got := Suggest(fab, "updn", Options{})
	if len(got) < 2 || got[0].Engine != "vtftr" || !got[0].DeadlockFree {
		t.Fatalf("Suggest = %+v, want vtftr (deadlock-free) first", got)
	}
	last := got[len(got)-1]
	for _, s := range got {
		if s.Engine == "updn" && len(s.Roots) != 1 {
			t.Errorf("updn suggested with roots %v, want the one top-level root its defaults lack", s.Roots)
		}
	}
	if last.DeadlockFree && last.Engine == "minhop" {
		t.Errorf("minhop suggested as deadlock-free on a 2-D fat-tree: %+v", got)
	}
	// Advice says the same as flags, in Suggest's order.
	adv := Advice(fab, "updn", Options{})
	if !strings.HasPrefix(adv, "; engines that route it: -e vtftr, or ") || !strings.Contains(adv, "-e updn --roots ") ||
		strings.Contains(adv, "-e minhop") != slices.ContainsFunc(got, func(s Suggestion) bool { return s.Engine == "minhop" }) {
		t.Errorf("Advice = %q for %+v", adv, got)
	}
}
