package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/report"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

func reportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "write a capacity-planning report (self-contained HTML with plots, or Markdown, CSV, JSON)",
		Description: "Boot time and per-segment bandwidth against batch size per mapping algorithm, node completion\n" +
			"times, what-if scenarios (--scenario FILE, repeatable) beside the baseline, and recommendations\n" +
			"computed by re-running the model. With no flags: the paper's machine, all algorithms, the\n" +
			"paper's ladder, written to report.html.",
		Flags: append(withoutFlags(machineFlags(), "failed-during-boot"),
			&cli.StringSliceFlag{Name: "scenario", Aliases: []string{"s"}, Usage: "what-if scenario YAML file (repeatable); see examples/scenarios/"},
			&cli.StringFlag{Name: "out", Usage: "output file, written atomically, its extension that of the format; - for stdout (default: report.html for html, stdout for markdown, csv and json)"},
			withChoices(cli.StringFlag{Name: "output", Aliases: []string{"o", "format"}, Usage: "report format: html, markdown, csv, json (default: from the --out extension, else html)"},
				"html", "markdown", "csv", "json"),
			&cli.StringFlag{Name: "dist-batch", Usage: "batch whose node completion times are plotted: its label (\"1 cabinet\") or 1-based position in the ladder (default: the batch whose flow-model completion times spread most, else the largest)"},
			&cli.BoolFlag{Name: "flow", Value: true, Usage: "run the end-to-end flow model (simulate's default boot: DHCP, TFTP caps, health report) as the headline, beside the per-segment bandwidth model (--flow=false: the bandwidth model only)"},
			&cli.Float64Flag{Name: "upgrade-factor", Value: 10, Usage: "capacity multiplier of a segment upgrade in the recommendations"},
			deliveryFlag(),
		),
		Action: func(c *cli.Context) error { return runReport(e, c) },
	}
}

// runReport checks every input and the output path, builds the report and writes it.
func runReport(e *env, c *cli.Context) error {
	format, outPath, err := reportFormat(c.String("output"), c.String("out"))
	if err != nil {
		return err
	}
	cfg, err := reportConfig(c)
	if err != nil {
		return err
	}
	// Check the output path before the work, so that a typo costs nothing.
	var out *report.AtomicFile
	if outPath != "-" {
		if out, err = createReportFile(outPath); err != nil {
			return err
		}
		defer out.Abort() // after a successful Commit this finds nothing to remove
	}
	bar := e.progressBar("report", 0, "rows")
	cfg.Progress = bar.Func()
	rep, err := report.Build(cfg)
	bar.Done()
	if err != nil {
		if _, ok := errors.AsType[*topology.Error](err); ok {
			return asBadInput(err) // a scenario that does not fit the machine
		}
		return err
	}
	if out == nil {
		return rep.Write(e.stdout, format)
	}
	if err := rep.Write(out, format); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	e.log.Info("report written", zap.String("path", outPath), zap.String("format", format),
		zap.Int("batches", len(cfg.Batches)), zap.Int("scenarios", len(cfg.Scenarios)))
	return nil
}

// reportConfig is the report the flags ask for: the machine and plan, the scenarios, the batch
// whose completion times are plotted, and the models.
func reportConfig(c *cli.Context) (report.Config, error) {
	if f := c.Float64("upgrade-factor"); !(f > 1) || f > 1e6 {
		return report.Config{}, badInput("--upgrade-factor: must be above 1, got %v", f)
	}
	delivery, err := readDelivery(c)
	if err != nil {
		return report.Config{}, err
	}
	in, err := readMachineInput(c)
	if err != nil {
		return report.Config{}, err
	}
	if err := in.checkP2P(delivery); err != nil {
		return report.Config{}, err
	}
	var scenarios []*report.Scenario
	for _, path := range c.StringSlice("scenario") {
		s, err := report.LoadScenario(path)
		if err != nil {
			return report.Config{}, asBadInput(err)
		}
		scenarios = append(scenarios, s)
	}
	dist, err := distBatch(c.String("dist-batch"), in.Batches)
	if err != nil {
		return report.Config{}, err
	}
	cfg := report.Config{Machine: in.Machine, Algos: in.Algos, Batches: in.Batches, ImageBytes: in.ImageBytes,
		Absent: in.Absent, Scenarios: scenarios, DistBatch: dist, UpgradeFactor: c.Float64("upgrade-factor"), Delivery: delivery}
	cfg.P2PServerBytes, _ = in.p2pSplit()
	if c.Bool("flow") {
		cfg.Flow, cfg.FlowName = report.FabricsimFlow(c.Context), report.FlowModelName
	}
	return cfg, nil
}

// createReportFile opens the temporary file that becomes the report at path.
func createReportFile(path string) (*report.AtomicFile, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, badInput("--out: %s is a directory", path)
	}
	out, err := report.CreateAtomic(path)
	if err != nil {
		return nil, badInput("--out: %w", err)
	}
	return out, nil
}

// reportFormat checks --output (alias --format) against --out: the format is --output, or the one
// the --out extension names, or html; --out defaults to report.html for html and to stdout for the
// others. An --out extension that is no report format's, or another format's than --output, is
// refused (r.pdf would hold HTML).
func reportFormat(format, out string) (string, string, error) {
	if format != "" && !slices.Contains(report.Formats(), format) {
		return "", "", badInput("--output: %q is not one of %s", format, strings.Join(report.Formats(), ", "))
	}
	if out == "" {
		// Results go to stdout, as every command's -o does; only the HTML page, made to be opened
		// in a browser, gets a file by default.
		if format == "" || format == "html" {
			return "html", "report.html", nil
		}
		return format, "-", nil
	}
	ext := strings.ToLower(filepath.Ext(out))
	if out == "-" || ext == "" {
		if format == "" {
			format = "html"
		}
		return format, out, nil
	}
	implied := ""
	var known []string
	for _, f := range report.Formats() {
		if slices.Contains(report.Extensions(f), ext) {
			implied = f
		}
		known = append(known, report.Extensions(f)[0])
	}
	switch {
	case implied == "":
		return "", "", badInput("--out %s: %s is not a report format's extension (%s); the formats are %s",
			out, ext, strings.Join(known, ", "), strings.Join(report.Formats(), ", "))
	case format != "" && format != implied:
		return "", "", badInput("--out %s: the extension says %s but --output is %s", out, implied, format)
	}
	return implied, out, nil
}

// distBatch resolves --dist-batch to an index in the ladder, -1 for the default.
func distBatch(s string, batches []topology.Batch) (int, error) {
	if s == "" {
		return -1, nil
	}
	i, err := topology.FindBatch(batches, s)
	if err != nil {
		return 0, badInput("--dist-batch: %w", err)
	}
	return i, nil
}
