package bootrun

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/bootfabric/bootfabric/units"
)

// WriteLimits writes how each link's limit moved: where it started, the range it moved in, its
// cuts and raises, and where it ended; then the firmware patience the run learned.
func (r *RunResult) WriteLimits(w io.Writer) {
	t := texttable.New(w)
	t.Row("LINK", "START", "MIN", "MAX", "END", "CUTS", "RAISES", "BACK-OFFS")
	for k, name := range r.Links {
		var start, lo, hi, end float64
		n := map[string]int{}
		for _, ch := range r.LimitChanges {
			if ch.Resource != k {
				continue
			}
			if ch.Why == "start" {
				start, lo, hi = ch.Limit, ch.Limit, ch.Limit
			}
			lo, hi, end = min(lo, ch.Limit), max(hi, ch.Limit), ch.Limit
			n[ch.Why]++
		}
		t.Row(name, int(start), int(lo), int(hi), int(end), n["cut"], n["raise"], n["back-off"])
	}
	t.Flush()
	fmt.Fprintf(w, "firmware patience learned: %.1f s per file\n\n", r.PatienceSeconds)
}

// WriteTable writes the run's table of nodes, from a journal its run events, and the line that
// sums it up.
func (r *RunResult) WriteTable(w io.Writer) error {
	if err := r.writeNodes(w); err != nil {
		return err
	}
	skip := "skipped"
	if r.Skipped > 0 {
		skip = "skipped (" + r.SkippedReason + ")"
	}
	_, err := fmt.Fprintf(w, "\n%d nodes: %d healthy, %d failed, %d %s, %d not done; makespan %.1f s",
		r.Nodes, r.Healthy, r.Failed, r.Skipped, skip, r.Pending, r.MakespanSeconds)
	if err == nil && r.PredictedSeconds > 0 {
		_, err = fmt.Fprintf(w, " (predicted %.1f s)", r.PredictedSeconds)
	}
	if err == nil && r.Paused != "" {
		_, err = fmt.Fprintf(w, "\npaused: %s", r.Paused)
	}
	if err == nil {
		_, err = fmt.Fprintln(w)
	}
	return err
}

// writeNodes writes the run's table of nodes and, from a journal, its run events.
func (r *RunResult) writeNodes(w io.Writer) error {
	t := texttable.New(w)
	head := []any{"NODE", "PHASE", "ATTEMPTS", "POWER", "DHCP", "FILES", "HEALTHY", "FAILURES"}
	if r.JournalVersion > 0 {
		head = append(head, "ON SERVER")
	}
	t.Row(head...)
	for _, x := range r.Records {
		fails := "-"
		if len(x.Failures) > 0 {
			fails = fmt.Sprint(x.Failures)
		}
		row := []any{x.Name, cmp.Or(skipped(x.NodeRecord), x.Phase.String()), x.Attempts, secs(x.PowerAt, x.Attempts > 0), secs(x.LoadAt, x.LoadAt > 0),
			secs(x.BootAt, x.BootAt > 0), secs(x.HealthAt, x.Phase == Healthy && !x.Skipped), fails}
		if r.JournalVersion > 0 {
			on := "-"
			if x.Server != nil {
				on = fmt.Sprintf("%s (attempt %d)", x.Server.State, x.Server.Attempt)
			}
			row = append(row, on)
		}
		t.Row(row...)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if len(r.Events) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nrun:")
	t = texttable.New(w)
	for _, ev := range r.Events {
		t.Row(" ", ev.Time.Format("2006-01-02T15:04:05.000Z07:00"), fmt.Sprintf("%.1f s", ev.At), ev.Run, cmp.Or(ev.Reason, "-"))
	}
	return t.Flush()
}

func skipped(x NodeRecord) string {
	if x.Skipped {
		return "skipped"
	}
	return ""
}

func secs(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

// WriteTable writes the plan: its figures, the model, peer delivery and calibration when there
// are some, the links' starting limits and the schedule.
func (p *Plan) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%d nodes; floor %.1f Mb/s per node; predicted makespan %.1f s; at most %d in flight\n",
		p.Nodes, p.FloorMbps, p.PredictedSeconds, p.PeakInFlight)
	fmt.Fprintf(w, "image %s (kernel + initrd) from %s\n", units.FormatBytes(p.ImageBytes), p.ImageFrom)
	fmt.Fprintf(w, "model: POST %.3f s, DHCP %.3f s, health %.3f s\n", p.Model.PostSeconds, p.Model.DHCPSeconds, p.Model.HealthSeconds)
	if p.Model.NotCalibrated != "" {
		fmt.Fprintf(w, "  not calibrated: %s\n", p.Model.NotCalibrated)
	}
	if len(p.Model.Assumed) > 0 {
		fmt.Fprintf(w, "  assumed, not measured: %s (give them, or a past run's journal: --calibrate, or its --journal with --dry-run)\n",
			strings.Join(p.Model.Assumed, ", "))
	}
	p.P2P.WriteLine(w)
	if cal := p.Calibration; cal != nil {
		cal.WriteTable(w)
	}
	if len(p.Caps) == 0 {
		fmt.Fprintln(w, "no shared link: every node powers on at once")
	} else {
		t := texttable.New(w)
		t.Row("LINK", "START LIMIT", "NODES BEHIND")
		for _, c := range p.Caps {
			t.Row(c.Resource, c.Nodes, c.Behind)
		}
		t.Flush()
		fmt.Fprintln(w, "(a live run moves each limit with what it measures)")
	}
	fmt.Fprintln(w)
	t := texttable.New(w)
	t.Row("NODE", "SERVER", "POWER ON", "FILES IN", "HEALTHY")
	for _, r := range p.Schedule {
		t.Row(r.Node, r.Server, fmt.Sprintf("%.1f", r.PowerOn), fmt.Sprintf("%.1f", r.Files), fmt.Sprintf("%.1f", r.Healthy))
	}
	return t.Flush()
}

// WriteLine writes the peer delivery line of a plan's table; nothing for a nil p.
func (p *P2PPlan) WriteLine(w io.Writer) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "delivery p2p, the whole batch at once without admission: %.1f s by the servers, %.1f s with %s by peers (root stage %.1f s, bound by %v; the servers send %s)\n",
		p.ServerSeconds, p.P2PSeconds, p.RootFile, p.Root.Seconds, p.Root.Bottlenecks, p.Root.Seeding())
}

// WriteTable writes what a calibration fitted: each phase's median and spread, and the links'
// efficiency.
func (cal *Calibration) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "calibrated from %d journal(s), %d node boots (their longest makespan %.1f s):\n", cal.Runs, cal.Nodes, cal.MakespanSeconds)
	t := texttable.New(w)
	t.Row(" ", "PHASE", "SAMPLES", "MEDIAN", "P10", "P90")
	row := func(name, unit string, f PhaseFit) {
		if f.Samples == 0 {
			t.Row(" ", name, 0, "-", "-", "-")
			return
		}
		t.Row(" ", name, f.Samples, fmt.Sprintf("%.3f %s", f.Median, unit), fmt.Sprintf("%.3f %s", f.P10, unit), fmt.Sprintf("%.3f %s", f.P90, unit))
	}
	row("post", "s", cal.Post)
	row("dhcp", "s", cal.DHCP)
	row("transfer", "s", cal.Transfer)
	if cal.TransferMbps != nil {
		row("transfer rate", "Mb/s", *cal.TransferMbps)
	}
	row("health", "s", cal.Health)
	t.Flush()
	if cal.LinkEfficiency > 0 {
		fmt.Fprintf(w, "link efficiency %.2f: the share of their capacity the links carried to the nodes in the runs (given-up transfers, gaps), fitted to their makespan\n", cal.LinkEfficiency)
	} else {
		fmt.Fprintln(w, "link efficiency not fitted: the runs booted other nodes than these")
	}
}
