package bootrun

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/nodestate"
)

// boot is a node's journaled boot in a calibration test: the attempt and the times it reached
// firmware (the BMC answered), loading, its first file (kernel on the servers), booted and
// healthy; a negative time leaves the phase out (a poll missed it).
type boot struct {
	attempt                              int
	answer, load, first, files, healthAt float64
	// stale, when positive, is a server entry of this attempt before its DHCP request that
	// still shows the previous attempt's kernel (the node was cycled mid-transfer).
	stale float64
}

// journalOf writes a version 2 journal of the boots (by node, in order) and reads it back.
func journalOf(t *testing.T, boots map[string][]boot, skipped ...string) *JournalContents {
	t.Helper()
	c, err := ReadJournal(journalFile(t, boots, skipped...))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// journalFile writes a version 2 journal of the boots (by node, in order) and returns its path.
func journalFile(t *testing.T, boots map[string][]boot, skipped ...string) string {
	t.Helper()
	names := []string{}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		if boots[n] != nil || strings.Contains(strings.Join(skipped, ","), n) {
			names = append(names, n)
		}
	}
	path := filepath.Join(t.TempDir(), "run.journal")
	j, err := CreateJournal(path, names)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		if boots[n] == nil {
			j.Add(JournalEntry{Node: i, Record: NodeRecord{Name: n, Phase: Healthy, Skipped: true}, Event: EntrySkipped})
			continue
		}
		for _, b := range boots[n] {
			add := func(p Phase, at float64, srv nodestate.State) {
				if at < 0 {
					return
				}
				// The record keeps the phase's time; the entry is written a little later.
				e := JournalEntry{Node: i, Record: NodeRecord{Name: n, Phase: p, Attempts: b.attempt}, Event: EntryPhase, At: at + 0.001,
					Server: &ServerSeen{State: srv, Attempt: b.attempt}}
				switch p {
				case Firmware:
					e.At = at
				case Loading:
					e.Record.LoadAt = b.load
				case Booted:
					e.Record.BootAt = at
				case Healthy:
					e.Record.HealthAt = at
				}
				if srv == nodestate.Kernel {
					e.Event, e.At = EntryServer, at
				}
				j.Add(e)
			}
			add(Firmware, b.answer, nodestate.Pending)
			if b.stale > 0 {
				j.Add(JournalEntry{Node: i, Record: NodeRecord{Name: n, Phase: Firmware, Attempts: b.attempt}, Event: EntryServer, At: b.stale,
					Server: &ServerSeen{State: nodestate.Kernel, Attempt: b.attempt - 1}})
			}
			add(Loading, b.load, nodestate.Discover)
			add(Loading, b.first, nodestate.Kernel)
			add(Booted, b.files, nodestate.Initrd)
			add(Healthy, b.healthAt, nodestate.Healthy)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCalibrateJournals: the journals read from their files calibrate as Calibrate does, each
// named by its path; a missing file is an error.
func TestCalibrateJournals(t *testing.T) {
	boots := map[string][]boot{
		"a": {{1, 0, 10, 11, 15, 45, 0}},
		"b": {{1, 1, 13, 15, 23, 54, 0}},
		"c": {{1, 2, 22, 25, 33, 68, 0}},
	}
	paths := []string{journalFile(t, boots), journalFile(t, boots)}
	got, err := CalibrateJournals(paths, 50e6)
	if err != nil {
		t.Fatal(err)
	}
	var runs []CalibrationRun
	for _, p := range paths {
		c, err := ReadJournal(p)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, CalibrationRun{Name: p, Contents: c})
	}
	want, err := Calibrate(runs, 50e6)
	if err != nil {
		t.Fatal(err)
	}
	if got.Post != want.Post || got.DHCP != want.DHCP || got.Health != want.Health || got.Post.Samples != 6 {
		t.Errorf("CalibrateJournals: %+v, want %+v (6 POST samples)", got, want)
	}
	if _, err := CalibrateJournals([]string{filepath.Join(t.TempDir(), "missing")}, 0); err == nil {
		t.Error("a missing journal calibrated")
	}
}

func TestCalibrate(t *testing.T) {
	// Three boots with POST 10, 12 and 20 s, DHCP 1, 2 and 3 s, transfers of 4, 8 and 8 s and
	// health 30, 31 and 35 s.
	three := map[string][]boot{
		"a": {{1, 0, 10, 11, 15, 45, 0}},
		"b": {{1, 1, 13, 15, 23, 54, 0}},
		"c": {{1, 2, 22, 25, 33, 68, 0}},
	}
	for _, tc := range []struct {
		name    string
		boots   map[string][]boot
		skipped []string
		version int
		image   float64
		want    *Calibration
		err     string
	}{
		{name: "three boots", boots: three, skipped: []string{"d"}, image: 40e6, want: &Calibration{Nodes: 3, Runs: 1,
			Post: PhaseFit{3, 12, 10, 20}, DHCP: PhaseFit{3, 2, 1, 3}, Transfer: PhaseFit{3, 8, 4, 8}, Health: PhaseFit{3, 31, 30, 35},
			TransferMbps: &PhaseFit{3, 40, 40, 80}, MakespanSeconds: 68}},
		// Only the last attempt counts: the first one of d timed out in its firmware.
		{name: "a retried node", image: 0, boots: map[string][]boot{
			"a": three["a"], "b": three["b"],
			"d": {{1, 0, -1, -1, -1, -1, 0}, {2, 100, 110, 112, 120, 150, 0}},
		}, want: &Calibration{Nodes: 3, Runs: 1,
			Post: PhaseFit{3, 10, 10, 12}, DHCP: PhaseFit{3, 2, 1, 2}, Transfer: PhaseFit{3, 8, 4, 8}, Health: PhaseFit{3, 30, 30, 31}, MakespanSeconds: 150}},
		// A node cycled mid-transfer: the servers show its old kernel until its new DHCP request,
		// and that is not this attempt's first file.
		{name: "a stale server state", boots: map[string][]boot{
			"a": three["a"], "b": three["b"],
			"d": {{1, 0, 10, 11, -1, -1, 0}, {2, 100, 110, 112, 120, 150, 105}},
		}, want: &Calibration{Nodes: 3, Runs: 1,
			Post: PhaseFit{3, 10, 10, 12}, DHCP: PhaseFit{3, 2, 1, 2}, Transfer: PhaseFit{3, 8, 4, 8}, Health: PhaseFit{3, 30, 30, 31}, MakespanSeconds: 150}},
		// A poll that missed the first file leaves DHCP and transfer unmeasured for that node.
		{name: "a missed phase", boots: map[string][]boot{
			"a": three["a"], "b": three["b"], "c": {{1, 2, 22, -1, 33, 68, 0}},
		}, want: &Calibration{Nodes: 3, Runs: 1,
			Post: PhaseFit{3, 12, 10, 20}, DHCP: PhaseFit{2, 1.5, 1, 2}, Transfer: PhaseFit{2, 6, 4, 8}, Health: PhaseFit{3, 31, 30, 35}, MakespanSeconds: 68}},
		// Files in and health report between the same two polls: the healthy poll's time is the
		// files' too (health 0 s), not a node without a transfer or a health time.
		{name: "booted between two polls", boots: map[string][]boot{
			"a": three["a"], "b": three["b"], "c": {{1, 2, 22, 25, -1, 35, 0}},
		}, want: &Calibration{Nodes: 3, Runs: 1,
			Post: PhaseFit{3, 12, 10, 20}, DHCP: PhaseFit{3, 2, 1, 3}, Transfer: PhaseFit{3, 8, 4, 10}, Health: PhaseFit{3, 30, 0, 31}, MakespanSeconds: 54}},
		{name: "too few nodes", boots: map[string][]boot{"a": three["a"], "b": three["b"]}, skipped: []string{"c"},
			err: "2 nodes booted to healthy in all; a calibration needs at least 3"},
		{name: "version 1", boots: three, version: 1, err: "format version 1 records no phase times"},
		{name: "times out of order", boots: map[string][]boot{"a": three["a"], "b": three["b"], "c": {{1, 2, 22, 25, 33, 30, 0}}},
			err: "node c: phase times out of order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := journalOf(t, tc.boots, tc.skipped...)
			if tc.version != 0 {
				c.Version = tc.version
			}
			got, err := Calibrate([]CalibrationRun{{Name: "run.journal", Contents: c}}, tc.image)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "run.journal") {
					t.Fatalf("error %v, want one naming run.journal with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !calibrationsEqual(got, tc.want) {
				t.Errorf("got  %+v %+v\nwant %+v %+v", *got, got.TransferMbps, *tc.want, tc.want.TransferMbps)
			}
		})
	}
	// Runs pool: two journals of two boots each make a calibration of four; the second run's
	// makespan counts from its first BMC answer (1 s): 67 s.
	one, two := journalOf(t, map[string][]boot{"a": three["a"], "b": three["b"]}), journalOf(t, map[string][]boot{"a": three["c"], "b": three["b"]})
	got, err := Calibrate([]CalibrationRun{{"one", one}, {"two", two}}, 0)
	if err != nil || got.Runs != 2 || got.Nodes != 4 || got.Post.Median != 12 || got.MakespanSeconds != 67 || len(got.NodeNames) != 2 {
		t.Errorf("two runs: %+v, %v", got, err)
	}
	if _, err := Calibrate(nil, 0); err == nil {
		t.Error("a calibration of no journal")
	}
}

func calibrationsEqual(a, b *Calibration) bool {
	near := func(x, y PhaseFit) bool {
		return x.Samples == y.Samples && math.Abs(x.Median-y.Median) < 1e-9 && math.Abs(x.P10-y.P10) < 1e-9 && math.Abs(x.P90-y.P90) < 1e-9
	}
	if (a.TransferMbps == nil) != (b.TransferMbps == nil) || a.TransferMbps != nil && !near(*a.TransferMbps, *b.TransferMbps) {
		return false
	}
	return a.Nodes == b.Nodes && a.Runs == b.Runs && near(a.Post, b.Post) && near(a.DHCP, b.DHCP) && near(a.Transfer, b.Transfer) &&
		near(a.Health, b.Health) && a.MakespanSeconds == b.MakespanSeconds
}

// TestCalibrateLiveRun fits the journal of a live run of machines that take a tick per state:
// every node it booted is counted, and each phase takes about what the machines take.
func TestCalibrateLiveRun(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	f := &fakeFleet{states: map[string]NodeState{}, armed: map[string]bool{}, ons: map[string][]time.Time{}, tick: 50 * time.Millisecond}
	journal := filepath.Join(t.TempDir(), "run.journal")
	l := liveRun(t, f, names, journal, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := ReadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	cal, err := Calibrate([]CalibrationRun{{Name: journal, Contents: c}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cal.Nodes != 4 || cal.Health.Samples == 0 || cal.Post.Samples == 0 {
		t.Fatalf("calibration %+v", cal)
	}
	t.Logf("fitted: post %+v dhcp %+v transfer %+v health %+v, makespan %.3f s", cal.Post, cal.DHCP, cal.Transfer, cal.Health, cal.MakespanSeconds)
	// Health follows the last file by one tick; polls of 10 ms blur it, a loaded machine more.
	if h := cal.Health.Median; h < 0.01 || h > 2 {
		t.Errorf("health median %.3f s for machines that take 0.05 s", h)
	}
}

// A server state the servers dated (ServerSeen.Since) counts from its date, not from the poll
// that saw it: node c's kernel, seen 0.8 s late, is its first file at 25 s.
func TestCalibrateServerDates(t *testing.T) {
	c := journalOf(t, map[string][]boot{
		"a": {{1, 0, 10, 11, 15, 45, 0}},
		"b": {{1, 1, 13, 15, 23, 54, 0}},
		"c": {{1, 2, 22, 25, 33, 68, 0}},
	})
	for i := range c.Entries {
		if e := &c.Entries[i]; e.Node == 2 && e.Server != nil && e.Server.State == nodestate.Kernel {
			e.At, e.Server.Since = 25.8, 25
		}
	}
	got, err := Calibrate([]CalibrationRun{{Name: "run.journal", Contents: c}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := (PhaseFit{3, 2, 1, 3}); got.DHCP != want || got.Transfer != (PhaseFit{3, 8, 4, 8}) {
		t.Errorf("DHCP %+v, transfer %+v; want DHCP %+v and transfers of 4, 8 and 8 s", got.DHCP, got.Transfer, want)
	}
}
