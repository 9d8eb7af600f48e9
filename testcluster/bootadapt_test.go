package testcluster

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootrun"
	"github.com/bootfabric/bootfabric/topology"
)

// adaptPlant is a small plant of two boards of n container nodes, each board's boot server
// behind a NIC of nicMbps, whose firmware fetches a 256 KiB kernel and an initrd of initrd bytes
// over HTTP and gives a file up after timeout seconds (then starts over from DHCP, at most 6
// times).
func adaptPlant(name string, n int, nicMbps float64, initrd int64, timeout string) comparePlant {
	return comparePlant{
		Name: name,
		Machine: &topology.Machine{
			Name: name,
			Levels: []topology.LevelSpec{
				{Name: "board", Prefix: "b", Count: 2, Uplink: &topology.LinkSpec{Segment: "N2", CapacityMbps: 1000, LatencyUS: 10}},
				{Name: "node", Prefix: "n", Count: n, Uplink: &topology.LinkSpec{Segment: "N1", CapacityMbps: 1000, LatencyUS: 10}},
			},
			Servers: topology.ServerSpec{Count: 2, NIC: topology.LinkSpec{Segment: "N5", CapacityMbps: nicMbps, LatencyUS: 10}},
		},
		Files:   BootFiles{NBP: debianNBP, Kernel: 256 << 10, Initrd: initrd},
		Timeout: timeout, Attempts: 6,
	}
}

// TestBootAdaptsPerLink runs `bootctl boot` with its default flags (the plant's configuration,
// credentials and power templates, nothing tuned) on two plants it was not tuned for, and all at
// once on each in the same test:
//
//   - gentle: 8 nodes behind each 100 Mb/s server NIC, a 1 MiB initrd, 8 s of patience: all at
//     once does not overload it;
//   - harsh: 8 nodes behind each 60 Mb/s NIC, an 8 MiB initrd, 3 s of patience, where a fair
//     share (7.5 Mb/s) takes 9 s for the initrd: all at once collapses into timeouts and
//     retries. The plan's default floor (a 50 MB image in 60 s, 6.7 Mb/s) lets every node in at
//     once, as on the harder plant: only what the run measures can save it.
//   - slow: 4 nodes behind each 40 Mb/s NIC, a 2 MiB kernel and a 12 MiB initrd, 5 s of
//     patience and 3 attempts (BenchmarkBootPlants' third plant, halved): all at once gives
//     each node 10 Mb/s, 10 s for the initrd, and boots next to none.
//
// bootctl boot must boot every node, never pause for a human, and take no longer than all at
// once (within 10 % and a second: on the gentle plant both are the same schedule, and the
// makespans differ by noise) where all at once boots them all. The plants are small (8 to 16
// nodes) to keep the test near three minutes on a loaded 2-core host; the figures are logged
// for docs/boot.md.
func TestBootAdaptsPerLink(t *testing.T) {
	slow := adaptPlant("ads", 4, 40, 12<<20, "5")
	slow.Files.Kernel, slow.Attempts = 2<<20, 3
	for _, p := range []comparePlant{adaptPlant("adg", 8, 100, 1<<20, "8"), adaptPlant("adh", 8, 60, 8<<20, "3"), slow} {
		t.Run(p.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			s := newCompareSetup(t, ctx, p)
			res, run := s.bootDefault(t, ctx, "run.journal")
			s.reset(t, ctx)
			s.powerOn(t, ctx, strings.Split(s.nodes, ","))
			s.wait(t, 2*time.Minute)
			all := s.measure(t, "all at once")
			t.Logf("%s: bootctl boot: %d healthy, %d failed, %d attempts, makespan %.1f s, power-ons over %.1f s (its own count %.1f s; patience learned %.1f s)",
				p.Name, run.Healthy, run.Failed, run.Attempts, run.Makespan, run.OnSpread, res.MakespanSeconds, res.PatienceSeconds)
			t.Logf("%s: all at once: %d healthy, %d failed, %d attempts, makespan %.1f s, power-ons over %.1f s", p.Name, all.Healthy, all.Failed, all.Attempts, all.Makespan, all.OnSpread)
			for _, ch := range res.LimitChanges {
				t.Logf("%s: limit t=%5.1f s %-22s %5.2f %s", p.Name, ch.At, res.Links[ch.Resource], ch.Limit, ch.Why)
			}
			n := len(s.c.Nodes)
			if run.Healthy != n || res.Healthy != n || res.Failed != 0 {
				t.Errorf("bootctl boot: %d of %d healthy at the nodes, %d by its count, %d failed", run.Healthy, n, res.Healthy, res.Failed)
			}
			if res.Paused != "" {
				t.Errorf("bootctl boot ended paused: %s", res.Paused)
			}
			if all.Healthy == n && run.Makespan > 1.1*all.Makespan+1 {
				t.Errorf("bootctl boot took %.1f s, all at once %.1f s", run.Makespan, all.Makespan)
			}
		})
	}
}

// bootDefault runs bootctl boot on every node with the default flags, journaled in the file
// journal of the setup's directory, and returns its JSON result and the run as the nodes saw it.
func (s *compareSetup) bootDefault(t testing.TB, ctx context.Context, journal string) (adaptResult, compareRun) {
	args := []string{"boot", "all", "--config", s.config, "--credentials", s.creds, "--exec-templates", s.templates,
		"--journal", filepath.Join(s.dir, journal), "-o", "json"}
	for _, u := range s.servers {
		args = append(args, "--server", u)
	}
	for _, tok := range s.tokens {
		args = append(args, "--token-file", tok)
	}
	out := s.bootctl(t, ctx, args...)
	var res adaptResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("bootctl boot -o json: %v\n%s", err, out)
	}
	s.wait(t, time.Minute)
	return res, s.measure(t, "bootctl boot")
}

// adaptResult is what the test reads of bootctl boot's JSON result.
type adaptResult struct {
	Healthy         int                   `json:"healthy"`
	Failed          int                   `json:"failed"`
	Paused          string                `json:"paused"`
	MakespanSeconds float64               `json:"makespan_seconds"`
	PatienceSeconds float64               `json:"patience_seconds"`
	Links           []string              `json:"links"`
	LimitChanges    []bootrun.LimitChange `json:"limit_changes"`
}
