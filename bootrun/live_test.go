package bootrun

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/power"
)

// fakeFleet is boot servers and machines in one: a machine powered on boots through the
// server states in steps of tick, unless it is broken.
type fakeFleet struct {
	mu     sync.Mutex
	states map[string]NodeState
	armed  map[string]bool
	ons    map[string][]time.Time
	tick   time.Duration
	broken map[string]bool
	// healthy, when set, is called (without mu) as a node turns Healthy.
	healthy func(name string)
	cycles  map[string]int // power cycles asked, by node
	// announced is the run prediction the live run told (RunAnnouncer).
	announced *bootapi.RunPrediction
	// showEach makes a machine stay in each state until States has returned it (for 5 s at
	// most), so that a test can expect every phase whatever the host's load; shown holds, by
	// node, a channel closed when its current state has been returned.
	showEach bool
	shown    map[string]chan struct{}
}

// setState sets node name's state, with mu held, and returns a channel closed once States has
// returned it (nil unless showEach).
func (f *fakeFleet) setState(name string, st NodeState) <-chan struct{} {
	f.states[name] = st
	if !f.showEach {
		return nil
	}
	if f.shown == nil {
		f.shown = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	f.shown[name] = ch
	return ch
}

func (f *fakeFleet) AnnounceRun(_ context.Context, run *bootapi.RunPrediction) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.announced = run
	return nil
}

func (f *fakeFleet) States(context.Context) (map[string]NodeState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]NodeState, len(f.states))
	for k, v := range f.states {
		out[k] = v
		if ch := f.shown[k]; ch != nil {
			close(ch)
			delete(f.shown, k)
		}
	}
	return out, nil
}

func (f *fakeFleet) ArmReboot(_ context.Context, name, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed[name] = true
	return nil
}

// boot plays node's boot after a power-on: a new attempt only if its reboot was armed or it is
// not booted (as a boot server does).
func (f *fakeFleet) boot(name string) {
	f.mu.Lock()
	f.ons[name] = append(f.ons[name], time.Now())
	st := f.states[name]
	if f.broken[name] || st.State >= nodestate.Booted && !f.armed[name] {
		f.mu.Unlock()
		return
	}
	f.armed[name] = false
	attempt := st.Attempt + 1
	f.mu.Unlock()
	go func() {
		for _, s := range []nodestate.State{nodestate.Discover, nodestate.Kernel, nodestate.Initrd, nodestate.Healthy} {
			time.Sleep(f.tick) // the machine takes a tick to reach the next state
			f.mu.Lock()
			shown := f.setState(name, NodeState{State: s, Attempt: attempt})
			healthy := f.healthy
			f.mu.Unlock()
			if s == nodestate.Healthy && healthy != nil {
				healthy(name)
			}
			if shown != nil {
				select {
				case <-shown:
				case <-time.After(5 * time.Second):
				}
			}
		}
	}()
}

type fakeBMC struct {
	f    *fakeFleet
	name string
}

func (b fakeBMC) On(context.Context) error { b.f.boot(b.name); return nil }
func (b fakeBMC) Cycle(context.Context) error {
	b.f.mu.Lock()
	if b.f.cycles == nil {
		b.f.cycles = map[string]int{}
	}
	b.f.cycles[b.name]++
	b.f.mu.Unlock()
	b.f.boot(b.name)
	return nil
}
func (b fakeBMC) Off(context.Context) error                   { return nil }
func (b fakeBMC) Status(context.Context) (power.State, error) { return power.On, nil }
func (b fakeBMC) PXENext(context.Context, power.BootMode) error {
	return nil
}

func liveRun(t *testing.T, f *fakeFleet, names []string, journal string, resume bool) *Live {
	t.Helper()
	nodes := make([]Node, len(names))
	targets := make([]power.Target, len(names))
	for i, n := range names {
		nodes[i] = Node{Name: n, Resources: []int32{0}}
		targets[i] = power.Target{Node: n, BMC: "bmc-" + n, Controller: fakeBMC{f, n}}
	}
	c, err := New(Config{Caps: []int{2}, Expect: Expect{Power: 1, Firmware: 0.2, Transfer: 0.2, Health: 0.2}, Factor: 2, Margin: 0.5, RetryDelay: 0.1, MaxAttempts: 2}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	l := &Live{Controller: c, Names: names, Power: targets, Servers: f, Poll: 10 * time.Millisecond, PowerOpts: power.RunOptions{FanOut: 4}}
	if resume {
		l.Journal, l.Resumed, err = ResumeJournal(journal, names)
	} else {
		l.Journal, err = CreateJournal(journal, names)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Journal.Close() })
	return l
}

// A live run boots every node at most two at a time, skips the healthy one, gives up on the
// broken one; stopped midway and resumed from its journal, it powers no healthy node again.
func TestLiveResume(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f", "g"}
	f := &fakeFleet{states: map[string]NodeState{"g": {State: nodestate.Healthy, Attempt: 3}}, armed: map[string]bool{},
		ons: map[string][]time.Time{}, tick: 20 * time.Millisecond, broken: map[string]bool{"f": true}}
	for _, n := range names[:6] {
		f.states[n] = NodeState{State: nodestate.Pending}
	}
	journal := filepath.Join(t.TempDir(), "run.journal")
	ctx, cancel := context.WithCancel(context.Background())
	l := liveRun(t, f, names, journal, false)
	// The first run is stopped as soon as node a is healthy.
	f.healthy = func(name string) {
		if name == "a" {
			cancel()
		}
	}
	if _, err := l.Run(ctx); err == nil {
		t.Fatal("the first run was not stopped")
	}
	f.mu.Lock()
	f.healthy = nil
	f.mu.Unlock()
	l.Journal.Close()
	recs, err := liveRun(t, f, names, journal, true).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		want := map[string]Phase{"f": Failed}[r.Name]
		if want == Queued {
			want = Healthy
		}
		if r.Phase != want || r.Name == "g" && !r.Skipped || r.Name == "f" && r.Class != NoDHCP {
			t.Errorf("node %+v", r)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range names {
		want := map[string]int{"f": 2, "g": 0}[n]
		if n != "f" && n != "g" {
			want = 1
		}
		if len(f.ons[n]) != want {
			t.Errorf("node %s powered on %d times, want %d", n, len(f.ons[n]), want)
		}
	}
}

func TestJournalDamage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j")
	j, err := CreateJournal(path, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	j.Add(JournalEntry{Node: 1, Record: NodeRecord{Name: "b", Phase: Healthy, Attempts: 1}, Baseline: 4})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateJournal(path, []string{"a"}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("create over a journal: %v", err)
	}
	good, _ := os.ReadFile(path)
	for _, tc := range []struct {
		name, text, want string
	}{
		{"torn last line", string(good) + `{"node":0,"rec`, ""},
		{"damaged line", string(good) + "{oops}\n", "j:3:"},
		{"other node", string(good) + `{"node":0,"record":{"name":"z","phase":"healthy"}}` + "\n", "j:3: node 0 (z) is not the run's"},
		{"not a journal", "hello\n", "j:1: not a boot run journal"},
		{"empty", "", "empty"},
		{"bad phase", string(good) + `{"node":0,"record":{"name":"a","phase":"flying"}}` + "\n", `unknown run phase "flying"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(path, []byte(tc.text), 0o600)
			c, err := ReadJournal(path)
			if tc.want == "" {
				if err != nil || c.Last[1] == nil || c.Last[1].Baseline != 4 || c.Last[1].Record.Phase != Healthy {
					t.Fatalf("%v %+v", err, c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	os.WriteFile(path, good, 0o600)
	if _, _, err := ResumeJournal(path, []string{"a", "c"}); err == nil || !strings.Contains(err.Error(), "2 other nodes") {
		t.Errorf("resume of other nodes: %v", err)
	}
}

// TestLiveJournalsTheRun: the journal holds every phase a node went through with its time and
// the servers' states within it, each retry with its class and the give-up, and the run's
// start, the operator's pause (seen by a reader while the run waits) and resume, and its end.
func TestLiveJournalsTheRun(t *testing.T) {
	names := []string{"a", "b", "c"}
	f := &fakeFleet{states: map[string]NodeState{"c": {State: nodestate.Healthy, Attempt: 1}}, armed: map[string]bool{},
		ons: map[string][]time.Time{}, tick: 20 * time.Millisecond, broken: map[string]bool{"b": true},
		showEach: true} // every phase is expected: the race run at nice 10 once polled past one
	dir := t.TempDir()
	journal := filepath.Join(dir, "run.journal")
	l := liveRun(t, f, names, journal, false)
	l.ControlFile = filepath.Join(dir, "control")
	if err := os.WriteFile(l.ControlFile, []byte("pause\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := l.Run(context.Background()); done <- err }()
	testfix.WaitFor(t, "the journal to show the pause", 20*time.Second, func() bool {
		c, err := ReadJournal(journal)
		return err == nil && c.Paused() == "paused by the operator"
	})
	if err := os.WriteFile(l.ControlFile, []byte("resume\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end")
	}
	c, err := ReadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != JournalVersion || c.Paused() != "" {
		t.Errorf("version %d, paused %q", c.Version, c.Paused())
	}
	var runs []string
	for _, e := range c.Events {
		runs = append(runs, e.Run)
		if e.Time.IsZero() {
			t.Errorf("run event %+v has no time", e)
		}
	}
	if want := []string{RunStarted, RunPaused, RunResume, RunFinished}; !slices.Equal(runs, want) {
		t.Errorf("run events %v, want %v", runs, want)
	}
	seq := map[string][]string{}
	states := map[string][]nodestate.State{}
	last := map[string]float64{}
	for _, e := range c.Entries {
		n := e.Record.Name
		w := e.Event + ":" + e.Record.Phase.String()
		if e.Event == EntryRetry || e.Event == EntryFailed {
			w += ":" + string(e.Record.Failures[len(e.Record.Failures)-1])
		}
		if e.Event != EntryServer {
			seq[n] = append(seq[n], w)
		}
		if e.Server != nil && e.Server.Attempt > e.Baseline && (len(states[n]) == 0 || states[n][len(states[n])-1] != e.Server.State) {
			states[n] = append(states[n], e.Server.State)
		}
		if e.At < last[n] || e.Time.IsZero() {
			t.Errorf("entry %+v: time goes back or is missing", e)
		}
		last[n] = e.At
	}
	want := map[string][]string{
		"a": {"phase:powering", "phase:firmware", "phase:loading", "phase:booted", "phase:healthy"},
		"b": {"phase:powering", "phase:firmware", "retry:queued:no-dhcp", "phase:powering", "phase:firmware", "failed:failed:no-dhcp"},
		"c": {"skipped:healthy"},
	}
	for n, w := range want {
		if !slices.Equal(seq[n], w) {
			t.Errorf("node %s journaled %v, want %v", n, seq[n], w)
		}
	}
	// Node a's servers went through discover, kernel and initrd: the states the run's phases
	// lump together are journaled too (at the poll's resolution, so some may merge).
	if s := states["a"]; len(s) < 2 || s[len(s)-1] != nodestate.Healthy {
		t.Errorf("node a's server states journaled: %v", s)
	}
}

// TestLiveRebootHealthy: healthy nodes are skipped by default; with RebootHealthy each is armed
// on its servers and power cycled (power on would do nothing to a running node), and boots a new
// attempt to healthy. A node its servers show pending after a power off is booted either way.
// The servers are told the predicted times of the nodes the run boots, not of those it skips.
func TestLiveRebootHealthy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reboot  bool
		skipped int
		cycled  []string
		told    []bootapi.RunNode
	}{
		{"default: skipped", false, 2, nil, []bootapi.RunNode{{Name: "c", HealthyAt: 3}}},
		{"reboot healthy", true, 0, []string{"a", "b"}, []bootapi.RunNode{{Name: "a", HealthyAt: 1}, {Name: "b", HealthyAt: 2}, {Name: "c", HealthyAt: 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := []string{"a", "b", "c"}
			f := &fakeFleet{states: map[string]NodeState{"a": {State: nodestate.Healthy, Attempt: 1}, "b": {State: nodestate.Healthy, Attempt: 1},
				"c": {State: nodestate.Pending, Attempt: 1}}, armed: map[string]bool{}, ons: map[string][]time.Time{}, tick: 10 * time.Millisecond}
			l := liveRun(t, f, names, filepath.Join(t.TempDir(), "j"), false)
			l.RebootHealthy = tc.reboot
			l.RunName, l.Prediction = "j", &Prediction{Records: []NodeRecord{{Name: "a", Phase: Healthy, HealthAt: 1},
				{Name: "b", Phase: Healthy, HealthAt: 2}, {Name: "c", Phase: Healthy, HealthAt: 3}}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			recs, err := l.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			skipped := 0
			for _, r := range recs {
				if r.Phase != Healthy {
					t.Errorf("node %+v, want healthy", r)
				}
				if r.Skipped {
					skipped++
				}
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			var cycled []string
			for n, k := range f.cycles {
				if k > 0 {
					cycled = append(cycled, n)
				}
			}
			slices.Sort(cycled)
			if skipped != tc.skipped || !slices.Equal(cycled, tc.cycled) || len(f.ons["c"]) != 1 {
				t.Errorf("skipped %d, cycled %v, c powered %d times; want %d, %v, 1", skipped, cycled, len(f.ons["c"]), tc.skipped, tc.cycled)
			}
			if f.announced == nil || f.announced.Run != "j" || !slices.Equal(f.announced.Nodes, tc.told) {
				t.Errorf("told the servers %+v, want run j with %v", f.announced, tc.told)
			}
			for _, n := range tc.cycled {
				if f.states[n].Attempt != 2 {
					t.Errorf("node %s: attempt %d on the servers, want a new one (2)", n, f.states[n].Attempt)
				}
			}
		})
	}
}

// The live run acts at the controller's deadlines, not only at its polls: with polls 5 s apart, a
// node that never asks for DHCP is given up at its firmware allowance (2 x 0.2 s + 0.5 s) and
// powered on again after the 0.1 s retry delay, as the dry run has it (acting only at polls, the second power-on waited
// for the poll at 5 s).
func TestLiveWakesAtDeadlines(t *testing.T) {
	f := &fakeFleet{states: map[string]NodeState{"x": {State: nodestate.Pending}}, armed: map[string]bool{},
		ons: map[string][]time.Time{}, tick: 20 * time.Millisecond, broken: map[string]bool{"x": true}}
	l := liveRun(t, f, []string{"x"}, filepath.Join(t.TempDir(), "run.journal"), false)
	l.Poll = 5 * time.Second
	recs, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].Phase != Failed {
		t.Errorf("node %+v, want failed", recs[0])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ons := f.ons["x"]
	if len(ons) != 2 {
		t.Fatalf("powered on %d times, want 2", len(ons))
	}
	// The allowance is 0.9 s and the retry delay 0.1 s; a poll would have come at 5 s.
	if gap := ons[1].Sub(ons[0]); gap < 900*time.Millisecond || gap >= 3*time.Second {
		t.Errorf("second power-on %v after the first, want 1 s (the allowance and the retry delay)", gap)
	}
}
