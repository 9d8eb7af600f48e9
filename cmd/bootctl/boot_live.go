package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/bootfabric/bootfabric/bootrun"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/internal/atomicfile"
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
	live := &bootrun.Live{Controller: ctl, Names: nodeNames(s.nodes), Power: targets, PowerOpts: opts,
		Servers:     &bootrun.HTTPServers{URLs: servers, HTTP: &http.Client{Timeout: 10 * time.Second}, Tokens: tokens},
		ControlFile: journalPath + ".control", Poll: c.Duration("poll"), Log: e.log, RebootHealthy: c.Bool("reboot-healthy"),
		Prediction: pred, RunName: filepath.Base(journalPath)}
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
		res.WriteLimits(e.stdout)
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
	format := c.String("output")
	j, err := bootrun.ReadJournal(c.String("journal"))
	if err != nil {
		return badInput("--journal: %w", err)
	}
	return writeBootRun(e, format, bootrun.JournalResult(j))
}

func writeBootRun(e *env, format string, r bootrun.RunResult) error {
	err := writeResult(e.stdout, format, r, r.WriteTable)
	if format == "table" && err == nil && r.Failed > 0 {
		err = fmt.Errorf("boot: %d of %d nodes failed", r.Failed, r.Nodes)
	}
	return err
}

func writeBootPlan(e *env, format string, s *bootSetup, p *bootrun.Prediction, p2p *bootrun.P2PPlan) error {
	out := bootrun.NewPlan(p, s.limits, s.server, bootrun.PlanModel{PostSeconds: s.post, DHCPSeconds: s.flow.DHCPSeconds,
		HealthSeconds: s.flow.HealthSeconds, Assumed: s.assumed, NotCalibrated: s.notCal})
	out.ImageBytes, out.ImageFrom, out.Calibration, out.P2P = s.imageBytes, s.imageFrom, s.cal, p2p
	return writeResult(e.stdout, format, out, out.WriteTable)
}
