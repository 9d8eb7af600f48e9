package bootrun

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResumeTornJournal: a run killed mid-write leaves a torn last line; resuming cuts it before
// appending, so the resumed run's entries read back, and so does a second resume's.
func TestResumeTornJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	nodes := []string{"a", "b"}
	j, err := CreateJournal(path, nodes)
	if err != nil {
		t.Fatal(err)
	}
	j.Add(JournalEntry{Node: 0, Record: NodeRecord{Name: "a", Phase: Powering, Attempts: 1}})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"node":1,"record":{"na`)
	f.Close()
	for round, phase := range []Phase{Healthy, Failed} {
		j, last, err := ResumeJournal(path, nodes)
		if err != nil {
			t.Fatalf("resume %d: %v", round+1, err)
		}
		if last[0] == nil {
			t.Fatalf("resume %d: node a's entry lost", round+1)
		}
		j.Add(JournalEntry{Node: 1, Record: NodeRecord{Name: "b", Phase: phase, Attempts: round + 1}})
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		c, err := ReadJournal(path)
		if err != nil {
			t.Fatalf("after resume %d: %v", round+1, err)
		}
		if c.Last[1] == nil || c.Last[1].Record.Phase != phase {
			t.Fatalf("after resume %d: node b's last entry %+v, want phase %s", round+1, c.Last[1], phase)
		}
	}
}
