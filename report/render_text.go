package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/bootfabric/bootfabric/units"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Formats lists the output formats, the default first.
func Formats() []string { return []string{"html", "markdown", "csv", "json"} }

// Write writes the report in format (see Formats).
func (rep *Report) Write(w io.Writer, format string) error {
	switch format {
	case "html":
		return rep.WriteHTML(w)
	case "markdown":
		return rep.WriteMarkdown(w)
	case "csv":
		return rep.WriteCSV(w)
	case "json":
		return rep.WriteJSON(w)
	}
	return fmt.Errorf("unknown report format %q (want %s)", format, strings.Join(Formats(), ", "))
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteCSV writes one record per scenario, batch and algorithm with every number of the model.
func (rep *Report) WriteCSV(w io.Writer) error {
	head := []string{"scenario", "batch", "nodes", "algo", "servers_used"}
	for _, s := range rep.Segments {
		head = append(head, s+"_mbps")
	}
	head = append(head, "bandwidth_mbps", "bottlenecks", "boot_seconds", "flow_seconds", "speedup_vs_scda")
	cw := csv.NewWriter(w)
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, cs := range rep.cases() {
		for _, r := range cs.Rows {
			rec := []string{cs.Name, r.Batch, strconv.Itoa(r.Nodes), r.Algo, strconv.Itoa(r.ServersUsed)}
			for _, s := range rep.Segments {
				v, _ := segMin(&r, s)
				rec = append(rec, csvNum(v))
			}
			flow := "" // empty where the flow model did not run
			if r.FlowSeconds != 0 {
				flow = fmtFixed(r.FlowSeconds, 4)
			}
			rec = append(rec, fmtFixed(r.BandwidthMbps, 4), strings.Join(r.Bottlenecks, " "), fmtFixed(r.BootSeconds, 4), flow, csvNum(r.SpeedupVsSCDA))
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvNum(v float64) string {
	if v != v || v == 0 { // NaN: segment not crossed; 0: no ratio
		return ""
	}
	return fmtFixed(v, 4)
}

// WriteMarkdown writes the report's text and tables as Markdown (the plots are in the HTML form).
func (rep *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	row := func(cells ...string) { p("| %s |\n", strings.Join(cells, " | ")) }
	rule := func(n int) { p("|%s\n", strings.Repeat("---|", n)) }
	m := rep.Machine
	na := len(rep.Algos)
	p("# Boot capacity report: %s\n\n", m.Name)
	p("%d nodes, %d boot servers, image %s; algorithms %s; bandwidths in Mb/s per node.\n\n", m.Nodes, m.Servers, units.FormatBytes(rep.ImageBytes), strings.Join(rep.Algos, ", "))
	h := rep.Headline
	p("## Boot time\n\n%s\n\n", h.Text)
	head := []string{"batch", "nodes"}
	if h.Model == EndToEndModel {
		head = append(head, "boot s, end to end", "limited by")
	}
	head = append(head, "s, "+BandwidthModel, "bottleneck")
	row(head...)
	rule(len(head))
	for _, hb := range h.Batches {
		cells := []string{hb.Batch, strconv.Itoa(hb.Nodes)}
		if h.Model == EndToEndModel {
			cells = append(cells, fmtFixed(hb.EndToEndSeconds, 3), hb.EndToEndLimit)
		}
		row(append(cells, fmtFixed(hb.BandwidthModelSeconds, 2), strings.Join(hb.Bottlenecks, ", "))...)
	}
	p("\nUnder %s, the recommended mapping.\n\n## Recommendation\n\n", h.Mapping)
	for _, t := range rep.Recommendation.Text {
		p("- %s\n", t)
	}
	p("\n## Machine\n\n%s\n\n", m.Description)
	row("segment", "link", "capacity Mb/s", "links")
	rule(4)
	for _, s := range m.Segments {
		row(s.Name, s.Link, fmtFixed(s.CapacityMbps, 0), strconv.Itoa(s.Links))
	}
	p("\n## Boot time (s) against batch size\n\n")
	head = []string{"batch", "nodes"}
	for _, a := range rep.Algos {
		if rep.FlowModel != "" {
			head = append(head, a+" end to end")
		}
		head = append(head, a+" bandwidth model")
	}
	row(head...)
	rule(len(head))
	for i, bt := range rep.Batches {
		cells := []string{bt.Label, strconv.Itoa(bt.Nodes)}
		for j := range rep.Algos {
			r := rep.Baseline.row(i, j, na)
			if rep.FlowModel != "" {
				cells = append(cells, fmtFixed(r.FlowSeconds, 2))
			}
			cells = append(cells, fmtFixed(r.BootSeconds, 2))
		}
		row(cells...)
	}
	p("\n## Per-segment bandwidth (Mb/s; bottleneck in bold)\n")
	for j, a := range rep.Algos {
		p("\n### %s\n\n", a)
		head := append([]string{"batch", "nodes"}, rep.Segments...)
		head = append(head, "batch Mb/s", "bottleneck")
		row(head...)
		rule(len(head))
		for i, bt := range rep.Batches {
			r := rep.Baseline.row(i, j, na)
			cells := []string{bt.Label, strconv.Itoa(bt.Nodes)}
			for _, s := range rep.Segments {
				v, bott := segMin(r, s)
				c := fmtFixed(v, 2)
				if bott {
					c = "**" + c + "**"
				}
				cells = append(cells, c)
			}
			row(append(cells, fmtFixed(r.BandwidthMbps, 2), strings.Join(r.Bottlenecks, ", "))...)
		}
	}
	if d := rep.Distribution; d != nil {
		p("\n## Node completion times, %s (%s model)\n\n", d.Batch, d.Model)
		head := []string{"algorithm"}
		for _, q := range d.Ranks {
			head = append(head, "p"+fmtSig(q)+" s")
		}
		head = append(head, "mean s")
		row(head...)
		rule(len(head))
		for _, a := range d.Algos {
			cells := []string{a.Algo}
			for _, v := range a.Percentiles {
				cells = append(cells, fmtFixed(v, 2))
			}
			row(append(cells, fmtFixed(a.Mean, 2))...)
		}
	}
	if len(rep.Scenarios) > 0 {
		j := rep.recommendedIndex()
		p("\n## What-if scenarios (boot s under %s)\n\n", rep.Algos[j])
		for _, cs := range rep.Scenarios {
			p("- **%s**: %s\n", cs.Name, strings.Join(cs.Changes, "; "))
		}
		p("\n")
		head := []string{"batch", "nodes"}
		for _, cs := range rep.cases() {
			head = append(head, cs.Name)
		}
		row(head...)
		rule(len(head))
		for i, bt := range rep.Batches {
			cells := []string{bt.Label, strconv.Itoa(bt.Nodes)}
			for _, cs := range rep.cases() {
				r := cs.row(i, j, na)
				cell := fmtFixed(r.BootSeconds, 2) + " bandwidth model"
				if r.FlowSeconds != 0 {
					cell = fmtFixed(r.FlowSeconds, 2) + " end to end / " + cell
				}
				cells = append(cells, cell+" ("+strings.Join(r.Bottlenecks, ",")+")")
			}
			row(cells...)
		}
	}
	rc := rep.Recommendation
	p("\n## Best first upgrade per batch (%s, capacity x%s)\n\n", rc.Mapping, fmtSig(rc.Factor))
	row("batch", "bottleneck", "boot s", "best upgrade", "after s")
	rule(5)
	for _, bu := range rc.PerBatch {
		up, after := "none helps", "-"
		if bu.Best != nil {
			up, after = describeUpgrade(*bu.Best), fmtFixed(bu.Best.AfterSeconds, 2)
		}
		row(bu.Batch, strings.Join(bu.Bottlenecks, ", "), fmtFixed(bu.BootSeconds, 2), up, after)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFile writes the report to path in format without ever leaving a partial file: it writes a
// temporary file in the same directory and renames it over path.
func (rep *Report) WriteFile(path, format string) error {
	f, err := CreateAtomic(path)
	if err != nil {
		return err
	}
	if err := rep.Write(f, format); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// AtomicFile is a temporary file that becomes path on Commit, or disappears on Abort.
type AtomicFile struct {
	*os.File
	path string
}

// CreateAtomic creates a temporary file beside path; it fails at once when the directory is not
// writable, so a caller can check the output path before the work.
func CreateAtomic(path string) (*AtomicFile, error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, err)
	}
	return &AtomicFile{File: f, path: path}, nil
}

// Commit closes the temporary file and renames it to the final path (mode 0644).
func (a *AtomicFile) Commit() error {
	if err := a.File.Chmod(0o644); err != nil {
		a.Abort()
		return fmt.Errorf("cannot write %s: %w", a.path, err)
	}
	if err := a.File.Close(); err != nil {
		os.Remove(a.File.Name())
		return fmt.Errorf("cannot write %s: %w", a.path, err)
	}
	if err := os.Rename(a.File.Name(), a.path); err != nil {
		os.Remove(a.File.Name())
		return fmt.Errorf("cannot write %s: %w", a.path, err)
	}
	return nil
}

// Abort closes and removes the temporary file.
func (a *AtomicFile) Abort() {
	a.File.Close()
	os.Remove(a.File.Name())
}
