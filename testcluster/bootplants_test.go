package testcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// plantsPlants are the three plants of issue 37's comparison, each two boards of 8 container
// nodes behind shaped server NICs, firmware that starts over from DHCP after its patience with
// one file (at most 6 times):
//
//   - gentle: 100 Mb/s NICs, a 12 MiB initrd, 20 s of patience: all at once shares each link
//     among 8 nodes (8 s for the initrd) well inside the patience;
//   - harsh: TestBootAdaptsPerLink's, 60 Mb/s, an 8 MiB initrd, 3 s: a fair share takes 9 s;
//   - slow: 40 Mb/s, a 2 MiB kernel and a 12 MiB initrd, 5 s: a fair share takes 20 s for the
//     initrd, and only two nodes at a time get it within the patience.
func plantsPlants() []comparePlant {
	slow := adaptPlant("pls", 8, 40, 12<<20, "5")
	slow.Files.Kernel = 2 << 20
	return []comparePlant{adaptPlant("plg", 8, 100, 12<<20, "20"), adaptPlant("plh", 8, 60, 8<<20, "3"), slow}
}

// plantFigures is one plant's line of the comparison.
type plantFigures struct {
	Plant           string
	Boot, Again     compareRun // bootctl boot with default flags, and its second run
	All             compareRun
	Best            compareRun // the best stagger of the sweep (fewest failures, then makespan)
	BestRate        float64    // its power-on rate, nodes per second
	Dry, Calibrated float64    // the dry run's prediction, uncalibrated and calibrated on Boot's journal
	Patience        float64    // learned by the first bootctl boot
}

// plantSeconds is a run's makespan for the table, "none" when no node became healthy.
func plantSeconds(r compareRun) string {
	if r.Healthy == 0 {
		return "none"
	}
	return fmt.Sprintf("%.1fs", r.Makespan)
}

// BenchmarkBootPlants runs issue 37's comparison on three plants: bootctl boot with its default
// flags (the plant's configuration with its image store, credentials, power templates and the
// servers' tokens; nothing tuned), all at once, a sweep of fixed staggers around each link's
// service rate, and a second bootctl boot beside the dry run calibrated on the first one's
// journal. Run: go test ./testcluster -run '^$' -bench BootPlants -benchtime 1x -timeout 30m -v
// (as root; about 8 minutes). It prints each run as it ends, then the table of docs/boot.md.
func BenchmarkBootPlants(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	var figs []plantFigures
	for _, p := range plantsPlants() {
		figs = append(figs, runPlant(b, ctx, p))
	}
	fmt.Printf("\n%-7s %9s %9s %9s %17s %6s %9s %9s %7s %9s\n", "plant", "boot", "again", "all", "best stagger", "ratio",
		"dry run", "calib.", "error", "patience")
	for _, f := range figs {
		fmt.Printf("%-7s %8.1fs %8.1fs %9s %8.1fs %4.2f/s %5.2f %8.1fs %8.1fs %+6.1f%% %8.1fs\n", f.Plant,
			f.Boot.Makespan, f.Again.Makespan, plantSeconds(f.All), f.Best.Makespan, f.BestRate,
			f.Boot.Makespan/f.Best.Makespan, f.Dry, f.Calibrated, 100*(f.Calibrated-f.Again.Makespan)/f.Again.Makespan, f.Patience)
	}
	fmt.Println("boot: bootctl boot, default flags; again: its second run, predicted by calib. (the dry run calibrated on boot's journal);")
	fmt.Println("ratio: boot / best stagger; error: calib. against again; failed nodes are in the lines above.")
}

// runPlant runs the five ways on plant p and returns its figures.
func runPlant(b *testing.B, ctx context.Context, p comparePlant) plantFigures {
	s := newCompareSetup(b, ctx, p)
	f := plantFigures{Plant: p.Name}
	res, run := s.bootDefault(b, ctx, "a.journal")
	f.Boot, f.Patience = s.report(plantRun(p, run, "bootctl boot", res)), res.PatienceSeconds
	f.Dry = s.dryRun(b, ctx)
	f.Calibrated = s.dryRun(b, ctx, "--calibrate", filepath.Join(s.dir, "a.journal"))
	s.reset(b, ctx)
	names := strings.Split(s.nodes, ",")
	s.powerOn(b, ctx, names)
	s.wait(b, 3*time.Minute)
	f.All = s.report(s.measure(b, p.Name+": all at once"))
	rate := serviceRate(p)
	for _, x := range []float64{2, 1.4, 1, 0.7} {
		s.reset(b, ctx)
		r := s.stagger(b, ctx, x*rate)
		if f.Best.Way == "" || r.Failed < f.Best.Failed || r.Failed == f.Best.Failed && r.Makespan < f.Best.Makespan {
			f.Best, f.BestRate = r, x*rate
		}
	}
	s.reset(b, ctx)
	res, run = s.bootDefault(b, ctx, "b.journal")
	f.Again = s.report(plantRun(p, run, "bootctl boot again", res))
	fmt.Printf("%s: dry run %.1f s, calibrated on the first run %.1f s; patience learned %.1f s\n", p.Name, f.Dry, f.Calibrated, f.Patience)
	return f
}

// plantRun names a bootctl boot run and prints its limits' moves.
func plantRun(p comparePlant, run compareRun, way string, res adaptResult) compareRun {
	run.Way = p.Name + ": " + way
	for _, ch := range res.LimitChanges {
		if ch.Resource >= 0 && ch.Resource < len(res.Links) {
			fmt.Printf("  limit t=%5.1f s %-22s %5.2f %s\n", ch.At, res.Links[ch.Resource], ch.Limit, ch.Why)
		}
	}
	return run
}

// serviceRate is how many nodes a second the plant's server links serve at full rate: every
// link's capacity over one node's kernel and initrd.
func serviceRate(p comparePlant) float64 {
	bits := float64(p.Files.Kernel+p.Files.Initrd) * 8
	return float64(p.Machine.Servers.Count) * p.Machine.Servers.NIC.CapacityMbps * 1e6 / bits
}

// stagger powers the nodes on at rate nodes a second, one node of each board a step (so one a
// server), as a fixed stagger does it, and measures the boot.
func (s *compareSetup) stagger(b *testing.B, ctx context.Context, rate float64) compareRun {
	boards := s.plant.Machine.Levels[0].Count
	per := len(s.c.Nodes) / boards
	step := time.Duration(float64(boards) / rate * float64(time.Second))
	start := time.Now()
	for k := 0; k < per; k++ {
		var group []string
		for bd := 0; bd < boards; bd++ {
			group = append(group, s.c.Nodes[bd*per+k].Name)
		}
		// Each step at its time from the start, however long the power-on before it took.
		time.Sleep(time.Until(start.Add(time.Duration(k) * step)))
		s.powerOn(b, ctx, group)
	}
	s.wait(b, 3*time.Minute)
	return s.report(s.measure(b, fmt.Sprintf("%s: stagger %.2f/s (%d every %v)", s.plant.Name, rate, boards, step.Round(time.Millisecond))))
}

// dryRun runs bootctl boot --dry-run with the default flags and extra, and returns its
// predicted makespan.
func (s *compareSetup) dryRun(b *testing.B, ctx context.Context, extra ...string) float64 {
	args := append([]string{"boot", "all", "--config", s.config, "--dry-run", "-o", "json"}, extra...)
	out := s.bootctl(b, ctx, args...)
	var plan struct {
		Predicted float64 `json:"predicted_seconds"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		b.Fatalf("bootctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return plan.Predicted
}
