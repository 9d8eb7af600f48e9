package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootrun"
	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/bootfabric/bootfabric/units"
)

// simWrite prints the runs in format.
func simWrite(w io.Writer, format string, job *simJob, runs []simRun) error {
	g := job.in.Graph
	switch format {
	case "json", "yaml":
		for i := range runs {
			if runs[i].Health != nil {
				runs[i].Health = runs[i].Health.forJSON(job.opt.healthNodes)
			}
		}
		return writeData(w, format, simJSON{Topology: g.Name, Nodes: len(g.Nodes()), Servers: len(g.Servers()), Calibration: job.cal, Runs: runs})
	case "csv":
		return simWriteCSV(w, runs)
	}
	if err := simWriteTable(w, g, runs); err != nil {
		return err
	}
	if err := simWriteFailures(w, runs); err != nil {
		return err
	}
	if job.cal != nil {
		fmt.Fprintf(w, "\nDHCP %.3f s and health %.3f s per node, ", job.cfg.DHCPSeconds, job.cfg.HealthSeconds)
		writeCalibration(w, job.cal)
	}
	return simWriteHealth(w, runs)
}

type simJSON struct {
	Topology string `json:"topology"`
	Nodes    int    `json:"nodes"`
	Servers  int    `json:"servers"`
	// Calibration is what --calibrate fitted the DHCP and health times from.
	Calibration *bootrun.Calibration `json:"calibration,omitempty"`
	Runs        []simRun             `json:"runs"`
}

func simWriteCSV(w io.Writer, runs []simRun) error {
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
			row := []string{r.Batch, r.Algo, n.Name, n.Server, simFloat(n.ArrivalSeconds), simFloat(n.DoneSeconds),
				n.Bottleneck, simFloat(n.BoundSeconds)}
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
	return writeCSV(w, rows)
}

func simFloat(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }

// simMainBottleneck names the limit that bounded most nodes.
func simMainBottleneck(r *fabricsim.FlowResult) string {
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

// simWriteTable prints one summary row per run, or a single run in full.
func simWriteTable(w io.Writer, g *topology.Graph, runs []simRun) error {
	if len(runs) != 1 {
		return simWriteSummary(w, g, runs)
	}
	r := runs[0]
	res := r.Result
	var files []string
	for _, f := range res.Files {
		files = append(files, fmt.Sprintf("%s %s %s", f.Name, units.FormatBytes(f.Bytes), f.Protocol))
	}
	fmt.Fprintf(w, "%s: batch %s (%d nodes, %d servers used), %s; files: %s\n", g.Name, r.Batch, res.Nodes, res.ServersUsed, r.Algo,
		strings.Join(files, ", "))
	fmt.Fprintf(w, "batch time %s s\n\n", fmtFloat(res.BatchSeconds, 3))
	t := newTable(w)
	t.row("seconds", "min", "p50", "p90", "p99", "max", "mean")
	for _, d := range []struct {
		name string
		d    fabricsim.Distribution
	}{{"completion", res.Completion}, {"boot duration", res.Duration}} {
		t.row(d.name, fmtFloat(d.d.Min, 3), fmtFloat(d.d.P50, 3), fmtFloat(d.d.P90, 3), fmtFloat(d.d.P99, 3), fmtFloat(d.d.Max, 3), fmtFloat(d.d.Mean, 3))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := simWriteSegments(w, res); err != nil {
		return err
	}
	if len(res.TopLinks) > 0 {
		fmt.Fprintln(w, "\nbusiest links (server to node direction):")
		t = newTable(w)
		t.row("from", "to", "segment", "capacity Mb/s", "traffic")
		for _, l := range res.TopLinks {
			t.row(l.From, l.To, l.Segment, fmtFloat(l.CapacityMbps, 0), units.FormatBytes(l.Bytes))
		}
		return t.flush()
	}
	return nil
}

// simWriteSummary prints one row per run: its completion distribution and main bottleneck (and
// with --delivery multicast, the delivery and the speedup over unicast).
func simWriteSummary(w io.Writer, g *topology.Graph, runs []simRun) error {
	fmt.Fprintf(w, "%s: %d nodes, %d boot servers; completion times in seconds\n", g.Name, len(g.Nodes()), len(g.Servers()))
	t := newTable(w)
	if runs[0].Delivery != "" {
		t.row("batch", "nodes", "algo", "delivery", "min", "p50", "p90", "p99", "max", "speedup", "bottleneck (nodes)")
		for _, r := range runs {
			d := r.Result.Completion
			del, speed, bound := r.Delivery, "-", simMainBottleneck(r.Result)
			if r.Mcast != "" {
				del += " (" + r.Mcast + ")"
			}
			if r.Speedup > 0 {
				speed = "x" + fmtFloat(r.Speedup, 2)
			}
			if r.P2P != nil {
				bound = fmt.Sprintf("%s; root %s, %s", bound, strings.Join(r.P2P.Root.Bottlenecks, ","), r.P2P.Root.Seeding())
			}
			t.row(r.Batch, r.Result.Nodes, r.Algo, del, fmtFloat(d.Min, 3), fmtFloat(d.P50, 3), fmtFloat(d.P90, 3), fmtFloat(d.P99, 3),
				fmtFloat(d.Max, 3), speed, bound)
		}
		return t.flush()
	}
	t.row("batch", "nodes", "algo", "min", "p50", "p90", "p99", "max", "bottleneck (nodes)")
	for _, r := range runs {
		d := r.Result.Completion
		t.row(r.Batch, r.Result.Nodes, r.Algo, fmtFloat(d.Min, 3), fmtFloat(d.P50, 3), fmtFloat(d.P90, 3), fmtFloat(d.P99, 3),
			fmtFloat(d.Max, 3), simMainBottleneck(r.Result))
	}
	return t.flush()
}

// simWriteSegments prints each segment's load and the nodes it bounded, then the caps that
// bounded nodes.
func simWriteSegments(w io.Writer, res *fabricsim.FlowResult) error {
	t := newTable(w)
	t.row("segment", "channels", "capacity Mb/s", "traffic", "peak Mb/s", "peak util", "bottleneck of")
	for _, s := range res.Segments {
		t.row(s.Name, s.Channels, fmtFloat(s.CapacityMbps, 0), units.FormatBytes(s.Bytes), fmtFloat(s.PeakMbps, 1),
			fmtFloat(100*s.PeakUtilisation, 1)+"%", s.BottleneckNodes)
	}
	for _, b := range res.Bottlenecks {
		if !slices.ContainsFunc(res.Segments, func(s fabricsim.SegmentUsage) bool { return s.Name == b.Limit }) {
			t.row(b.Limit+" cap", "-", "-", "-", "-", "-", b.Nodes)
		}
	}
	return t.flush()
}

// simWriteHealth prints the health aggregation of each batch once.
func simWriteHealth(w io.Writer, runs []simRun) error {
	var last *simHealth
	for _, r := range runs {
		h := r.Health
		if h == nil || h == last {
			continue
		}
		last = h
		res := h.HealthResult
		yes := map[bool]string{true: "yes", false: "no"}
		fmt.Fprintf(w, "\nhealth aggregation of batch %s (%s, %d nodes): %s (paper formula %s)\n", r.Batch, res.Algorithm, res.Nodes,
			simDur(res.CompletionSeconds), simDur(res.ReferenceSeconds))
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
				fmt.Fprintf(w, "    node %d died at %s, detected at %s, %s\n", f.Node, simDur(f.AtSeconds), simDur(f.DetectedSeconds), what)
			}
		}
		fmt.Fprintf(w, "  messages %d (%s moved), tasks %d, recovery messages %d\n", res.Messages, units.FormatBytes(res.Bytes), res.Tasks,
			res.RecoveryMessages)
	}
	return nil
}

// simDur prints seconds as a rounded duration (health aggregations take micro- to milliseconds).
func simDur(s float64) string {
	return time.Duration(s * 1e9).Round(time.Microsecond / 10).String()
}

// simWriteFailures prints each run's takeover: per failed server its time, detection, the nodes
// taken over and their new owners, and the batch time beside the run without failures.
func simWriteFailures(w io.Writer, runs []simRun) error {
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
			fmtFloat(f.DetectSeconds, 3), fmtFloat(f.BatchSeconds, 3), fmtFloat(f.BaselineBatchSeconds, 3), fmtFloat(f.ExtraSeconds, 3),
			f.TakenOver, f.Restarted)
		if !f.Effect {
			fmt.Fprintln(w, "no effect: no failure met an unfinished node; the run is the one without failures")
		}
		t := newTable(w)
		t.row("server", "fails s", "detected s", "mid-boot", "not started", "done", "new owners (nodes)")
		for _, st := range f.Servers {
			var owners []string
			for i, o := range st.NewOwners {
				if i == simTopOwners {
					owners = append(owners, fmt.Sprintf("+%d more", len(st.NewOwners)-i))
					break
				}
				owners = append(owners, fmt.Sprintf("%s (%d)", o.Server, o.Nodes))
			}
			what := strings.Join(owners, ", ")
			if st.Note != "" {
				what = st.Note
			}
			t.row(st.Server, fmtFloat(st.FailSeconds, 3), fmtFloat(st.DetectedSeconds, 3), st.MidBoot, st.NotStarted, st.Done, what)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}
