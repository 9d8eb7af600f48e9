package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/fabricsim"
)

func runReportCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"bootctl", "--log-level", "error"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// reportDirNames returns the names in dir; a report must leave nothing but its output behind.
func reportDirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "report.html")
	code, _, stderr := runReportCmd(t, "report", "--topology", "mini", "--flow=false", "--scenario", "../../examples/scenarios/n5-10g.yaml", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) || !bytes.Contains(page, []byte("N5 at 10 Gb/s")) {
		t.Errorf("report.html does not look like the report with the scenario")
	}
	if names := reportDirNames(t, dir); len(names) != 1 {
		t.Errorf("files in the output directory: %v, want report.html alone", names)
	}
	// Formats from the extension and from --format; - writes to stdout.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", "-", "--format", "markdown"}, "# Boot capacity report: mini"},
		{[]string{"--out", "-", "--format", "csv"}, "scenario,batch,nodes,algo,servers_used,"},
		{[]string{"--out", "-", "--format", "json"}, "{\n  \"machine\": {"},
	} {
		code, stdout, stderr := runReportCmd(t, append([]string{"report", "-t", "mini", "--flow=false"}, tc.args...)...)
		if code != 0 || !strings.HasPrefix(stdout, tc.want) {
			t.Errorf("%v: exit %d, output starts %q, want %q (%s)", tc.args, code, reportFirstLine(stdout), tc.want, stderr)
		}
	}
	// The same inputs give the same bytes, run to run (flow model included).
	var pages [2][]byte
	for k := range pages {
		p := filepath.Join(dir, "same.html")
		if code, _, stderr := runReportCmd(t, "report", "-t", "mini", "--out", p); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		pages[k], _ = os.ReadFile(p)
	}
	if len(pages[0]) == 0 || !bytes.Equal(pages[0], pages[1]) {
		t.Errorf("two runs on the same input differ (%d and %d bytes)", len(pages[0]), len(pages[1]))
	}
	md := filepath.Join(dir, "r.md")
	if code, _, stderr := runReportCmd(t, "report", "-t", "mini", "--flow=false", "--out", md); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if data, _ := os.ReadFile(md); !bytes.HasPrefix(data, []byte("# Boot capacity report")) {
		t.Errorf("--out r.md did not write Markdown")
	}
}

func reportFirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestReportBadInput checks that bad input exits 2 with one clear line and leaves no file behind.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.yaml")
	if err := os.WriteFile(unknown, []byte("name: typo\nsegments:\n  N5: 10000\nboot_servers: 300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badSeg := filepath.Join(dir, "badseg.yaml")
	if err := os.WriteFile(badSeg, []byte("name: no such segment\nsegments:\n  N7: 10000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.html")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown scenario field", []string{"--scenario", unknown, "--out", out}, unknown + `:4: unknown field "boot_servers"`},
		{"unknown segment", []string{"--scenario", badSeg, "--out", out}, badSeg + `:3: segments.N7: the machine has no segment "N7"`},
		{"missing scenario", []string{"--scenario", filepath.Join(dir, "none.yaml"), "--out", out}, "no such file"},
		{"unwritable output", []string{"--out", filepath.Join(dir, "no", "such", "dir", "report.html")}, "--out: cannot write"},
		{"output is a directory", []string{"--out", dir}, "is a directory"},
		{"bad format", []string{"--format", "pdf", "--out", out}, `--output: "pdf" is not one of html, markdown, csv, json`},
		{"bad dist batch", []string{"--dist-batch", "7 cabinets", "--out", out}, "--dist-batch"},
		{"bad upgrade factor", []string{"--upgrade-factor", "1", "--out", out}, "--upgrade-factor"},
		{"bad algorithm", []string{"--algo", "fastest", "--out", out}, "unknown algorithm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runReportCmd(t, append([]string{"report", "-t", "mini", "--flow=false"}, tc.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (%s)", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("stderr %q, want one line containing %q", stderr, tc.want)
			}
			for _, n := range reportDirNames(t, dir) {
				if n != "unknown.yaml" && n != "badseg.yaml" {
					t.Errorf("left behind: %s", n)
				}
			}
		})
	}
}

// TestReportHeadlineMatchesSimulate runs both commands on the same batch: the report's headline
// (end to end) must be simulate's batch time to the last bit, with the default boot and with
// --image-size, so the two never drift apart (same fabricsim configuration, same ownership rule).
func TestReportHeadlineMatchesSimulate(t *testing.T) {
	// simulate's default --files is fabricsim's default boot, which the report runs.
	files, err := fabricsim.ParseFiles(simDefaultFiles, fabricsim.TFTP)
	if err != nil || !slices.Equal(files, fabricsim.DefaultFiles(fabricsim.TFTP)) {
		t.Errorf("--files default %q parses to %+v (%v), fabricsim.DefaultFiles is %+v", simDefaultFiles, files, err, fabricsim.DefaultFiles(fabricsim.TFTP))
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default boot, one board", []string{"-t", "mini", "--algo", "bcda", "--batch", "1"}},
		{"default boot, whole machine", []string{"-t", "mini", "--algo", "bcda", "--batch", "all"}},
		{"image size", []string{"-t", "mini", "--algo", "bcda", "--batch", "2", "--image-size", "30MB"}},
		{"sunway board", []string{"--algo", "bcda", "--batch", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runReportCmd(t, append([]string{"simulate", "-o", "json"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("simulate: exit %d: %s", code, stderr)
			}
			var sim struct {
				Runs []struct {
					Result struct {
						BatchSeconds float64 `json:"batch_seconds"`
					} `json:"result"`
				} `json:"runs"`
			}
			if err := json.Unmarshal([]byte(out), &sim); err != nil || len(sim.Runs) != 1 {
				t.Fatalf("simulate output: %v, %d runs", err, len(sim.Runs))
			}
			code, out, stderr = runReportCmd(t, append([]string{"report", "-o", "json", "--out", "-"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("report: exit %d: %s", code, stderr)
			}
			var rep struct {
				Headline struct {
					Model   string `json:"model"`
					Batches []struct {
						EndToEnd float64 `json:"end_to_end_seconds"`
					} `json:"batches"`
				} `json:"headline"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Headline.Batches) != 1 {
				t.Fatalf("report output: %v, %d headline batches", err, len(rep.Headline.Batches))
			}
			if got, want := rep.Headline.Batches[0].EndToEnd, sim.Runs[0].Result.BatchSeconds; got != want || want == 0 {
				t.Errorf("report headline %v s (%s), simulate %v s", got, rep.Headline.Model, want)
			}
		})
	}
}
