package bootrun

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// script drives a controller by a list of steps and records every action as "kind node" (or
// "kind class"/"paused reason").
type step struct {
	at float64
	ev Event
}

func actionString(a Action) string {
	switch a.Kind {
	case GiveUp:
		return fmt.Sprintf("give-up %d %s", a.Node, a.Class)
	case Paused:
		return "paused: " + a.Reason
	case Finished:
		return "finished"
	case Resumed:
		return "resumed: " + a.Reason
	}
	return fmt.Sprintf("%s %d", a.Kind, a.Node)
}

func runScript(t *testing.T, cfg Config, nodes []Node, pre []Event, steps []step) (*Controller, []string) {
	t.Helper()
	c, err := New(cfg, nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range pre {
		c.Handle(0, ev)
	}
	var got []string
	for _, a := range c.Start(0) {
		got = append(got, actionString(a))
	}
	for _, s := range steps {
		for _, a := range c.Handle(s.at, s.ev) {
			got = append(got, actionString(a))
		}
	}
	return c, got
}

func nodesN(n int, res ...int32) []Node {
	out := make([]Node, n)
	for i := range out {
		out[i] = Node{Name: fmt.Sprintf("n%d", i), Resources: res}
	}
	return out
}

func ok(i int) Event               { return Event{Kind: PowerAnswered, Node: i} }
func seen(i int, p Phase) Event    { return Event{Kind: Observed, Node: i, Phase: p} }
func bmcFail(i int, c Class) Event { return Event{Kind: PowerAnswered, Node: i, Class: c} }

// crawl is a transfer at a tenth of its file after 3 s: 30 s for the whole file.
func crawl(i int) Event  { return Event{Kind: Transfer, Node: i, Bytes: 10, Size: 100, Seconds: 3} }
func gaveUp(i int) Event { return Event{Kind: GaveUp, Node: i, Seconds: 8} }

func TestControllerScripts(t *testing.T) {
	expect := Expect{Power: 1, Firmware: 10, Transfer: 10, Health: 10}
	for _, tc := range []struct {
		name  string
		cfg   Config
		nodes []Node
		pre   []Event
		steps []step
		want  []string
	}{{
		name: "cap of two admits as nodes boot", cfg: Config{Caps: []int{2}, Expect: expect}, nodes: nodesN(4, 0),
		steps: []step{{1, ok(0)}, {1, ok(1)}, {2, seen(0, Loading)}, {5, seen(0, Booted)}, {6, seen(1, Booted)},
			{7, ok(2)}, {7, ok(3)}, {8, seen(2, Booted)}, {8, seen(3, Booted)},
			{9, seen(0, Healthy)}, {9, seen(1, Healthy)}, {9, seen(2, Healthy)}, {9, seen(3, Healthy)}},
		want: []string{"power-on 0", "power-on 1", "power-on 2", "power-on 3", "finished"},
	}, {
		name: "interleaved across servers", cfg: Config{Caps: []int{1, 1}, Expect: expect},
		nodes: []Node{{"a0", []int32{0}}, {"a1", []int32{0}}, {"b0", []int32{1}}, {"b1", []int32{1}}},
		steps: []step{{1, seen(0, Booted)}, {1, seen(2, Booted)}},
		want:  []string{"power-on 0", "power-on 2", "power-on 1", "power-on 3"},
	}, {
		name: "healthy before the run is skipped", cfg: Config{Caps: []int{1}, Expect: expect}, nodes: nodesN(2, 0),
		pre: []Event{seen(0, Healthy)}, steps: []step{{1, ok(1)}, {2, seen(1, Healthy)}},
		want: []string{"power-on 1", "finished"},
	}, {
		name: "late firmware is retried, then given up", cfg: Config{Caps: []int{1}, Expect: expect, MaxAttempts: 2, Factor: 1, Margin: 1},
		nodes: nodesN(1, 0),
		steps: []step{{1, ok(0)}, {11, Event{Kind: Tick}}, {12.5, Event{Kind: Tick}}, {17, Event{Kind: Tick}}, {18, Event{Kind: Tick}},
			{18.5, ok(0)}, {31, Event{Kind: Tick}}},
		want: []string{"power-on 0", "cycle 0", "give-up 0 no-dhcp", "finished"},
	}, {
		name: "wrong password is not retried; the others go on", cfg: Config{Caps: []int{1}, Expect: expect}, nodes: nodesN(2, 0),
		steps: []step{{1, bmcFail(0, BMCAuth)}, {2, ok(1)}, {3, seen(1, Healthy)}},
		want:  []string{"power-on 0", "give-up 0 bmc-auth", "power-on 1", "finished"},
	}, {
		name: "a failed node waits out its retry delay while others go", cfg: Config{Caps: []int{1}, Expect: expect}, nodes: nodesN(2, 0),
		steps: []step{{1, bmcFail(0, BMCUnreachable)}, {2, ok(1)}, {3, seen(1, Booted)}, {5.9, Event{Kind: Tick}}, {6, Event{Kind: Tick}}},
		want:  []string{"power-on 0", "power-on 1", "cycle 0"},
	}, {
		name: "a retry goes before the nodes never tried", cfg: Config{Caps: []int{1}, Expect: expect, RetryDelay: 1}, nodes: nodesN(3, 0),
		steps: []step{{1, bmcFail(0, BMCBusy)}, {2, Event{Kind: Tick}}, {3, seen(1, Booted)}, {4, seen(0, Booted)}},
		want:  []string{"power-on 0", "power-on 1", "cycle 0", "power-on 2"},
	}, {
		name: "stuck transfer and missing health", cfg: Config{Caps: []int{2}, Expect: expect, MaxAttempts: 1, Factor: 1, Margin: 0.001},
		nodes: nodesN(2, 0),
		steps: []step{{0, ok(0)}, {0, ok(1)}, {1, seen(0, Loading)}, {2, seen(1, Booted)}, {20, Event{Kind: Tick}}},
		want:  []string{"power-on 0", "power-on 1", "give-up 0 stuck-transfer", "give-up 1 no-health", "finished"},
	}, {
		name:  "breaker pauses admission and the operator resumes it",
		cfg:   Config{Caps: []int{1}, Expect: expect, MaxAttempts: 1, Breaker: BreakerConfig{Window: 4, Rate: 0.5, MinFailures: 2, Pause: true}},
		nodes: nodesN(4, 0),
		steps: []step{{1, bmcFail(0, BMCTimeout)}, {2, bmcFail(1, BMCTimeout)}, {3, Event{Kind: Tick}}, {4, Event{Kind: Resume}}},
		want: []string{"power-on 0", "give-up 0 bmc-timeout", "power-on 1", "give-up 1 bmc-timeout",
			"paused: 2 of the last 2 attempts failed (2 bmc-timeout)", "power-on 2"},
	}, {
		name:  "breaker backs off by default: limits halved, a wait, then admission goes on",
		cfg:   Config{Caps: []int{2}, Expect: expect, MaxAttempts: 1, Breaker: BreakerConfig{Window: 4, Rate: 0.5, MinFailures: 2, Backoff: 10}},
		nodes: nodesN(4, 0),
		// Node 2 takes node 0's slot; node 1's failure trips the breaker, the limit goes 2 -> 1,
		// which node 2 fills: after the wait, the next goes only when node 2 is booted.
		steps: []step{{1, bmcFail(0, BMCTimeout)}, {2, bmcFail(1, BMCTimeout)}, {11.9, Event{Kind: Tick}}, {12, Event{Kind: Tick}},
			{13, seen(2, Booted)}},
		want: []string{"power-on 0", "power-on 1", "give-up 0 bmc-timeout", "power-on 2", "give-up 1 bmc-timeout",
			"paused: 2 of the last 2 attempts failed (2 bmc-timeout); backing off: limits halved, admission waits 10 s",
			"resumed: back-off over", "power-on 3"},
	}, {
		name: "a node holds its link from its DHCP request: POST holds no slot", cfg: Config{Caps: []int{2}, Expect: Expect{Power: 1, Firmware: 10, Transfer: 10, Health: 10}},
		nodes: nodesN(4, 0),
		// Both first nodes in POST fill the window; at t=10 one asks for its address (POST
		// measured 10 s, transfer 10 s for 2 slots: a pipe of 2) and the next powers on paced,
		// another only a service time (5 s) later.
		steps: []step{{0, ok(0)}, {0, ok(1)}, {10, seen(0, Loading)}, {12, Event{Kind: Tick}}, {15, Event{Kind: Tick}}},
		want:  []string{"power-on 0", "power-on 1", "power-on 2", "power-on 3"},
	}, {
		name: "a transfer under the floor cuts its link once a round and evicts the doomed beyond the limit",
		cfg:  Config{Caps: []int{4}, Expect: expect, Patience: 10}, nodes: nodesN(6, 0),
		steps: []step{{0, seen(0, Loading)}, {0, seen(1, Loading)}, {0, seen(2, Loading)}, {0, seen(3, Loading)},
			{4, crawl(0)}, {4, crawl(1)}, {4, crawl(2)}, {6, seen(3, Booted)}, {7, seen(2, Booted)}},
		// The evicted wait a second (their power-off goes first), then go before fresh nodes.
		want: []string{"power-on 0", "power-on 1", "power-on 2", "power-on 3", "power-off 0", "power-off 1", "cycle 0", "cycle 1"},
	}, {
		name: "nodes that stay above the floor raise the limit by one a round", cfg: Config{Caps: []int{1}, Expect: expect}, nodes: nodesN(5, 0),
		steps: []step{{0, seen(0, Loading)}, {2, seen(0, Booted)}, {2, seen(1, Loading)}, {2, seen(2, Loading)},
			{4, seen(1, Booted)}, {4, seen(2, Booted)}},
		want: []string{"power-on 0", "power-on 1", "power-on 2", "power-on 3", "power-on 4"},
	}, {
		name: "a transfer given up cuts once; the ones that entered before the cut do not cut again",
		cfg:  Config{Caps: []int{4}, Expect: expect, Patience: 10}, nodes: nodesN(6, 0),
		steps: []step{{0, seen(0, Loading)}, {0, seen(1, Loading)}, {0, seen(2, Loading)}, {0, seen(3, Loading)},
			{8, gaveUp(0)}, {8, gaveUp(1)}, {8, gaveUp(2)}, {9, Event{Kind: Restarted, Node: 2}}, {12, gaveUp(2)}, {13, seen(3, Booted)}},
		// 4 -> 2: nodes 0 and 1 go; node 2 restarts after the cut and gives up again: 2 -> 1,
		// and it goes too; node 3's files in free the one slot for node 0, whose retry delay
		// (5 s from 8) is over: a retry goes first.
		want: []string{"power-on 0", "power-on 1", "power-on 2", "power-on 3", "power-off 0", "power-off 1", "power-off 2", "cycle 0"},
	}, {
		name: "abort gives up the queue", cfg: Config{Caps: []int{1}, Expect: expect}, nodes: nodesN(3, 0),
		steps: []step{{1, Event{Kind: Abort}}, {2, ok(0)}, {3, seen(0, Healthy)}},
		want:  []string{"power-on 0", "give-up 1 aborted", "give-up 2 aborted", "finished"},
	}, {
		name: "a reported failure is retried", cfg: Config{Caps: []int{1}, Expect: expect}, nodes: nodesN(1, 0),
		steps: []step{{1, ok(0)}, {2, seen(0, Failed)}, {7, Event{Kind: Tick}}, {8, ok(0)}, {9, seen(0, Healthy)}},
		want:  []string{"power-on 0", "cycle 0", "finished"},
	}, {
		name: "global cap", cfg: Config{Caps: []int{9}, MaxInFlight: 1, Expect: expect}, nodes: nodesN(2, 0),
		steps: []step{{1, seen(0, Booted)}},
		want:  []string{"power-on 0", "power-on 1"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := runScript(t, tc.cfg, tc.nodes, tc.pre, tc.steps)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
		})
	}
}

// The caps hold at every moment, whatever order nodes finish in.
func TestControllerNeverExceedsCaps(t *testing.T) {
	nodes := []Node{}
	for i := range 60 {
		nodes = append(nodes, Node{Name: fmt.Sprint(i), Resources: []int32{int32(i % 3), 3 + int32(i%2)}})
	}
	caps := []int{3, 2, 4, 5, 1}
	c, err := New(Config{Caps: caps, Factor: math.Inf(1)}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	flying := map[int]bool{}
	check := func(acts []Action) {
		for _, a := range acts {
			if a.Kind == PowerOn {
				flying[a.Node] = true
			}
		}
		used := make([]int, len(caps))
		for i := range flying {
			for _, r := range nodes[i].Resources {
				used[r]++
			}
		}
		for r := range caps {
			if used[r] > caps[r] {
				t.Fatalf("resource %d: %d in flight, cap %d", r, used[r], caps[r])
			}
		}
	}
	check(c.Start(0))
	for now := 1.0; !c.Done(); now++ {
		if len(flying) == 0 {
			t.Fatal("nothing in flight and not done")
		}
		for i := range flying { // one node, in map order: any
			delete(flying, i)
			check(c.Handle(now, ok(i)))
			check(c.Handle(now, seen(i, Booted)))
			check(c.Handle(now, seen(i, Healthy)))
			break
		}
	}
}

func TestControllerBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Caps: []int{0}}, "cap 0"},
		{Config{Caps: []int{1}, Factor: -1}, "factor"},
		{Config{Caps: []int{1}, MaxAttempts: -1}, "max attempts"},
		{Config{Caps: []int{1}, Breaker: BreakerConfig{Window: 2, MinFailures: 3}}, "breaker"},
		{Config{Caps: []int{1}, CapacityMbps: []float64{1, 2}}, "2 capacities for 1 resources"},
		{Config{Caps: []int{1}, CapacityMbps: []float64{math.NaN()}}, "capacity NaN"},
		{Config{Caps: []int{1}, FilesMb: math.Inf(1)}, "boot files of +Inf Mb"},
		{Config{Caps: []int{1}, FilesMb: -1}, "boot files of -1 Mb"},
	} {
		_, err := New(tc.cfg, nodesN(1, 0))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := New(Config{Caps: []int{1}}, nodesN(1, 1)); err == nil || !strings.Contains(err.Error(), "resource 1 of 1") {
		t.Errorf("node with an unknown resource: %v", err)
	}
}

// The firmware's patience is learned: the median of the given-up transfers' times, never less
// than a transfer that completed; with it a transfer that was fine at the plan's patience is
// under the floor.
func TestControllerLearnsPatience(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []Event
		want float64
	}{
		{"nothing seen: the plan's", nil, 60},
		{"given up at 8 s", []Event{gaveUp(0), gaveUp(1), gaveUp(2)}, 8},
		{"one killed early among timeouts", []Event{{Kind: GaveUp, Node: 0, Seconds: 1}, gaveUp(1), gaveUp(2)}, 8},
		{"a longer transfer completed", []Event{gaveUp(0), {Kind: Transfer, Node: 1, Done: true, Seconds: 9.5}}, 9.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := loadingController(t, Config{Caps: []int{3}, Expect: Expect{Transfer: 60}}, 3, 3, tc.evs)
			if got := c.Patience(); got != tc.want {
				t.Errorf("patience %v, want %v", got, tc.want)
			}
		})
	}
}

// The limit log starts at the plan's limit and records every cut.
func TestControllerLimitLog(t *testing.T) {
	c, err := New(Config{Caps: []int{8}, Patience: 10}, nodesN(8, 0))
	if err != nil {
		t.Fatal(err)
	}
	c.Start(0)
	for i := range 8 {
		c.Handle(0, seen(i, Loading))
	}
	c.Handle(4, crawl(0))
	c.Handle(8, gaveUp(1)) // entered before the cut: no second cut
	want := []LimitChange{{At: 0, Resource: 0, Limit: 8, Why: "start"}, {At: 4, Resource: 0, Limit: 4, Why: "cut"}}
	if d := cmp.Diff(want, c.LimitChanges()); d != "" {
		t.Errorf("limit log (-want +got):\n%s", d)
	}
	if got := c.InFlightLinks(); got[0] != 6 {
		t.Errorf("in flight %v after two doomed nodes were evicted, want 6", got)
	}
}

// Once a transfer given up teaches the firmware's patience, a link whose capacity is known
// holds no more nodes than each get the largest file within it: 60 Mb/s, 8 MiB files and 3 s
// of patience leave room for 2 (2.3 at 0.85 of the patience), and the raises stop there.
func TestControllerCeiling(t *testing.T) {
	big := Event{Kind: Transfer, Node: 0, Bytes: 1 << 20, Size: 8 << 20, Seconds: 1}
	quit := Event{Kind: GaveUp, Node: 1, Seconds: 3}
	for _, tc := range []struct {
		name     string
		capacity []float64
		evs      []Event
		cut, top float64 // the limit after the first cut (0: none) and the most it reaches after
	}{
		{"capacity unknown: halved, then raised", nil, []Event{big, quit}, 4, 7.11},
		{"capacity known: down to the ceiling, raised no further", []float64{60}, []Event{big, quit}, 2, 2},
		{"no transfer given up: no ceiling", []float64{60}, []Event{big}, 0, 10.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := loadingController(t, Config{Caps: []int{8}, CapacityMbps: tc.capacity, Expect: Expect{Transfer: 60}}, 24, 8, tc.evs)
			// Rounds of nodes that come in above the floor: each raises the limit by 1/limit.
			for round := range 6 {
				now := 2 + 2*float64(round)
				for _, p := range []Phase{Loading, Booted} {
					for i, r := range c.Records() {
						if r.Phase == p-1 || p == Loading && r.Phase == Powering {
							c.Handle(now+float64(p-Loading)/2, seen(i, p))
						}
					}
				}
			}
			log := c.LimitChanges()
			cut, top := 0.0, log[0].Limit
			for _, ch := range log[1:] {
				if ch.Why == "cut" && cut == 0 {
					cut, top = ch.Limit, 0
				}
				top = max(top, ch.Limit)
			}
			if cut != tc.cut || top != tc.top {
				t.Errorf("cut to %v, then at most %v; want %v and %v (log %+v)", cut, top, tc.cut, tc.top, log)
			}
		})
	}
}

// loadingController starts a controller of n nodes under cfg, sees the first loading nodes ask
// for their addresses at 0 s and hands it evs at 1 s.
func loadingController(t *testing.T, cfg Config, n, loading int, evs []Event) *Controller {
	t.Helper()
	c, err := New(cfg, nodesN(n, 0))
	if err != nil {
		t.Fatal(err)
	}
	c.Start(0)
	for i := range loading {
		c.Handle(0, seen(i, Loading))
	}
	for _, ev := range evs {
		c.Handle(1, ev)
	}
	return c
}

// A link whose capacity and the nodes' files are known takes its first wave one node per the time
// a node's files take alone on it, within its window too: all at once, the first wave shared the
// link until every transfer outlasted the firmware's patience. The controller's next deadline is
// the pace's, so a live run wakes for it. Without the files' size nothing is paced.
func TestControllerPacesAtFilesAlone(t *testing.T) {
	cfg := Config{Caps: []int{4}, CapacityMbps: []float64{100}, FilesMb: 50, Expect: Expect{Power: 1, Firmware: 1, Transfer: 1, Health: 1}}
	_, got := runScript(t, cfg, nodesN(4, 0), nil, []step{
		{0.2, Event{Kind: Tick}}, {0.5, Event{Kind: Tick}}, {0.7, Event{Kind: Tick}}, {1.0, Event{Kind: Tick}}, {1.6, Event{Kind: Tick}},
	})
	want := []string{"power-on 0", "power-on 1", "power-on 2", "power-on 3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	c, err := New(cfg, nodesN(4, 0))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Start(0)); n != 1 {
		t.Errorf("%d power-ons at the start, want 1", n)
	}
	if d := c.NextDeadline(); d != 0.5 {
		t.Errorf("next deadline %v, want the pace's 0.5 s (50 Mb at 100 Mb/s)", d)
	}
	if n := len(c.Handle(0.49, Event{Kind: Tick})); n != 0 {
		t.Errorf("%d power-ons before the pace", n)
	}
	if n := len(c.Handle(0.5, Event{Kind: Tick})); n != 1 {
		t.Errorf("%d power-ons at the pace, want 1", n)
	}
	cfg.FilesMb = 0
	c, _ = New(cfg, nodesN(4, 0))
	if n := len(c.Start(0)); n != 4 {
		t.Errorf("without the files' size: %d power-ons at the start, want 4", n)
	}
}

// A phase the servers dated (Event.Ago) is recorded when it began, not when a poll saw it, but
// never before the phase the record holds, nor after the event.
func TestControllerDatesObservedPhases(t *testing.T) {
	c, _ := runScript(t, Config{Caps: []int{4}, Expect: Expect{Power: 5, Firmware: 60, Transfer: 60, Health: 60}}, nodesN(3, 0), nil, []step{
		{0.5, ok(0)}, {0.5, ok(1)}, {0.5, ok(2)},
		{10, Event{Kind: Observed, Node: 0, Phase: Loading, Ago: 0.75}}, // its first DHCP at 9.25 s
		{10, Event{Kind: Observed, Node: 1, Phase: Loading, Ago: 99}},   // a server clock ahead: not before its power-on
		{10, seen(2, Loading)},
		{12, Event{Kind: Observed, Node: 0, Phase: Booted, Ago: 3}},    // not before its load
		{13, Event{Kind: Observed, Node: 0, Phase: Healthy, Ago: 0.4}}, // reported at 12.6 s
	})
	recs := c.Records()
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"node 0 load", recs[0].LoadAt, 9.25},
		{"node 0 booted", recs[0].BootAt, 9.25},
		{"node 0 healthy", recs[0].HealthAt, 12.6},
		{"node 1 load", recs[1].LoadAt, recs[1].PowerAt},
		{"node 2 load", recs[2].LoadAt, 10},
	} {
		if math.Abs(tc.got-tc.want) > 1e-9 {
			t.Errorf("%s at %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
