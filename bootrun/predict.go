package bootrun

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// PredictInput is what a predicted run is made of: the batch on its machine, what each node
// fetches, the admission limits and the controller's configuration.
type PredictInput struct {
	Graph  *topology.Graph
	Router topology.Router // nil: the graph's tree routes
	Assign *mapping.Assignment
	Batch  []int
	Flow   fabricsim.FlowConfig
	Limits *Limits
	Config Config
	// PostSeconds is the firmware's time from power-on to its first DHCP request.
	PostSeconds float64
}

// Prediction is a run predicted in simulated time by the controller that will run it.
type Prediction struct {
	// Makespan is when the last node is healthy, from the first power-on.
	Makespan float64 `json:"makespan_seconds"`
	// PeakInFlight is the most nodes in flight at once.
	PeakInFlight int          `json:"peak_in_flight"`
	Records      []NodeRecord `json:"nodes"`
	// Events counts the controller's decisions (its events).
	Events int                   `json:"-"`
	Flow   *fabricsim.FlowResult `json:"-"`
}

// Predict runs the controller against the flow simulator: a node powers on when the controller
// admits it, reaches its first DHCP request PostSeconds later, and frees its capacity when its
// last file is in.
func Predict(ctx context.Context, in PredictInput) (*Prediction, error) {
	if in.Limits == nil || len(in.Limits.Nodes) != len(in.Batch) {
		return nil, fmt.Errorf("boot prediction: limits for %d nodes, batch of %d", lenNodes(in.Limits), len(in.Batch))
	}
	if !(in.PostSeconds >= 0) || math.IsInf(in.PostSeconds, 0) {
		return nil, fmt.Errorf("boot prediction: firmware time %v: want a finite number of seconds", in.PostSeconds)
	}
	nodes := make([]Node, len(in.Batch))
	for i, n := range in.Batch {
		nodes[i] = Node{Name: in.Graph.VertexName(in.Graph.Nodes()[n]), Resources: in.Limits.Nodes[i]}
	}
	cfg := in.Config
	cfg.Caps, cfg.CapacityMbps, cfg.Factor = in.Limits.Caps, in.Limits.CapacityMbps, math.Inf(1) // nothing is late in a simulation
	cfg.FilesMb = 0                                                                              // the files the simulation moves, whatever the caller's configuration says
	for _, f := range in.Flow.Files {
		cfg.FilesMb += f.Bytes * 8 / 1e6
	}
	c, err := New(cfg, nodes)
	if err != nil {
		return nil, err
	}
	plant := &simPlant{c: c, post: in.PostSeconds}
	flow := in.Flow
	flow.Arrivals, flow.Admit = nil, plant
	res, err := fabricsim.Simulate(ctx, in.Graph, in.Router, in.Assign, in.Batch, flow)
	if err != nil {
		return nil, fmt.Errorf("boot prediction: %w", err)
	}
	recs := c.Records()
	for i, nr := range res.NodeResults {
		recs[i].BootAt, recs[i].HealthAt = nr.DoneSeconds-flow.HealthSeconds, nr.DoneSeconds
	}
	return &Prediction{Makespan: res.BatchSeconds, PeakInFlight: plant.peak, Records: recs, Events: c.Events(), Flow: res}, nil
}

func lenNodes(l *Limits) int {
	if l == nil {
		return 0
	}
	return len(l.Nodes)
}

// simPlant is the simulated machine the controller drives: every BMC answers at once, every
// node asks for its address PostSeconds after its power-on (it enters its link then) and boots
// as the flow model says.
type simPlant struct {
	c       *Controller
	post    float64
	started bool
	peak    int
	on      []fabricsim.Arrival
	answer  []int
	dhcp    []fabricsim.Arrival // nodes on their way, in order of their first DHCP request
}

func (p *simPlant) Admit(now float64, finished []int) ([]fabricsim.Arrival, float64) {
	p.on = p.on[:0]
	if !p.started {
		p.started = true
		p.act(now, p.c.Start(now))
	}
	for k := 0; k < len(p.answer); k++ { // act appends: the length is read every time
		p.act(now, p.c.Handle(now, Event{Kind: PowerAnswered, Node: p.answer[k]}))
	}
	p.answer = p.answer[:0]
	for len(p.dhcp) > 0 && p.dhcp[0].At <= now {
		a := p.dhcp[0]
		p.dhcp = p.dhcp[1:]
		p.act(now, p.c.Handle(now, Event{Kind: Observed, Node: a.Pos, Phase: Loading}))
	}
	for _, i := range finished {
		p.act(now, p.c.Handle(now, Event{Kind: Observed, Node: i, Phase: Booted}))
		p.act(now, p.c.Handle(now, Event{Kind: Observed, Node: i, Phase: Healthy}))
	}
	// A wake with nothing else to tell (a pace's time) is a tick: admission looks again.
	p.act(now, p.c.Handle(now, Event{Kind: Tick}))
	for k := 0; k < len(p.answer); k++ {
		p.act(now, p.c.Handle(now, Event{Kind: PowerAnswered, Node: p.answer[k]}))
	}
	p.answer = p.answer[:0]
	p.peak = max(p.peak, p.c.InFlight())
	wake := p.c.NextDeadline()
	if len(p.dhcp) > 0 {
		wake = min(wake, p.dhcp[0].At)
	}
	if !(wake > now) {
		wake = math.Inf(1)
	}
	return p.on, wake
}

func (p *simPlant) act(now float64, acts []Action) {
	for _, a := range acts {
		if a.Kind == PowerOn || a.Kind == Cycle {
			p.on = append(p.on, fabricsim.Arrival{Pos: a.Node, At: now + p.post})
			p.answer = append(p.answer, a.Node)
			// Every node has the same firmware time: the queue stays in order.
			p.dhcp = append(p.dhcp, fabricsim.Arrival{Pos: a.Node, At: now + p.post})
		}
	}
}

// Bounds of FitEfficiency.
const (
	// minEfficiency: a plant whose links carried less than this share of their capacity to its
	// nodes is not fitted further (its run was stuck, not slow).
	minEfficiency = 0.05
	// fitSteps bounds the predictions a fit makes; fitTolerance is the share of the measured
	// makespan within which it stops.
	fitSteps     = 6
	fitTolerance = 0.01
)

// FitEfficiency finds the share of their capacity the links carried to the nodes of a run that
// took measured seconds (its journal's makespan): the transfers the firmware gave up, the
// evictions and the gaps while a link waited for its next node cost a real run what the fluid
// model does not see. in is that run's batch with its calibrated times; the fit scales every
// file's bytes by 1/efficiency (a byte of boot file costs 1/efficiency bytes of link) until the
// prediction meets measured, and returns the efficiency, at most 1, with that prediction. A
// run faster than the model, or no slower than its fixed times, fits 1.
func FitEfficiency(ctx context.Context, in PredictInput, measured float64) (float64, *Prediction, error) {
	p, err := Predict(ctx, in)
	if err != nil {
		return 0, nil, err
	}
	fixed := in.PostSeconds + in.Flow.DHCPSeconds + in.Flow.HealthSeconds
	eff := 1.0
	for range fitSteps {
		over, want := p.Makespan-fixed, measured-fixed
		if !(over > 0) || !(want > 0) || math.Abs(p.Makespan-measured) <= fitTolerance*measured {
			break
		}
		next := min(1, max(minEfficiency, eff*over/want))
		if next == eff {
			break
		}
		eff = next
		scaled := in
		scaled.Flow.Files = slices.Clone(in.Flow.Files)
		for i := range scaled.Flow.Files {
			scaled.Flow.Files[i].Bytes /= eff
		}
		if p, err = Predict(ctx, scaled); err != nil {
			return 0, nil, err
		}
	}
	return eff, p, nil
}
