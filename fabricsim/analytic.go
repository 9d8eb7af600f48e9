package fabricsim

import (
	"fmt"
	"math"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// SegmentResult is the analytic model's view of one segment for a batch.
type SegmentResult struct {
	Name string `json:"name"`
	// MinMbps is the smallest capacity/sharers over the segment's channels that the batch crosses.
	MinMbps float64 `json:"min_mbps"`
	// Sharers is the number of booting nodes on the channel where MinMbps is reached.
	Sharers int `json:"sharers"`
	// Bottleneck is set when the segment limits the batch.
	Bottleneck bool `json:"bottleneck"`
}

// Analysis is the analytic model's prediction for one batch under one mapping.
type Analysis struct {
	Nodes       int             `json:"nodes"`
	ServersUsed int             `json:"servers_used"`
	Segments    []SegmentResult `json:"segments"`
	// BandwidthMbps is the slowest booting node's bandwidth.
	BandwidthMbps float64  `json:"bandwidth_mbps"`
	Bottlenecks   []string `json:"bottlenecks"`
	// BootSeconds is the image size over the batch bandwidth.
	BootSeconds float64 `json:"boot_seconds"`
}

// Analyzer runs the analytic model on one graph, reusing its buffers between batches. The zero
// value is not usable; make one with NewAnalyzer. An Analyzer is not safe for concurrent use.
type Analyzer struct {
	g       *topology.Graph
	r       topology.Router
	order   []topology.SegmentID
	sharers []int32
	touched []topology.Channel
	route   []topology.Channel
}

// NewAnalyzer returns an analyzer for g whose routes come from r (nil: g's tree routes).
func NewAnalyzer(g *topology.Graph, r topology.Router) (*Analyzer, error) {
	if r == nil {
		r = g.TreeRouter()
		if r == nil {
			return nil, fmt.Errorf("analytic model: %s is not a tree; a router is needed", g.Name)
		}
	}
	return &Analyzer{g: g, r: r, sharers: make([]int32, g.NumChannels()), order: SegmentOrder(g, r)}, nil
}

// SegmentOrder lists g's segments in the order a node meets them on its way to a boot server (N1
// first on the paper's machine), then any others by ID.
func SegmentOrder(g *topology.Graph, r topology.Router) []topology.SegmentID {
	seen := make([]bool, len(g.Segments()))
	var order []topology.SegmentID
	if len(g.Nodes()) > 0 && len(g.Servers()) > 0 && r != nil {
		if route, err := r.Route(nil, g.Nodes()[0], g.Servers()[0]); err == nil {
			for _, c := range route {
				if s := g.Link(c.Link()).Segment; !seen[s] {
					seen[s] = true
					order = append(order, s)
				}
			}
		}
	}
	for s := range g.Segments() {
		if !seen[s] {
			order = append(order, topology.SegmentID(s))
		}
	}
	return order
}

// Segments returns the segment labels in display order.
func (an *Analyzer) Segments() []string {
	out := make([]string, len(an.order))
	for i, s := range an.order {
		out[i] = an.g.Segment(s)
	}
	return out
}

// Analyze predicts booting batch (node indices, no duplicates) under assignment a with an image of
// imageBytes bytes.
func (an *Analyzer) Analyze(a *mapping.Assignment, batch []int, imageBytes float64) (*Analysis, error) {
	g := an.g
	defer an.reset()
	used := map[int32]bool{}
	for _, n := range batch {
		if n < 0 || n >= len(g.Nodes()) {
			return nil, fmt.Errorf("analytic model: node %d out of range", n)
		}
		s := a.Server[n]
		if s < 0 {
			return nil, fmt.Errorf("analytic model: node %s has no boot server", g.VertexName(g.Nodes()[n]))
		}
		used[s] = true
		var err error
		an.route, err = an.r.Route(an.route[:0], g.Servers()[s], g.Nodes()[n])
		if err != nil {
			return nil, fmt.Errorf("analytic model: %w", err)
		}
		for _, c := range an.route {
			if an.sharers[c] == 0 {
				an.touched = append(an.touched, c)
			}
			an.sharers[c]++
		}
	}
	res := &Analysis{Nodes: len(batch), ServersUsed: len(used), BandwidthMbps: math.Inf(1)}
	segMin := make([]float64, len(g.Segments()))
	segSharers := make([]int, len(g.Segments()))
	for i := range segMin {
		segMin[i] = math.Inf(1)
	}
	for _, c := range an.touched {
		seg := g.Link(c.Link()).Segment
		bw := g.ChannelCapacity(c) / float64(an.sharers[c])
		if bw < segMin[seg] {
			segMin[seg], segSharers[seg] = bw, int(an.sharers[c])
		}
		res.BandwidthMbps = min(res.BandwidthMbps, bw)
	}
	for _, s := range an.order {
		if math.IsInf(segMin[s], 1) {
			continue
		}
		// A relative tolerance so that 1000/8 and 20000/160 count as the same bottleneck.
		bottleneck := segMin[s] <= res.BandwidthMbps*(1+1e-9)
		res.Segments = append(res.Segments, SegmentResult{Name: g.Segment(s), MinMbps: segMin[s], Sharers: segSharers[s], Bottleneck: bottleneck})
		if bottleneck {
			res.Bottlenecks = append(res.Bottlenecks, g.Segment(s))
		}
	}
	if len(batch) == 0 {
		res.BandwidthMbps = 0
		return res, nil
	}
	res.BootSeconds = imageBytes * 8 / (res.BandwidthMbps * 1e6)
	return res, nil
}

func (an *Analyzer) reset() {
	for _, c := range an.touched {
		an.sharers[c] = 0
	}
	an.touched = an.touched[:0]
}

// SegmentNames returns g's segment labels in the order of SegmentOrder with g's tree routes.
func SegmentNames(g *topology.Graph) []string {
	var out []string
	for _, s := range SegmentOrder(g, g.TreeRouter()) {
		out = append(out, g.Segment(s))
	}
	return out
}
