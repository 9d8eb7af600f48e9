package bootrun

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/power"
)

// congestedFleet is boot servers and machines whose first boot of every node runs into a
// congested link: its server shows the node fetching with a transfer given up after 8 s and a
// restart of its firmware; a while later (or at once, from the second power-on) it boots.
type congestedFleet struct {
	mu     sync.Mutex
	states map[string]NodeState
	gen    map[string]int // bumped at every power action: a powered-off node's boot stops
	ons    map[string][]time.Time
	offs   map[string][]time.Time
	stuck  time.Duration
	tick   time.Duration
}

func (f *congestedFleet) States(context.Context) (map[string]NodeState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]NodeState, len(f.states))
	for k, v := range f.states {
		out[k] = v
	}
	return out, nil
}

func (f *congestedFleet) ArmReboot(context.Context, string, string) error { return nil }

func (f *congestedFleet) on(name string) {
	f.mu.Lock()
	f.ons[name] = append(f.ons[name], time.Now())
	f.gen[name]++
	gen, first, attempt := f.gen[name], len(f.ons[name]) == 1, f.states[name].Attempt+1
	st := NodeState{State: nodestate.Discover, Attempt: attempt}
	if first {
		st = NodeState{State: nodestate.NBP, Attempt: attempt + 1, GaveUp: 1, Restarts: 1,
			LastGaveUp: &nodestate.Transfer{File: "/boot/p/initrd", Sent: 1 << 20, Size: 8 << 20, Seconds: 8, Outcome: nodestate.TransferFailed}}
	}
	f.states[name] = st
	f.mu.Unlock()
	go func() {
		if first {
			time.Sleep(f.stuck)
		}
		for _, s := range []nodestate.State{nodestate.Initrd, nodestate.Healthy} {
			time.Sleep(f.tick)
			f.mu.Lock()
			if f.gen[name] != gen {
				f.mu.Unlock()
				return
			}
			st := f.states[name]
			st.State = s
			f.states[name] = st
			f.mu.Unlock()
		}
	}()
}

func (f *congestedFleet) off(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offs[name] = append(f.offs[name], time.Now())
	f.gen[name]++
}

type congestedBMC struct {
	f    *congestedFleet
	name string
}

func (b congestedBMC) On(context.Context) error                    { b.f.on(b.name); return nil }
func (b congestedBMC) Cycle(context.Context) error                 { b.f.on(b.name); return nil }
func (b congestedBMC) Off(context.Context) error                   { b.f.off(b.name); return nil }
func (b congestedBMC) Status(context.Context) (power.State, error) { return power.On, nil }
func (b congestedBMC) PXENext(context.Context, power.BootMode) error {
	return nil
}

// A live run reads the servers' measurements: the first wave's given-up transfers teach it the
// firmware's patience (8 s), cut the link from 4 to 2, and the two nodes beyond the limit are
// powered off and, once the others are in, on again; every node ends healthy, none counted as
// a failed attempt.
func TestLiveEvictsFromCongestedLink(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	f := &congestedFleet{states: map[string]NodeState{}, gen: map[string]int{}, ons: map[string][]time.Time{}, offs: map[string][]time.Time{},
		stuck: 300 * time.Millisecond, tick: 20 * time.Millisecond}
	nodes := make([]Node, len(names))
	targets := make([]power.Target, len(names))
	for i, n := range names {
		f.states[n] = NodeState{State: nodestate.Pending}
		nodes[i] = Node{Name: n, Resources: []int32{0}}
		targets[i] = power.Target{Node: n, BMC: "bmc-" + n, Controller: congestedBMC{f, n}}
	}
	c, err := New(Config{Caps: []int{4}, Patience: 60, Expect: Expect{Power: 1, Firmware: 1, Transfer: 1, Health: 1}, MaxAttempts: 1}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	j, err := CreateJournal(filepath.Join(t.TempDir(), "run.journal"), names)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	l := &Live{Controller: c, Names: names, Power: targets, Servers: f, Journal: j, Poll: 10 * time.Millisecond,
		PowerOpts: power.RunOptions{FanOut: 4, MinInterval: time.Millisecond}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs, err := l.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Phase != Healthy {
			t.Errorf("node %+v, want healthy (an eviction is no failed attempt, with MaxAttempts 1)", r)
		}
	}
	if got := c.Patience(); got != 8 {
		t.Errorf("patience learned %v s, want 8", got)
	}
	cuts := 0
	for _, ch := range c.LimitChanges() {
		if ch.Why == "cut" {
			cuts++
			if ch.Limit != 2 {
				t.Errorf("cut to %v, want 2", ch.Limit)
			}
		}
	}
	if cuts != 1 {
		t.Errorf("%d cuts (%+v), want one for the first wave", cuts, c.LimitChanges())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	evicted := 0
	for _, n := range names {
		switch {
		case len(f.offs[n]) == 0 && len(f.ons[n]) == 1:
		case len(f.offs[n]) == 1 && len(f.ons[n]) == 2 && f.offs[n][0].Before(f.ons[n][1]):
			evicted++
		default:
			t.Errorf("node %s: powered on at %v, off at %v; want once, or on, off, on", n, f.ons[n], f.offs[n])
		}
	}
	if evicted != 2 {
		t.Errorf("%d nodes evicted, want the 2 beyond the cut limit", evicted)
	}
}
