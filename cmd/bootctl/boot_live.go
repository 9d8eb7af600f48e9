package main

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bootfabric/bootfabric/bootrun"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/internal/atomicfile"
	"github.com/bootfabric/bootfabric/units"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

// bootLive runs the boot of real machines and prints what it came to.
func bootLive(e *env, c *cli.Context, format string, s *bootSetup, pred *bootrun.Prediction) error {
	journalPath, servers := c.String("journal"), c.StringSlice("server")
	if journalPath == "" || len(servers) == 0 {
		return badInput("boot: give --journal FILE and --server URL (or --dry-run)")
	}
	// Every power-on and retry arms the node's reboot first: a node booted, healthy or stopped
	// mid-boot (nbp, kernel, initrd) starts a new attempt only when armed, and arming takes the
	// operator token. Without it the run would power nodes it cannot follow, so it stops here,
	// before any BMC is asked.
	if len(c.StringSlice("token-file")) == 0 {
		return badInput("boot: --token-file: required: the servers' operator token (http.operator_token_file), with which the run arms each node's reboot before powering it")
	}
	opts, err := powerRunOptions(c)
	if err != nil {
		return err
	}
	targets, err := nodeTargets(c, s.inv, s.nodes)
	if err != nil {
		return err
	}
	tokens, err := bootTokens(c.StringSlice("token-file"), servers)
	if err != nil {
		return err
	}
	ctl, err := s.controller()
	if err != nil {
		return badInput("%w", err)
	}
	live := &bootrun.Live{Controller: ctl, Names: s.names(), Power: targets, PowerOpts: opts,
		Servers:     &bootrun.HTTPServers{URLs: servers, HTTP: &http.Client{Timeout: 10 * time.Second}, Tokens: tokens},
		ControlFile: journalPath + ".control", Poll: c.Duration("poll"), Log: e.log, RebootHealthy: c.Bool("reboot-healthy")}
	if live.Journal, live.Resumed, err = openBootJournal(c, journalPath, live.Names); err != nil {
		return err
	}
	defer live.Journal.Close()
	bar := e.progressBar("boot", len(s.nodes), "nodes")
	live.Progress = bar.Func()
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	recs, err := live.Run(ctx)
	bar.Done()
	if err != nil {
		return fmt.Errorf("boot: %w (the journal %s keeps the run: rerun with --resume)", err, journalPath)
	}
	e.log.Info("boot run finished", zap.Duration("took", time.Since(started)))
	res := bootrun.ResultOf(recs, pred, ctl.PausedBecause())
	res.Links, res.LimitChanges, res.PatienceSeconds = s.limits.Names, ctl.LimitChanges(), ctl.Patience()
	if format == "table" {
		writeBootLimits(e, res)
	}
	return writeBootRun(e, format, res)
}

// bootTokens reads the operator tokens: none, one for every server, or one per server.
func bootTokens(files, servers []string) (map[string]string, error) {
	if len(files) > 1 && len(files) != len(servers) {
		return nil, badInput("--token-file: %d files for %d servers: give one for all, or one per --server", len(files), len(servers))
	}
	out := map[string]string{}
	for i, u := range servers {
		if len(files) == 0 {
			break
		}
		f := files[min(i, len(files)-1)]
		tok, err := bootsrv.ReadOperatorToken(f)
		if err != nil {
			return nil, badInput("--token-file: %v", err)
		}
		out[u] = tok
	}
	return out, nil
}

func openBootJournal(c *cli.Context, path string, names []string) (*bootrun.Journal, []*bootrun.JournalEntry, error) {
	if c.Bool("resume") {
		j, last, err := bootrun.ResumeJournal(path, names)
		return j, last, asBadInput(err)
	}
	j, err := bootrun.CreateJournal(path, names)
	return j, nil, asBadInput(err)
}

// bootControl writes pause, resume or abort where the running boot reads it.
func bootControl(e *env, c *cli.Context, word string) error {
	path := c.String("journal")
	if _, err := bootrun.ReadJournal(path); err != nil {
		return badInput("--journal: %w", err)
	}
	// Written whole and renamed into place: a link planted at JOURNAL.control is replaced, never
	// followed to a file of someone else's.
	if err := atomicfile.WriteFile(path+".control", []byte(word+"\n"), 0o600); err != nil {
		return err
	}
	_, err := fmt.Fprintf(e.stdout, "%s: asked; the run reads it at its next poll\n", word)
	return err
}

// bootStatus shows a run from its journal.
func bootStatus(e *env, c *cli.Context) error {
	format, err := outputFormat(c, "table", "json", "yaml")
	if err != nil {
		return err
	}
	j, err := bootrun.ReadJournal(c.String("journal"))
	if err != nil {
		return badInput("--journal: %w", err)
	}
	return writeBootRun(e, format, bootrun.JournalResult(j))
}

// writeBootLimits prints how each link's limit moved: where it started, the range it moved in,
// its cuts and raises, and where it ended.
func writeBootLimits(e *env, r bootrun.RunResult) {
	t := newTable(e.stdout)
	t.row("LINK", "START", "MIN", "MAX", "END", "CUTS", "RAISES", "BACK-OFFS")
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
		t.row(name, int(start), int(lo), int(hi), int(end), n["cut"], n["raise"], n["back-off"])
	}
	t.flush()
	fmt.Fprintf(e.stdout, "firmware patience learned: %.1f s per file\n\n", r.PatienceSeconds)
}

func writeBootRun(e *env, format string, r bootrun.RunResult) error {
	if format != "table" {
		return writeData(e.stdout, format, r)
	}
	if err := writeBootNodes(e, r); err != nil {
		return err
	}
	skip := "skipped"
	if r.Skipped > 0 {
		skip = "skipped (" + r.SkippedReason + ")"
	}
	_, err := fmt.Fprintf(e.stdout, "\n%d nodes: %d healthy, %d failed, %d %s, %d not done; makespan %.1f s",
		r.Nodes, r.Healthy, r.Failed, r.Skipped, skip, r.Pending, r.MakespanSeconds)
	if err == nil && r.PredictedSeconds > 0 {
		_, err = fmt.Fprintf(e.stdout, " (predicted %.1f s)", r.PredictedSeconds)
	}
	if err == nil && r.Paused != "" {
		_, err = fmt.Fprintf(e.stdout, "\npaused: %s", r.Paused)
	}
	if err == nil {
		_, err = fmt.Fprintln(e.stdout)
	}
	if err == nil && r.Failed > 0 {
		err = fmt.Errorf("boot: %d of %d nodes failed", r.Failed, r.Nodes)
	}
	return err
}

// writeBootNodes prints the run's table of nodes and, from a journal, its run events.
func writeBootNodes(e *env, r bootrun.RunResult) error {
	t := newTable(e.stdout)
	head := []any{"NODE", "PHASE", "ATTEMPTS", "POWER", "DHCP", "FILES", "HEALTHY", "FAILURES"}
	if r.JournalVersion > 0 {
		head = append(head, "ON SERVER")
	}
	t.row(head...)
	for _, x := range r.Records {
		fails := "-"
		if len(x.Failures) > 0 {
			fails = fmt.Sprint(x.Failures)
		}
		row := []any{x.Name, cmp.Or(skipped(x.NodeRecord), x.Phase.String()), x.Attempts, secs(x.PowerAt, x.Attempts > 0), secs(x.LoadAt, x.LoadAt > 0),
			secs(x.BootAt, x.BootAt > 0), secs(x.HealthAt, x.Phase == bootrun.Healthy && !x.Skipped), fails}
		if r.JournalVersion > 0 {
			on := "-"
			if x.Server != nil {
				on = fmt.Sprintf("%s (attempt %d)", x.Server.State, x.Server.Attempt)
			}
			row = append(row, on)
		}
		t.row(row...)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(r.Events) > 0 {
		fmt.Fprintln(e.stdout, "\nrun:")
		t := newTable(e.stdout)
		for _, ev := range r.Events {
			t.row(" ", ev.Time.Format("2006-01-02T15:04:05.000Z07:00"), fmt.Sprintf("%.1f s", ev.At), ev.Run, cmp.Or(ev.Reason, "-"))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}

func skipped(x bootrun.NodeRecord) string {
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

func writeBootPlan(e *env, format string, s *bootSetup, p *bootrun.Prediction, p2p *bootrun.P2PPlan) error {
	out := bootrun.NewPlan(p, s.limits, s.server, bootrun.PlanModel{PostSeconds: s.post, DHCPSeconds: s.flow.DHCPSeconds, HealthSeconds: s.flow.HealthSeconds})
	out.ImageBytes, out.ImageFrom, out.Calibration, out.P2P = s.imageBytes, s.imageFrom, s.cal, p2p
	if format != "table" {
		return writeData(e.stdout, format, out)
	}
	fmt.Fprintf(e.stdout, "%d nodes; floor %.1f Mb/s per node; predicted makespan %.1f s; at most %d in flight\n",
		out.Nodes, out.FloorMbps, out.PredictedSeconds, out.PeakInFlight)
	fmt.Fprintf(e.stdout, "image %s (kernel + initrd) from %s\n", units.FormatBytes(out.ImageBytes), out.ImageFrom)
	fmt.Fprintf(e.stdout, "model: POST %.3f s, DHCP %.3f s, health %.3f s\n", out.Model.PostSeconds, out.Model.DHCPSeconds, out.Model.HealthSeconds)
	writeP2PPlan(e.stdout, out.P2P)
	if cal := out.Calibration; cal != nil {
		writeCalibration(e.stdout, cal)
	}
	if len(out.Caps) == 0 {
		fmt.Fprintln(e.stdout, "no shared link: every node powers on at once")
	} else {
		t := newTable(e.stdout)
		t.row("LINK", "START LIMIT", "NODES BEHIND")
		for _, c := range out.Caps {
			t.row(c.Resource, c.Nodes, c.Behind)
		}
		t.flush()
		fmt.Fprintln(e.stdout, "(a live run moves each limit with what it measures)")
	}
	fmt.Fprintln(e.stdout)
	t := newTable(e.stdout)
	t.row("NODE", "SERVER", "POWER ON", "FILES IN", "HEALTHY")
	for _, r := range out.Schedule {
		t.row(r.Node, r.Server, fmt.Sprintf("%.1f", r.PowerOn), fmt.Sprintf("%.1f", r.Files), fmt.Sprintf("%.1f", r.Healthy))
	}
	return t.flush()
}

// writeCalibration prints what --calibrate fitted: each phase's median and spread.
func writeCalibration(w io.Writer, cal *bootrun.Calibration) {
	fmt.Fprintf(w, "calibrated from %d journal(s), %d node boots (their longest makespan %.1f s):\n", cal.Runs, cal.Nodes, cal.MakespanSeconds)
	t := newTable(w)
	t.row(" ", "PHASE", "SAMPLES", "MEDIAN", "P10", "P90")
	row := func(name, unit string, f bootrun.PhaseFit) {
		if f.Samples == 0 {
			t.row(" ", name, 0, "-", "-", "-")
			return
		}
		t.row(" ", name, f.Samples, fmt.Sprintf("%.3f %s", f.Median, unit), fmt.Sprintf("%.3f %s", f.P10, unit), fmt.Sprintf("%.3f %s", f.P90, unit))
	}
	row("post", "s", cal.Post)
	row("dhcp", "s", cal.DHCP)
	row("transfer", "s", cal.Transfer)
	if cal.TransferMbps != nil {
		row("transfer rate", "Mb/s", *cal.TransferMbps)
	}
	row("health", "s", cal.Health)
	t.flush()
	if cal.LinkEfficiency > 0 {
		fmt.Fprintf(w, "link efficiency %.2f: the share of their capacity the links carried to the nodes in the runs (given-up transfers, gaps), fitted to their makespan\n", cal.LinkEfficiency)
	} else {
		fmt.Fprintln(w, "link efficiency not fitted: the runs booted other nodes than these")
	}
}
