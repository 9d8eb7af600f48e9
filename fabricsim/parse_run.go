package fabricsim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/topology"
)

// The text forms of a run's time step, arrivals and server failures, as bootctl simulate's
// --time-step, --arrival and --fail take them. Errors name the value, not the flag.

// ParseTimeStep reads a time step in seconds: 0 or auto (exact), or a non-negative duration.
func ParseTimeStep(step string) (float64, error) {
	switch step {
	case "auto", "0":
		// Exact: the incremental solver makes an exact ramp cheap, so the 10 ms grid that auto
		// meant for spread arrivals is no longer needed.
		return 0, nil
	}
	d, err := time.ParseDuration(step)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not auto, 0 or a non-negative duration like 10ms", step)
	}
	return d.Seconds(), nil
}

// BatchArrivals returns the arrival times of batch b's nodes: nil for "all" (every node at 0), a
// ramp for "ramp:N" (N nodes per second in batch order), else the times listed (an arrival file's,
// see ReadArrivals), which must name exactly the batch's nodes.
func BatchArrivals(arrival string, listed map[int]float64, b topology.Batch, g *topology.Graph) ([]float64, error) {
	switch {
	case arrival == "all":
		return nil, nil
	case strings.HasPrefix(arrival, "ramp:"):
		rate, err := strconv.ParseFloat(strings.TrimPrefix(arrival, "ramp:"), 64)
		if err != nil {
			return nil, fmt.Errorf("want ramp:N with N nodes per second")
		}
		return RampArrivals(len(b.Nodes), rate)
	}
	arr := make([]float64, len(b.Nodes))
	in := make(map[int]bool, len(b.Nodes))
	for i, n := range b.Nodes {
		t, ok := listed[n]
		if !ok {
			return nil, fmt.Errorf("node %s of batch %q has no arrival time", g.VertexName(g.Nodes()[n]), b.Label)
		}
		arr[i] = t
		in[n] = true
	}
	for n := range listed {
		if !in[n] {
			return nil, fmt.Errorf("node %s is not in batch %q", g.VertexName(g.Nodes()[n]), b.Label)
		}
	}
	return arr, nil
}

// FailureItemError is a bad item of a failure list: it prints as `"ITEM": what is wrong`.
type FailureItemError struct {
	Item string
	Err  error
}

func (e *FailureItemError) Error() string { return fmt.Sprintf("%q: %v", e.Item, e.Err) }
func (e *FailureItemError) Unwrap() error { return e.Err }

// ParseFailures reads server failures, each SERVER@TIME (bs3@12s, 3@12). A failed server must be
// up at the start (not absent, not dead), fail once, and leave one server up. An error about one
// item is a *FailureItemError.
func ParseFailures(g *topology.Graph, items []string, absent, dead []bool) ([]ServerFailure, error) {
	servers := len(g.Servers())
	down := 0
	for s := range servers {
		if isSet(absent, s) || isSet(dead, s) {
			down++
		}
	}
	var out []ServerFailure
	seen := make([]bool, servers)
	for _, item := range items {
		item = strings.TrimSpace(item)
		f, err := parseFailure(g, item, absent, dead, seen)
		if err != nil {
			return nil, &FailureItemError{Item: item, Err: err}
		}
		seen[f.Server] = true
		down++
		out = append(out, f)
	}
	if down == servers {
		return nil, fmt.Errorf("all %d boot servers would be down (%d fail, %d down from the start); at least one must stay up",
			servers, len(out), servers-len(out))
	}
	return out, nil
}

// parseFailure parses one SERVER@TIME of a server up from the start that has not failed yet (seen).
func parseFailure(g *topology.Graph, item string, absent, dead, seen []bool) (ServerFailure, error) {
	name, at, ok := strings.Cut(item, "@")
	if !ok {
		return ServerFailure{}, fmt.Errorf("want SERVER@TIME, e.g. bs3@12s")
	}
	srv, err := ParseServer(g, strings.TrimSpace(name))
	if err != nil {
		return ServerFailure{}, err
	}
	t, err := ParseSeconds(strings.TrimSpace(at))
	if err != nil {
		return ServerFailure{}, err
	}
	sname := g.VertexName(g.Servers()[srv])
	switch {
	case seen[srv]:
		return ServerFailure{}, fmt.Errorf("%s fails twice", sname)
	case isSet(absent, srv):
		return ServerFailure{}, fmt.Errorf("%s is down from the start (--failed-servers)", sname)
	case isSet(dead, srv):
		return ServerFailure{}, fmt.Errorf("%s is down from the start (--failed-during-boot)", sname)
	}
	return ServerFailure{Server: srv, Seconds: t}, nil
}

// ParseServer parses a boot server of g: its name (bs3), or its index (3).
func ParseServer(g *topology.Graph, s string) (int, error) {
	for i, v := range g.Servers() {
		if g.VertexName(v) == s {
			return i, nil
		}
	}
	n := len(g.Servers())
	i, err := strconv.Atoi(strings.TrimPrefix(s, "bs"))
	if err != nil || i < 0 || i >= n {
		return 0, fmt.Errorf("%q is not a boot server (0-%d or bs0-bs%d)", s, n-1, n-1)
	}
	return i, nil
}

// ParseSeconds parses a time from the start of the boot: a duration (12s, 1m30s) or seconds (12.5).
func ParseSeconds(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d, derr := time.ParseDuration(s)
		if derr != nil {
			return 0, fmt.Errorf("time %q: want a duration like 12s or a number of seconds", s)
		}
		v = d.Seconds()
	}
	if v < 0 {
		return 0, fmt.Errorf("time %q must not be negative", s)
	}
	return v, nil
}
