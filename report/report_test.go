package report

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// exampleScenarios are the scenarios committed under examples/scenarios.
var exampleScenarios = []string{"more-servers.yaml", "n5-10g.yaml", "n4-40g.yaml"}

// paperConfig is the default report of the paper's machine: every algorithm, the paper's ladder,
// a 50 MB image, with the example scenarios and the flow model when asked.
func paperConfig(t testing.TB, flow, scenarios bool) Config {
	t.Helper()
	return machineConfig(t, "sunway", flow, scenarios)
}

func machineConfig(t testing.TB, preset string, flow, scenarios bool) Config {
	t.Helper()
	m, ok := topology.Preset(preset)
	if !ok {
		t.Fatalf("no preset %s", preset)
	}
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Machine: m, Batches: g.Hierarchy().DefaultBatches(), ImageBytes: 50e6, DistBatch: -1}
	for _, name := range mapping.Names() {
		a, err := mapping.ParseAlgo(name, g.Hierarchy())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Algos = append(cfg.Algos, a)
	}
	if flow {
		cfg.Flow, cfg.FlowName = FabricsimFlow(context.Background()), FlowModelName
	}
	if scenarios {
		for _, f := range exampleScenarios {
			s, err := LoadScenario(filepath.Join("..", "examples", "scenarios", f))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Scenarios = append(cfg.Scenarios, s)
		}
	}
	return cfg
}

func buildReport(t testing.TB, cfg Config) *Report {
	t.Helper()
	rep, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// findRow returns the baseline row of a batch label and algorithm.
func findRow(t *testing.T, c *Case, batch, algo string) *Row {
	t.Helper()
	for i := range c.Rows {
		if c.Rows[i].Batch == batch && c.Rows[i].Algo == algo {
			return &c.Rows[i]
		}
	}
	t.Fatalf("no row %s/%s", batch, algo)
	return nil
}

// TestPaperShape checks the acceptance numbers: bcda 20x scda at one supernode (32 boards), equal
// at the whole machine, in the bandwidth model (and equal at the whole machine end to end); the
// recommendation names N4 and N5 for large batches.
func TestPaperShape(t *testing.T) {
	rep := buildReport(t, paperConfig(t, true, true))
	for _, tc := range []struct {
		batch string
		want  float64
	}{{"32 boards", 20}, {"40 cabinets", 1}} {
		b := findRow(t, rep.Baseline, tc.batch, "bcda")
		if got := b.SpeedupVsSCDA; math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: analytic bcda/scda = %v, want %v", tc.batch, got, tc.want)
		}
	}
	if s, b := findRow(t, rep.Baseline, "40 cabinets", "scda"), findRow(t, rep.Baseline, "40 cabinets", "bcda"); math.Abs(s.FlowSeconds/b.FlowSeconds-1) > 1e-6 {
		t.Errorf("40 cabinets: end-to-end scda/bcda time = %v, want 1", s.FlowSeconds/b.FlowSeconds)
	}
	if r := findRow(t, rep.Baseline, "40 cabinets", "bcda"); math.Abs(r.BootSeconds-102.4) > 1e-9 {
		t.Errorf("whole machine bcda boot = %v s, want 102.4", r.BootSeconds)
	}
	checkPaperRecommendation(t, rep.Recommendation)
	// The scenarios: twice the servers on twice the cascades halves the whole-machine boot; N4 or
	// N5 alone does not change it (the other binds).
	want := map[string]float64{"320 boot servers": 51.2, "N5 at 10 Gb/s": 102.4, "N4 at 40 Gb/s": 102.4}
	for _, c := range rep.Scenarios {
		r := findRow(t, c, "40 cabinets", "bcda")
		if math.Abs(r.BootSeconds-want[c.Name]) > 1e-9 {
			t.Errorf("scenario %s: whole machine %v s, want %v", c.Name, r.BootSeconds, want[c.Name])
		}
	}
}

// checkPaperRecommendation checks the paper machine's recommendation: bcda, and N4 with N5
// upgraded together first, 102.4 s -> 10.24 s at the whole machine.
func checkPaperRecommendation(t *testing.T, rec Recommendation) {
	t.Helper()
	if rec.Mapping != "bcda" {
		t.Errorf("recommended mapping %q, want bcda (ties with balanced go to the static mapping)", rec.Mapping)
	}
	if len(rec.Steps) == 0 || !slices.Equal(rec.Steps[0].Segments, []string{"N4", "N5"}) {
		t.Fatalf("first upgrade step = %+v, want N4 and N5", rec.Steps)
	}
	if got := rec.Steps[0]; math.Abs(got.BeforeSeconds-102.4) > 1e-9 || math.Abs(got.AfterSeconds-10.24) > 1e-9 {
		t.Errorf("N4+N5 upgrade: %v s -> %v s, want 102.4 -> 10.24", got.BeforeSeconds, got.AfterSeconds)
	}
	for _, bu := range rec.PerBatch {
		if bu.Nodes < 2560 {
			continue
		}
		if bu.Best == nil || !slices.ContainsFunc(bu.Best.Segments, func(s string) bool { return s == "N4" || s == "N5" }) {
			t.Errorf("%s: best upgrade %+v, want one naming N4 or N5", bu.Batch, bu.Best)
		}
	}
	text := strings.Join(rec.Text, "\n")
	for _, want := range []string{"Use bcda", "up to 20x scda", "N4 at 200 Gb/s and N5 at 10 Gb/s cuts the boot of 40 cabinets from ", "from 102.4 s to 10.24 s", "alone buys nothing"} {
		if !strings.Contains(text, want) {
			t.Errorf("recommendation lacks %q:\n%s", want, text)
		}
	}
}

// TestDeterministic builds the full report twice and compares every format byte for byte.
func TestDeterministic(t *testing.T) {
	render := func() map[string][]byte {
		rep := buildReport(t, paperConfig(t, true, true))
		out := map[string][]byte{}
		for _, f := range Formats() {
			var b bytes.Buffer
			if err := rep.Write(&b, f); err != nil {
				t.Fatal(err)
			}
			out[f] = b.Bytes()
		}
		return out
	}
	a, b := render(), render()
	for _, f := range Formats() {
		if !bytes.Equal(a[f], b[f]) {
			t.Errorf("%s output differs between two runs on the same input", f)
		}
		if len(a[f]) == 0 {
			t.Errorf("%s output is empty", f)
		}
	}
}

// TestHTMLSelfContained checks that the page loads nothing from anywhere.
func TestHTMLSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := buildReport(t, machineConfig(t, "mini", true, false)).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", "<link", "@import", "@font-face", "url(http", "src=", "href=\"http"} {
		if strings.Contains(page, bad) {
			t.Errorf("HTML contains %q", bad)
		}
	}
	for _, want := range []string{"<style>", "<svg class=\"plot\"", "Recommendation", "Machine", "Node completion times"} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// TestTablesHoldPlottedNumbers checks that every plotted boot time is also printed in a table.
func TestTablesHoldPlottedNumbers(t *testing.T) {
	rep := buildReport(t, machineConfig(t, "mini", true, false))
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Charts() {
		if strings.HasPrefix(c.Title, "Node completion") {
			continue // the CDF points are in the HTML's details table; percentiles in Markdown
		}
		for _, s := range c.Series {
			for _, y := range s.Y {
				if !math.IsNaN(y) && !strings.Contains(md.String(), fmtFixed(y, 2)) {
					t.Errorf("%s / %s: %v is plotted but not in the tables", c.Title, s.Name, fmtFixed(y, 2))
				}
			}
		}
	}
}

func TestNodeAnalytic(t *testing.T) {
	cfg := machineConfig(t, "mini", false, false)
	g, err := cfg.Machine.Build()
	if err != nil {
		t.Fatal(err)
	}
	a, err := mapping.Assign(g, cfg.Algos[0], nil, nil) // scda: supernode 0 on server 0
	if err != nil {
		t.Fatal(err)
	}
	// Nodes 0-3 (board 0 of supernode 0, server 0) and node 16 (supernode 1, server 1).
	times, err := NodeAnalytic(g, a, []int{0, 1, 2, 3, 16}, 1e6)
	if err != nil {
		t.Fatal(err)
	}
	// Board 0's four nodes share the 100 Mb/s board uplink and server 0's 100 Mb/s NIC: 25 Mb/s,
	// 0.32 s for 1 MB. Node 16 alone: 100 Mb/s, 0.08 s.
	want := []float64{0.32, 0.32, 0.32, 0.32, 0.08}
	for i := range want {
		if math.Abs(times[i]-want[i]) > 1e-9 {
			t.Errorf("node time %d = %v, want %v", i, times[i], want[i])
		}
	}
}

func TestBuildErrors(t *testing.T) {
	good := machineConfig(t, "mini", false, false)
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no machine", func(c *Config) { c.Machine = nil }, "no machine"},
		{"no algos", func(c *Config) { c.Algos = nil }, "at least one algorithm"},
		{"no image", func(c *Config) { c.ImageBytes = 0 }, "image size"},
		{"bad factor", func(c *Config) { c.UpgradeFactor = 0.5 }, "upgrade factor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.edit(&cfg)
			if _, err := Build(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestFmtSig(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{102.4, "102.4"}, {3.90625, "3.906"}, {20, "20"}, {78.125, "78.13"}, {10.24, "10.24"}, {0.4, "0.4"}, {40960, "40960"}} {
		if got := fmtSig(tc.v); got != tc.want {
			t.Errorf("fmtSig(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestWriteFileAtomic(t *testing.T) {
	rep := buildReport(t, machineConfig(t, "mini", false, false))
	dir := t.TempDir()
	path := filepath.Join(dir, "r.html")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteFile(path, "html"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(data, []byte("<!DOCTYPE html>")) {
		t.Fatalf("report not written over the old file: %v", err)
	}
	// A failing render leaves the old file and no temporary file.
	if err := rep.WriteFile(path, "pdf"); err == nil {
		t.Fatal("unknown format accepted")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files after a failed write: %v", entries)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if err := rep.WriteFile(filepath.Join(dir, "missing", "r.html"), "html"); err == nil || !strings.Contains(err.Error(), "cannot write") {
		t.Errorf("unwritable path: %v", err)
	}
}

func TestChooseMapping(t *testing.T) {
	algos := []mapping.Algo{{Name: "scda", Level: 1}, {Name: "bcda", Level: 2}, {Name: "balanced", Level: -1, Balanced: true}}
	cfg := Config{Algos: algos, Batches: make([]topology.Batch, 2)}
	mk := func(times ...float64) *Case {
		c := &Case{}
		for i, s := range times {
			c.Rows = append(c.Rows, Row{Algo: algos[i%3].Name})
			c.Rows[i].BootSeconds = s
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		times []float64 // batch-major: scda, bcda, balanced per batch
		want  string
	}{
		{"balanced ties bcda: the static mapping", []float64{3.2, 3.2, 3.2, 102.4, 5.12, 5.12}, "bcda"},
		{"balanced strictly better once", []float64{3.2, 3.2, 3.2, 102.4, 5.12, 4}, "balanced"},
		{"more wins beat a smaller total", []float64{1, 2, 2, 1, 2, 2}, "scda"},
		{"static mappings tie: the coarser blocks", []float64{3.2, 3.2, 3.2, 102.4, 102.4, 102.4}, "scda"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := algos[chooseMapping(cfg, mk(tc.times...))].Name; got != tc.want {
				t.Errorf("chose %s, want %s", got, tc.want)
			}
		})
	}
}

func TestWidestSpread(t *testing.T) {
	c := &Case{Rows: []Row{
		{FlowSeconds: 10, FlowSpreadSeconds: 0}, {FlowSeconds: 10, FlowSpreadSeconds: 1},
		{FlowSeconds: 100, FlowSpreadSeconds: 50}, {FlowSeconds: 100, FlowSpreadSeconds: 0},
		{FlowSeconds: 200, FlowSpreadSeconds: 0}, {FlowSeconds: 200, FlowSpreadSeconds: 0},
	}}
	if got := widestSpread(c, 3, 2); got != 1 {
		t.Errorf("widest spread at batch %d, want 1 (50 of 100 s)", got)
	}
	flat := &Case{Rows: make([]Row, 4)}
	if got := widestSpread(flat, 2, 2); got != -1 {
		t.Errorf("no spread: got batch %d, want -1 (the largest is chosen later)", got)
	}
}
