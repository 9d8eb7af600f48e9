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
		cfg:   Config{Caps: []int{1}, Expect: expect, MaxAttempts: 1, Breaker: BreakerConfig{Window: 4, Rate: 0.5, MinFailures: 2}},
		nodes: nodesN(4, 0),
		steps: []step{{1, bmcFail(0, BMCTimeout)}, {2, bmcFail(1, BMCTimeout)}, {3, Event{Kind: Tick}}, {4, Event{Kind: Resume}}},
		want: []string{"power-on 0", "give-up 0 bmc-timeout", "power-on 1", "give-up 1 bmc-timeout",
			"paused: 2 of the last 2 attempts failed (2 bmc-timeout)", "power-on 2"},
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
