package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bootfabric/bootfabric/bootrun"
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
