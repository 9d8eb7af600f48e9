package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootrun"
	"github.com/bootfabric/bootfabric/nodestate"
)

// TestBootControlLink: `boot pause` replaces a link planted at JOURNAL.control with its own file,
// and never writes through it to the file the link names.
func TestBootControlLink(t *testing.T) {
	dir := t.TempDir()
	journal := filepath.Join(dir, "run.journal")
	j, err := bootrun.CreateJournal(journal, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, journal+".control"); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runBootctl(t, context.Background(), "boot", "pause", "--journal", journal); code != 0 {
		t.Fatalf("boot pause: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	fi, err := os.Lstat(journal + ".control")
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("JOURNAL.control: %v %v, want a regular file of mode 0600", fi, err)
	}
	if b, _ := os.ReadFile(journal + ".control"); string(b) != "pause\n" {
		t.Errorf("JOURNAL.control holds %q", b)
	}
}

// TestBootStatusJournal: boot status shows, from a run's journal, each node's latest phase and
// its state on the servers, the run's pause with its reason (the run still going), in the
// table and in JSON; a damaged line is exit 2 naming the file and line.
func TestBootStatusJournal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.journal")
	j, err := bootrun.CreateJournal(path, []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)
	j.AddEvent(bootrun.RunEvent{Run: bootrun.RunStarted, Time: t0})
	j.Add(bootrun.JournalEntry{Node: 2, Record: bootrun.NodeRecord{Name: "c", Phase: bootrun.Healthy, Skipped: true}, Event: bootrun.EntrySkipped, Time: t0,
		Server: &bootrun.ServerSeen{State: nodestate.Healthy, Attempt: 4}})
	for _, p := range []bootrun.Phase{bootrun.Powering, bootrun.Firmware, bootrun.Loading} {
		j.Add(bootrun.JournalEntry{Node: 0, Record: bootrun.NodeRecord{Name: "a", Phase: p, Attempts: 1, PowerAt: 0.1}, Event: bootrun.EntryPhase,
			Time: t0.Add(time.Second), At: 1, Server: &bootrun.ServerSeen{State: nodestate.Kernel, Attempt: 2}})
	}
	j.Add(bootrun.JournalEntry{Node: 1, Record: bootrun.NodeRecord{Name: "b", Phase: bootrun.Queued, Attempts: 1, Failures: []bootrun.Class{bootrun.NoDHCP}},
		Event: bootrun.EntryRetry, Time: t0.Add(2 * time.Second), At: 2})
	j.AddEvent(bootrun.RunEvent{Run: bootrun.RunPaused, Reason: "1 of the last 1 attempts failed", Time: t0.Add(2 * time.Second), At: 2})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	code, table, errs := runBootctl(t, ctx, "boot", "status", "--journal", path)
	if code != 0 {
		t.Fatalf("boot status: exit %d: %s", code, errs)
	}
	for _, want := range []string{"loading", "kernel (attempt 2)", "[no-dhcp]", "paused: 1 of the last 1 attempts failed", "paused", "2026-11-27T20:00:02.000Z",
		"1 skipped (healthy on the boot servers when the run started; --reboot-healthy boots them too)"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	code, out, errs := runBootctl(t, ctx, "boot", "status", "--journal", path, "-o", "json")
	if code != 0 {
		t.Fatalf("boot status -o json: exit %d: %s", code, errs)
	}
	r := decodeJSONOut[bootrun.RunResult](t, out)
	if r.Paused == "" || r.JournalVersion != bootrun.JournalVersion || len(r.Events) != 2 || r.Records[0].Phase != bootrun.Loading ||
		r.Records[0].Server == nil || r.Records[0].Server.State != nodestate.Kernel || r.Skipped != 1 || r.SkippedReason == "" || r.Pending != 2 {
		t.Errorf("json: %+v", r)
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("{oops}\n{\"run\":\"resume\",\"time\":\"2026-11-27T20:00:05Z\",\"at\":5}\n")
	f.Close()
	wantBadInput(t, ctx, []string{"boot", "status", "--journal", path}, "run.journal:9:")
}
