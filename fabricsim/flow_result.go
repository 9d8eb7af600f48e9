package fabricsim

import (
	"encoding/json"
	"math"
	"slices"
)

// FlowResult is what a flow-level simulation predicts for one batch.
type FlowResult struct {
	Nodes       int    `json:"nodes"`
	ServersUsed int    `json:"servers_used"`
	Files       []File `json:"files"`
	// BatchSeconds is when the last node finished (its health report included), from time 0.
	BatchSeconds float64 `json:"batch_seconds"`
	// Completion is the distribution of the nodes' finishing times from time 0; Duration that of
	// finishing time minus power-on time.
	Completion Distribution `json:"completion_seconds"`
	Duration   Distribution `json:"duration_seconds"`
	// Segments is per-segment usage in route order (N1 first on the paper's machine).
	Segments []SegmentUsage `json:"segments"`
	// Bottlenecks counts the nodes by the limit that bounded their flows longest.
	Bottlenecks []BottleneckShare `json:"bottlenecks"`
	// TopLinks are the links that carried the most bytes.
	TopLinks []LinkUsage `json:"top_links"`
	// Utilisation is each segment's throughput over time.
	Utilisation Series `json:"utilisation"`
	// NodeResults are in batch order.
	NodeResults []NodeResult `json:"node_results"`
	Stats       FlowStats    `json:"stats"`
	// Failure is the takeover summary of a run with server failures (SimulateFailures).
	Failure *FailureSummary `json:"failure,omitempty"`
}

// Distribution summarises a set of times (nearest-rank percentiles).
type Distribution struct {
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// SegmentUsage is one segment's share of the work. Capacity counts the segment's channels that
// some booting node's route crosses, in the server-to-node direction.
type SegmentUsage struct {
	Name         string  `json:"name"`
	Channels     int     `json:"channels"`
	CapacityMbps float64 `json:"capacity_mbps"`
	Bytes        float64 `json:"bytes"`
	// PeakMbps is the largest total rate over the segment's channels, PeakUtilisation that over
	// CapacityMbps.
	PeakMbps        float64 `json:"peak_mbps"`
	PeakUtilisation float64 `json:"peak_utilisation"`
	// BottleneckNodes is the number of nodes this segment bounded longest.
	BottleneckNodes int `json:"bottleneck_nodes"`
}

// BottleneckShare is the number of nodes one limit bounded longest: a segment name, "server" (the
// per-server cap), or "tftp"/"http" (the protocol cap).
type BottleneckShare struct {
	Limit string `json:"limit"`
	Nodes int    `json:"nodes"`
}

// LinkUsage is the traffic of one channel (the server-to-node direction of a link).
type LinkUsage struct {
	From         string  `json:"from"`
	To           string  `json:"to"`
	Segment      string  `json:"segment"`
	CapacityMbps float64 `json:"capacity_mbps"`
	Bytes        float64 `json:"bytes"`
}

// Series is throughput over time: Segments[s].Mbps[i] holds from TimeSeconds[i] to
// TimeSeconds[i+1] (the last point is the end, where everything is idle). When the run had more
// events than the sample limit, the points are equal bins averaged over time.
type Series struct {
	TimeSeconds []float64       `json:"time_seconds"`
	Segments    []SegmentSeries `json:"segments"`
}

// SegmentSeries is one segment's throughput (Mb/s) and utilisation (throughput over capacity).
type SegmentSeries struct {
	Name        string    `json:"name"`
	Mbps        []float64 `json:"mbps"`
	Utilisation []float64 `json:"utilisation"`
}

// NodeResult is one node's boot.
type NodeResult struct {
	Name           string  `json:"name"`
	Server         string  `json:"server"`
	ArrivalSeconds float64 `json:"arrival_seconds"`
	DoneSeconds    float64 `json:"done_seconds"`
	// Bottleneck is the limit that bounded the node's flows longest (see BottleneckShare), and
	// BoundSeconds how long.
	Bottleneck   string  `json:"bottleneck"`
	BoundSeconds float64 `json:"bound_seconds"`
}

// FlowStats says how much work the simulation did.
type FlowStats struct {
	Flows       int `json:"flows"`
	Classes     int `json:"classes"`
	Paths       int `json:"paths"`
	Groups      int `json:"groups"`
	Events      int `json:"events"`
	Allocations int `json:"allocations"`
	// Regrowths counts the re-solves whose component had to grow through a channel it had left
	// as a cut (see resolve).
	Regrowths int `json:"regrowths"`
}

// distribution summarises v, which it sorts.
func distribution(v []float64) Distribution {
	if len(v) == 0 {
		return Distribution{}
	}
	slices.Sort(v)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(v)))) - 1
		return v[max(0, min(i, len(v)-1))]
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return Distribution{Min: v[0], P50: rank(0.5), P90: rank(0.9), P99: rank(0.99), Max: v[len(v)-1], Mean: sum / float64(len(v))}
}

// binSeries resamples a step series (times t, values by segment) into n equal bins over
// [t[0], t[last]], each the time-weighted mean of the steps it covers.
func binSeries(t []float64, vals [][]float64, n int) ([]float64, [][]float64) {
	start, end := t[0], t[len(t)-1]
	width := (end - start) / float64(n)
	bt := make([]float64, n+1)
	for i := range bt {
		bt[i] = start + width*float64(i)
	}
	bt[n] = end
	out := make([][]float64, len(vals))
	for s := range vals {
		out[s] = make([]float64, n+1)
	}
	for i := 0; i+1 < len(t); i++ {
		a, b := t[i], t[i+1]
		for a < b {
			bin := min(int((a-start)/width), n-1)
			hi := min(b, bt[bin+1])
			if bin == n-1 {
				hi = b
			}
			if hi <= a { // rounding at a bin edge
				bin = min(bin+1, n-1)
				hi = min(b, bt[bin+1])
				if hi <= a {
					break
				}
			}
			for s := range vals {
				out[s][bin] += vals[s][i] * (hi - a)
			}
			a = hi
		}
	}
	for s := range out {
		for i := 0; i < n; i++ {
			out[s][i] /= width
		}
	}
	return bt, out
}

// nodeJSON is a node's result in JSON with, after server failures, its takeover.
type nodeJSON struct {
	NodeResult
	NodeTakeover
}

// flowResultJSON is FlowResult without its methods.
type flowResultJSON FlowResult

// MarshalJSON writes the result; with server failures each node's entry of node_results also
// has "restarted" and "servers" (see NodeTakeover). They live beside NodeResults rather than in
// it so that runs without failures, the common case, pay nothing for them.
func (r FlowResult) MarshalJSON() ([]byte, error) {
	if r.Failure == nil || len(r.Failure.Nodes) != len(r.NodeResults) {
		return json.Marshal(flowResultJSON(r))
	}
	nodes := make([]nodeJSON, len(r.NodeResults))
	for i := range nodes {
		nodes[i] = nodeJSON{r.NodeResults[i], r.Failure.Nodes[i]}
	}
	return json.Marshal(struct {
		flowResultJSON
		NodeResults []nodeJSON `json:"node_results"`
	}{flowResultJSON(r), nodes})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *FlowResult) UnmarshalJSON(b []byte) error {
	var v struct {
		flowResultJSON
		NodeResults []nodeJSON `json:"node_results"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = FlowResult(v.flowResultJSON)
	r.NodeResults = nil
	if v.NodeResults != nil {
		r.NodeResults = make([]NodeResult, len(v.NodeResults))
	}
	for i, n := range v.NodeResults {
		r.NodeResults[i] = n.NodeResult
	}
	if r.Failure != nil {
		r.Failure.Nodes = make([]NodeTakeover, len(v.NodeResults))
		for i, n := range v.NodeResults {
			r.Failure.Nodes[i] = n.NodeTakeover
		}
	}
	return nil
}
