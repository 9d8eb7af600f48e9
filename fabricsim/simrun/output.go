// Package simrun is the job of bootctl simulate and its output: every batch under every mapping
// (Job.Run), each run (a batch under one mapping and one delivery) written as a table, a summary
// row or CSV rows, with the takeovers of failed servers and the health aggregation beside them.
// The JSON form is the Run type itself.
package simrun

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/bootfabric/bootfabric/units"
)

// Run is one simulated boot of a batch under one mapping.
type Run struct {
	Batch string `json:"batch"`
	Algo  string `json:"algo"`
	// Delivery is unicast or multicast when --delivery multicast shows both; Mcast the tree
	// algorithm and Speedup the unicast batch time over this one's (multicast runs).
	Delivery string  `json:"delivery,omitempty"`
	Mcast    string  `json:"mcast,omitempty"`
	Speedup  float64 `json:"speedup_vs_unicast,omitempty"`
	// P2P is the peer delivery's root stage (p2p runs); Result's files, segments and links are
	// then those of the servers' files alone.
	P2P    *fabricsim.P2PBoot    `json:"p2p,omitempty"`
	Result *fabricsim.FlowResult `json:"result"`
	Health *Health               `json:"health,omitempty"`
}

// Health is a run's health aggregation; the per-node map is left out of JSON unless asked for.
type Health struct {
	*fabricsim.HealthResult
	Summary any `json:"summary"`
}

// ForJSON returns h with the summary reduced to its counts unless nodes is set.
func (h *Health) ForJSON(nodes bool) *Health {
	out := *h
	if nodes {
		out.Summary = h.HealthResult.Summary
	} else {
		out.Summary = h.HealthResult.Summary.Counts()
	}
	return &out
}

// TopOwners is how many new owners a failure's table row names.
const TopOwners = 4

func WriteCSV(w io.Writer, runs []Run) error {
	rows := [][]string{{"batch", "algo", "node", "server", "arrival_seconds", "done_seconds", "bottleneck", "bound_seconds"}}
	delivery := len(runs) > 0 && runs[0].Delivery != ""
	if delivery {
		rows[0] = append(rows[0], "delivery")
	}
	failures := len(runs) > 0 && runs[0].Result.Failure != nil
	if failures {
		rows[0] = append(rows[0], "restarted", "servers")
	}
	for _, r := range runs {
		var takeovers []fabricsim.NodeTakeover
		if f := r.Result.Failure; f != nil {
			takeovers = f.Nodes
		}
		for i, n := range r.Result.NodeResults {
			row := []string{r.Batch, r.Algo, n.Name, n.Server, float(n.ArrivalSeconds), float(n.DoneSeconds),
				n.Bottleneck, float(n.BoundSeconds)}
			if delivery {
				row = append(row, r.Delivery)
			}
			if failures {
				// Without an effect there are no takeovers: every node kept its server.
				var nt fabricsim.NodeTakeover
				if takeovers != nil {
					nt = takeovers[i]
				}
				servers := n.Server
				if len(nt.Servers) > 0 {
					servers = strings.Join(nt.Servers, " ")
				}
				row = append(row, strconv.FormatBool(nt.Restarted), servers)
			}
			rows = append(rows, row)
		}
	}
	return texttable.WriteCSV(w, rows)
}

func float(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }

// mainBottleneck names the limit that bounded most nodes.
func mainBottleneck(r *fabricsim.FlowResult) string {
	best := fabricsim.BottleneckShare{}
	for _, b := range r.Bottlenecks {
		if b.Nodes > best.Nodes {
			best = b
		}
	}
	if best.Nodes == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%d)", best.Limit, best.Nodes)
}

// WriteTable prints one summary row per run, or a single run in full.
func WriteTable(w io.Writer, g *topology.Graph, runs []Run) error {
	if len(runs) != 1 {
		return writeSummary(w, g, runs)
	}
	r := runs[0]
	res := r.Result
	var files []string
	for _, f := range res.Files {
		files = append(files, fmt.Sprintf("%s %s %s", f.Name, units.FormatBytes(f.Bytes), f.Protocol))
	}
	fmt.Fprintf(w, "%s: batch %s (%d nodes, %d servers used), %s; files: %s\n", g.Name, r.Batch, res.Nodes, res.ServersUsed, r.Algo,
		strings.Join(files, ", "))
	fmt.Fprintf(w, "batch time %s s\n\n", texttable.Float(res.BatchSeconds, 3))
	t := texttable.New(w)
	t.Row("seconds", "min", "p50", "p90", "p99", "max", "mean")
	for _, d := range []struct {
		name string
		d    fabricsim.Distribution
	}{{"completion", res.Completion}, {"boot duration", res.Duration}} {
		t.Row(d.name, texttable.Float(d.d.Min, 3), texttable.Float(d.d.P50, 3), texttable.Float(d.d.P90, 3), texttable.Float(d.d.P99, 3), texttable.Float(d.d.Max, 3), texttable.Float(d.d.Mean, 3))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := writeSegments(w, res); err != nil {
		return err
	}
	if len(res.TopLinks) > 0 {
		fmt.Fprintln(w, "\nbusiest links (server to node direction):")
		t = texttable.New(w)
		t.Row("from", "to", "segment", "capacity Mb/s", "traffic")
		for _, l := range res.TopLinks {
			t.Row(l.From, l.To, l.Segment, texttable.Float(l.CapacityMbps, 0), units.FormatBytes(l.Bytes))
		}
		return t.Flush()
	}
	return nil
}

// writeSummary prints one row per run: its completion distribution and main bottleneck (and
// with --delivery multicast, the delivery and the speedup over unicast).
func writeSummary(w io.Writer, g *topology.Graph, runs []Run) error {
	fmt.Fprintf(w, "%s: %d nodes, %d boot servers; completion times in seconds\n", g.Name, len(g.Nodes()), len(g.Servers()))
	t := texttable.New(w)
	if runs[0].Delivery != "" {
		t.Row("batch", "nodes", "algo", "delivery", "min", "p50", "p90", "p99", "max", "speedup", "bottleneck (nodes)")
		for _, r := range runs {
			d := r.Result.Completion
			del, speed, bound := r.Delivery, "-", mainBottleneck(r.Result)
			if r.Mcast != "" {
				del += " (" + r.Mcast + ")"
			}
			if r.Speedup > 0 {
				speed = "x" + texttable.Float(r.Speedup, 2)
			}
			if r.P2P != nil {
				bound = fmt.Sprintf("%s; root %s, %s", bound, strings.Join(r.P2P.Root.Bottlenecks, ","), r.P2P.Root.Seeding())
			}
			t.Row(r.Batch, r.Result.Nodes, r.Algo, del, texttable.Float(d.Min, 3), texttable.Float(d.P50, 3), texttable.Float(d.P90, 3), texttable.Float(d.P99, 3),
				texttable.Float(d.Max, 3), speed, bound)
		}
		return t.Flush()
	}
	t.Row("batch", "nodes", "algo", "min", "p50", "p90", "p99", "max", "bottleneck (nodes)")
	for _, r := range runs {
		d := r.Result.Completion
		t.Row(r.Batch, r.Result.Nodes, r.Algo, texttable.Float(d.Min, 3), texttable.Float(d.P50, 3), texttable.Float(d.P90, 3), texttable.Float(d.P99, 3),
			texttable.Float(d.Max, 3), mainBottleneck(r.Result))
	}
	return t.Flush()
}

// writeSegments prints each segment's load and the nodes it bounded, then the caps that
// bounded nodes.
func writeSegments(w io.Writer, res *fabricsim.FlowResult) error {
	t := texttable.New(w)
	t.Row("segment", "channels", "capacity Mb/s", "traffic", "peak Mb/s", "peak util", "bottleneck of")
	for _, s := range res.Segments {
		t.Row(s.Name, s.Channels, texttable.Float(s.CapacityMbps, 0), units.FormatBytes(s.Bytes), texttable.Float(s.PeakMbps, 1),
			texttable.Float(100*s.PeakUtilisation, 1)+"%", s.BottleneckNodes)
	}
	for _, b := range res.Bottlenecks {
		if !slices.ContainsFunc(res.Segments, func(s fabricsim.SegmentUsage) bool { return s.Name == b.Limit }) {
			t.Row(b.Limit+" cap", "-", "-", "-", "-", "-", b.Nodes)
		}
	}
	return t.Flush()
}

// WriteHealth prints the health aggregation of each batch once.
func WriteHealth(w io.Writer, runs []Run) error {
	var last *Health
	for _, r := range runs {
		h := r.Health
		if h == nil || h == last {
			continue
		}
		last = h
		res := h.HealthResult
		yes := map[bool]string{true: "yes", false: "no"}
		fmt.Fprintf(w, "\nhealth aggregation of batch %s (%s, %d nodes): %s (paper formula %s)\n", r.Batch, res.Algorithm, res.Nodes,
			dur(res.CompletionSeconds), dur(res.ReferenceSeconds))
		cnt := res.Summary.Counts()
		fmt.Fprintf(w, "  healthy %d, failed %d, unreachable %d; complete %s, every node accounted %s\n",
			cnt.Healthy, cnt.Failed, cnt.Unreachable, yes[res.Complete], yes[res.Accounted])
		if len(res.Stragglers) > 0 {
			fmt.Fprintf(w, "  stragglers %d\n", len(res.Stragglers))
		}
		if len(res.Faults) > 0 {
			fmt.Fprintf(w, "  faults %d, recovered %d:\n", len(res.Faults), res.RecoveredFaults)
			for _, f := range res.Faults {
				what := "recovered"
				if !f.Recovered {
					what = fmt.Sprintf("%d records lost", len(f.Lost))
				}
				fmt.Fprintf(w, "    node %d died at %s, detected at %s, %s\n", f.Node, dur(f.AtSeconds), dur(f.DetectedSeconds), what)
			}
		}
		fmt.Fprintf(w, "  messages %d (%s moved), tasks %d, recovery messages %d\n", res.Messages, units.FormatBytes(res.Bytes), res.Tasks,
			res.RecoveryMessages)
	}
	return nil
}

// dur prints seconds as a rounded duration (health aggregations take micro- to milliseconds).
func dur(s float64) string {
	return time.Duration(s * 1e9).Round(time.Microsecond / 10).String()
}

// WriteFailures prints each run's takeover: per failed server its time, detection, the nodes
// taken over and their new owners, and the batch time beside the run without failures.
func WriteFailures(w io.Writer, runs []Run) error {
	for _, r := range runs {
		f := r.Result.Failure
		if f == nil {
			continue
		}
		fmt.Fprint(w, "\nserver failures")
		if len(runs) > 1 {
			fmt.Fprintf(w, " (batch %s, %s)", r.Batch, r.Algo)
		}
		fmt.Fprintf(w, ", detected after %s s: batch time %s s with them, %s s without (+%s s); nodes taken over %d, restarted %d\n",
			texttable.Float(f.DetectSeconds, 3), texttable.Float(f.BatchSeconds, 3), texttable.Float(f.BaselineBatchSeconds, 3), texttable.Float(f.ExtraSeconds, 3),
			f.TakenOver, f.Restarted)
		if !f.Effect {
			fmt.Fprintln(w, "no effect: no failure met an unfinished node; the run is the one without failures")
		}
		t := texttable.New(w)
		t.Row("server", "fails s", "detected s", "mid-boot", "not started", "done", "new owners (nodes)")
		for _, st := range f.Servers {
			var owners []string
			for i, o := range st.NewOwners {
				if i == TopOwners {
					owners = append(owners, fmt.Sprintf("+%d more", len(st.NewOwners)-i))
					break
				}
				owners = append(owners, fmt.Sprintf("%s (%d)", o.Server, o.Nodes))
			}
			what := strings.Join(owners, ", ")
			if st.Note != "" {
				what = st.Note
			}
			t.Row(st.Server, texttable.Float(st.FailSeconds, 3), texttable.Float(st.DetectedSeconds, 3), st.MidBoot, st.NotStarted, st.Done, what)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	return nil
}
