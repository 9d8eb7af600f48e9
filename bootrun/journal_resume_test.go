package bootrun

import (
	"os"
	"path/filepath"
	"strings"
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

// TestJournalVersions: a version 1 journal (no version, power actions only) still reads, and
// resumes; a newer version is refused by name; a damaged run event names its line.
func TestJournalVersions(t *testing.T) {
	v1 := `{"nodes":["a","b"]}` + "\n" +
		`{"node":0,"record":{"name":"a","phase":"powering","attempts":1,"power_at":0.5,"load_at":0,"booted_at":0,"healthy_at":0},"baseline":2}` + "\n"
	for _, tc := range []struct {
		name, text, want string
		version          int
	}{
		{"version 1", v1, "", 1},
		{"version 2 with run events", `{"version":2,"nodes":["a","b"]}` + "\n" + `{"run":"paused","reason":"10 of the last 20 attempts failed","time":"2026-11-27T20:00:00Z","at":3}` + "\n" +
			`{"node":0,"record":{"name":"a","phase":"powering","attempts":1},"baseline":2,"time":"2026-11-27T20:00:01Z","at":4,"event":"phase","server":{"state":"pending","attempt":2}}` + "\n", "", 2},
		{"newer version", `{"version":3,"nodes":["a","b"]}` + "\n", "j:1: format version 3; this bootctl reads versions 1 to 2", 0},
		{"damaged run event", `{"version":2,"nodes":["a","b"]}` + "\n" + `{"run":"paused","time":"yesterday"}` + "\n", "j:2:", 0},
		{"unknown server state", `{"version":2,"nodes":["a","b"]}` + "\n" + `{"node":0,"record":{"name":"a","phase":"powering"},"server":{"state":"flying"}}` + "\n" + `{"run":"finished","time":"2026-11-27T20:00:00Z","at":1}` + "\n", "j:2:", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			os.WriteFile(path, []byte(tc.text), 0o600)
			c, err := ReadJournal(path)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil || c.Version != tc.version || c.Last[0] == nil || c.Last[0].Baseline != 2 || c.Last[0].Record.Phase != Powering {
				t.Fatalf("%v %+v", err, c)
			}
			if tc.version == 2 && c.Paused() != "10 of the last 20 attempts failed" {
				t.Errorf("paused %q", c.Paused())
			}
			j, _, err := ResumeJournal(path, []string{"a", "b"})
			if err != nil {
				t.Fatal(err)
			}
			j.AddEvent(RunEvent{Run: RunResumed})
			j.Close()
			if c, err := ReadJournal(path); err != nil || c.Paused() != "" {
				t.Errorf("after a resume: %v, paused %q", err, c.Paused())
			}
		})
	}
}
