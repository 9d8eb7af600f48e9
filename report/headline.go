package report

import (
	"fmt"
	"strings"
)

// Model names, as the report labels them wherever it shows a figure.
const (
	// EndToEndModel is the flow model with DHCP, the protocol caps and the health report: the
	// figure `bootctl simulate` prints as the batch time, and the report's headline.
	EndToEndModel = "end-to-end flow model"
	// BandwidthModel is the analytic model: image size over the bottleneck's capacity/sharers.
	BandwidthModel = "per-segment bandwidth model, no protocol caps"
)

// Headline answers the planner's question before anything else: how long each batch of the ladder
// takes to boot under the recommended mapping. The end-to-end figure comes first because it is
// what a planner waits for; the per-segment bandwidth model stands beside it, labelled, because it
// is the one the bottleneck and upgrade analysis reasons with and it says 3.2 s for a board that
// boots in 8.09 s (it has no DHCP, TFTP cap or health report).
type Headline struct {
	Mapping string `json:"mapping"`
	// Model is the model of the headline figure: EndToEndModel, or BandwidthModel when the report
	// runs without the flow model.
	Model   string          `json:"model"`
	Batches []HeadlineBatch `json:"batches"`
	// Text is the headline in one sentence or two.
	Text string `json:"text"`
}

// HeadlineBatch is one batch of the headline.
type HeadlineBatch struct {
	Batch string `json:"batch"`
	Nodes int    `json:"nodes"`
	// EndToEndSeconds is the flow model's batch time (0 without the flow model).
	EndToEndSeconds float64 `json:"end_to_end_seconds,omitempty"`
	// EndToEndLimit is what bounded most nodes in the flow model (a segment or "tftp cap").
	EndToEndLimit         string   `json:"end_to_end_limit,omitempty"`
	BandwidthModelSeconds float64  `json:"bandwidth_model_seconds"`
	Bottlenecks           []string `json:"bandwidth_model_bottlenecks"`
}

// Seconds is the headline figure of the batch: end to end when the flow model ran.
func (h HeadlineBatch) Seconds() float64 {
	if h.EndToEndSeconds > 0 {
		return h.EndToEndSeconds
	}
	return h.BandwidthModelSeconds
}

// headline collects the baseline's times under mapping j and words the smallest and largest batch.
func headline(rep *Report, j int) Headline {
	na := len(rep.Algos)
	h := Headline{Mapping: rep.Algos[j], Model: BandwidthModel}
	if rep.FlowModel != "" {
		h.Model = EndToEndModel
	}
	small, large := 0, 0
	for i, b := range rep.Batches {
		r := rep.Baseline.row(i, j, na)
		h.Batches = append(h.Batches, HeadlineBatch{Batch: b.Label, Nodes: b.Nodes, EndToEndSeconds: r.FlowSeconds,
			EndToEndLimit: r.FlowLimit, BandwidthModelSeconds: r.BootSeconds, Bottlenecks: r.Bottlenecks})
		if b.Nodes < rep.Batches[small].Nodes {
			small = i
		}
		if b.Nodes > rep.Batches[large].Nodes {
			large = i
		}
	}
	say := func(hb HeadlineBatch) string {
		if hb.EndToEndSeconds == 0 {
			return fmt.Sprintf("%s s (%s)", fmtSig(hb.BandwidthModelSeconds), BandwidthModel)
		}
		return fmt.Sprintf("%s s end to end (%s s in the %s)", fmtFixed(hb.EndToEndSeconds, 3), fmtSig(hb.BandwidthModelSeconds), BandwidthModel)
	}
	var parts []string
	lb := h.Batches[large]
	parts = append(parts, fmt.Sprintf("With %s, %s (%d nodes) boots in %s.", h.Mapping, lb.Batch, lb.Nodes, say(lb)))
	if small != large {
		sb := h.Batches[small]
		parts = append(parts, fmt.Sprintf("%s (%d nodes): %s.", capitalize(sb.Batch), sb.Nodes, say(sb)))
	}
	h.Text = strings.Join(parts, " ")
	return h
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
