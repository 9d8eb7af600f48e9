package report

import (
	"fmt"
	"math"
	"slices"
)

// segMin returns the analytic minimum of segment name in r, or NaN when the batch does not cross it.
func segMin(r *Row, name string) (float64, bool) {
	for _, s := range r.Segments {
		if s.Name == name {
			return s.MinMbps, s.Bottleneck
		}
	}
	return math.NaN(), false
}

// bootChart is boot time against batch size, one line per algorithm, for the per-segment
// bandwidth model or, with flow set, the end-to-end flow model. Lines equal at every batch are
// drawn once under all their names; the others differ in dashes and markers, so a line that
// coincides with another over part of the ladder stays visible.
func (rep *Report) bootChart(flow bool) *Chart {
	na := len(rep.Algos)
	c := &Chart{Title: "Boot time, per-segment bandwidth model (no protocol caps)", XLabel: "batch size (nodes, log scale)", YLabel: "boot time (s, log scale)", XLog: true, YLog: true}
	if flow {
		c.Title = "End-to-end boot time (flow model: DHCP, TFTP, health)"
	}
	for j, a := range rep.Algos {
		s := Series{Name: a, Dots: true}
		for i, b := range rep.Batches {
			r := rep.Baseline.row(i, j, na)
			v := r.BootSeconds
			if flow {
				v = r.FlowSeconds
			}
			s.X, s.Y = append(s.X, float64(b.Nodes)), append(s.Y, v)
		}
		c.Series = append(c.Series, Styled(s, j, na))
	}
	c.Series = MergeCoincident(c.Series)
	return c
}

// segmentChart is per-segment bandwidth against batch size for algorithm j, bottlenecks ringed.
func (rep *Report) segmentChart(j int) *Chart {
	na := len(rep.Algos)
	c := &Chart{Title: "Per-segment bandwidth, " + rep.Algos[j], XLabel: "batch size (nodes, log scale)",
		YLabel: "bandwidth per node (Mb/s, log scale)", XLog: true, YLog: true, MarkName: "bottleneck"}
	for k, seg := range rep.Segments {
		s := Series{Name: seg, Dots: true}
		for i, b := range rep.Batches {
			v, bott := segMin(rep.Baseline.row(i, j, na), seg)
			s.X, s.Y = append(s.X, float64(b.Nodes)), append(s.Y, v)
			if bott {
				c.Marks = append(c.Marks, Mark{X: float64(b.Nodes), Y: v})
			}
		}
		c.Series = append(c.Series, Styled(s, k, len(rep.Segments)))
	}
	c.Series = MergeCoincident(c.Series)
	return c
}

// distChart is the cumulative distribution of node completion times.
func (rep *Report) distChart() *Chart {
	d := rep.Distribution
	model := BandwidthModel
	if d.Model == "flow" {
		model = EndToEndModel
	}
	c := &Chart{Title: fmt.Sprintf("Node completion times, %s (%s)", d.Batch, model), XLabel: "completion time since power-on (s)",
		YLabel: "nodes done (%)", YFromZero: true}
	for j, a := range d.Algos {
		s := Series{Name: a.Algo, Step: true}
		for k := range a.CDFSeconds {
			s.X, s.Y = append(s.X, a.CDFSeconds[k]), append(s.Y, 100*a.CDFFraction[k])
		}
		c.Series = append(c.Series, Styled(s, j, len(d.Algos)))
	}
	c.Series = MergeCoincident(c.Series)
	return c
}

// symmetric reports whether all nodes finish together under every algorithm.
func (d *Distribution) symmetric() bool {
	for _, a := range d.Algos {
		if n := len(a.Percentiles); n > 0 && !sameTime(a.Percentiles[0], a.Percentiles[n-1]) {
			return false
		}
	}
	return true
}

// scenarioFlow reports whether the scenarios are compared end to end: the flow model runs for the
// recommended mapping in every scenario, which is the mapping they are compared under.
func (rep *Report) scenarioFlow() bool { return rep.FlowModel != "" }

// scenarioChart is boot time against batch size for the baseline and every scenario under the
// recommended mapping. A scenario that changes nothing on the ladder (N4 upgraded while N5 still
// binds) is drawn as one line with the baseline, named "baseline = ...", not hidden under it.
func (rep *Report) scenarioChart() *Chart {
	j := rep.recommendedIndex()
	flow := rep.scenarioFlow()
	model := BandwidthModel
	if flow {
		model = EndToEndModel
	}
	c := &Chart{Title: "What-if scenarios, " + rep.Algos[j] + ", " + model, XLabel: "batch size (nodes, log scale)", YLabel: "boot time (s, log scale)", XLog: true, YLog: true}
	for k, cs := range rep.cases() {
		s := Series{Name: cs.Name, Dots: true}
		for i, b := range rep.Batches {
			r := cs.row(i, j, len(rep.Algos))
			v := r.BootSeconds
			if flow {
				v = r.FlowSeconds
			}
			s.X, s.Y = append(s.X, float64(b.Nodes)), append(s.Y, v)
		}
		c.Series = append(c.Series, Styled(s, k, len(rep.Scenarios)+1))
	}
	c.Series = MergeCoincident(c.Series)
	return c
}

func (rep *Report) recommendedIndex() int {
	return max(0, slices.Index(rep.Algos, rep.Recommendation.Mapping))
}

func (rep *Report) cases() []*Case { return append([]*Case{rep.Baseline}, rep.Scenarios...) }

// Charts returns every chart of the HTML report, in page order.
func (rep *Report) Charts() []*Chart {
	var out []*Chart
	if rep.FlowModel != "" {
		out = append(out, rep.bootChart(true))
	}
	out = append(out, rep.bootChart(false))
	for j := range rep.Algos {
		out = append(out, rep.segmentChart(j))
	}
	if rep.Distribution != nil {
		out = append(out, rep.distChart())
	}
	if len(rep.Scenarios) > 0 {
		out = append(out, rep.scenarioChart())
	}
	return out
}
