package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/units"
)

// markdown accumulates a Markdown page; the report is rendered to memory first so that w gets one
// write of the whole page.
type markdown struct{ strings.Builder }

func (md *markdown) p(format string, args ...any) { fmt.Fprintf(md, format, args...) }

// table writes a pipe table: the header, its rule, the rows.
func (md *markdown) table(head []string, rows [][]string) {
	md.p("| %s |\n", strings.Join(head, " | "))
	md.p("|%s\n", strings.Repeat("---|", len(head)))
	for _, r := range rows {
		md.p("| %s |\n", strings.Join(r, " | "))
	}
}

// WriteMarkdown writes the report's text and tables as Markdown (the plots are in the HTML form).
func (rep *Report) WriteMarkdown(w io.Writer) error {
	var md markdown
	m := rep.Machine
	md.p("# Boot capacity report: %s\n\n", m.Name)
	md.p("%d nodes, %d boot servers, image %s; algorithms %s; bandwidths in Mb/s per node.\n\n", m.Nodes, m.Servers, units.FormatBytes(rep.ImageBytes), strings.Join(rep.Algos, ", "))
	rep.mdHeadline(&md)
	md.p("\n## Recommendation\n\n")
	for _, t := range rep.Recommendation.Text {
		md.p("- %s\n", t)
	}
	md.p("\n## Machine\n\n%s\n\n", m.Description)
	var segs [][]string
	for _, s := range m.Segments {
		segs = append(segs, []string{s.Name, s.Link, fmtFixed(s.CapacityMbps, 0), strconv.Itoa(s.Links)})
	}
	md.table([]string{"segment", "link", "capacity Mb/s", "links"}, segs)
	rep.mdBootTimes(&md)
	rep.mdP2P(&md)
	rep.mdSegments(&md)
	rep.mdDistribution(&md)
	rep.mdScenarios(&md)
	rep.mdUpgrades(&md)
	_, err := io.WriteString(w, md.String())
	return err
}

// mdHeadline is every batch's boot time under the recommended mapping, end to end first.
func (rep *Report) mdHeadline(md *markdown) {
	h := rep.Headline
	flow := h.Model == EndToEndModel
	md.p("## Boot time\n\n%s\n\n", h.Text)
	head := []string{"batch", "nodes"}
	if flow {
		head = append(head, "boot s, end to end", "limited by")
	}
	head = append(head, "s, "+BandwidthModel, "bottleneck")
	var rows [][]string
	for _, hb := range h.Batches {
		cells := []string{hb.Batch, strconv.Itoa(hb.Nodes)}
		if flow {
			cells = append(cells, fmtFixed(hb.EndToEndSeconds, 3), hb.EndToEndLimit)
		}
		rows = append(rows, append(cells, fmtFixed(hb.BandwidthModelSeconds, 2), strings.Join(hb.Bottlenecks, ", ")))
	}
	md.table(head, rows)
	md.p("\nUnder %s, the recommended mapping.\n", h.Mapping)
}

// mdBootTimes is every algorithm's boot time per batch, in both models.
func (rep *Report) mdBootTimes(md *markdown) {
	md.p("\n## Boot time (s) against batch size\n\n")
	head := []string{"batch", "nodes"}
	for _, a := range rep.Algos {
		if rep.FlowModel != "" {
			head = append(head, a+" end to end")
		}
		head = append(head, a+" bandwidth model")
	}
	var rows [][]string
	for i, bt := range rep.Batches {
		cells := []string{bt.Label, strconv.Itoa(bt.Nodes)}
		for j := range rep.Algos {
			r := rep.Baseline.row(i, j, len(rep.Algos))
			if rep.FlowModel != "" {
				cells = append(cells, fmtFixed(r.FlowSeconds, 2))
			}
			cells = append(cells, fmtFixed(r.BootSeconds, 2))
		}
		rows = append(rows, cells)
	}
	md.table(head, rows)
}

// mdSegments is one table per algorithm of each segment's bandwidth per batch, bottlenecks in bold.
func (rep *Report) mdSegments(md *markdown) {
	md.p("\n## Per-segment bandwidth (Mb/s; bottleneck in bold)\n")
	head := append([]string{"batch", "nodes"}, rep.Segments...)
	head = append(head, "batch Mb/s", "bottleneck")
	for j, a := range rep.Algos {
		md.p("\n### %s\n\n", a)
		var rows [][]string
		for i, bt := range rep.Batches {
			r := rep.Baseline.row(i, j, len(rep.Algos))
			cells := []string{bt.Label, strconv.Itoa(bt.Nodes)}
			for _, s := range rep.Segments {
				v, bott := segMin(r, s)
				c := fmtFixed(v, 2)
				if bott {
					c = "**" + c + "**"
				}
				cells = append(cells, c)
			}
			rows = append(rows, append(cells, fmtFixed(r.BandwidthMbps, 2), strings.Join(r.Bottlenecks, ", ")))
		}
		md.table(head, rows)
	}
}

// mdDistribution is the percentiles of node completion times, when the report has them.
func (rep *Report) mdDistribution(md *markdown) {
	d := rep.Distribution
	if d == nil {
		return
	}
	md.p("\n## Node completion times, %s (%s model)\n\n", d.Batch, d.Model)
	head := []string{"algorithm"}
	for _, q := range d.Ranks {
		head = append(head, "p"+fmtSig(q)+" s")
	}
	head = append(head, "mean s")
	var rows [][]string
	for _, a := range d.Algos {
		cells := []string{a.Algo}
		for _, v := range a.Percentiles {
			cells = append(cells, fmtFixed(v, 2))
		}
		rows = append(rows, append(cells, fmtFixed(a.Mean, 2)))
	}
	md.table(head, rows)
}

// mdScenarios is the scenarios beside the baseline under the recommended mapping.
func (rep *Report) mdScenarios(md *markdown) {
	if len(rep.Scenarios) == 0 {
		return
	}
	j := rep.recommendedIndex()
	md.p("\n## What-if scenarios (boot s under %s)\n\n", rep.Algos[j])
	for _, cs := range rep.Scenarios {
		md.p("- **%s**: %s\n", cs.Name, strings.Join(cs.Changes, "; "))
	}
	md.p("\n")
	head := []string{"batch", "nodes"}
	for _, cs := range rep.cases() {
		head = append(head, cs.Name)
	}
	var rows [][]string
	for i, bt := range rep.Batches {
		cells := []string{bt.Label, strconv.Itoa(bt.Nodes)}
		for _, cs := range rep.cases() {
			cells = append(cells, mdScenarioCell(cs.row(i, j, len(rep.Algos))))
		}
		rows = append(rows, cells)
	}
	md.table(head, rows)
}

// mdScenarioCell is one case's boot time in a batch: end to end where the flow model ran, the
// bandwidth model and its bottleneck.
func mdScenarioCell(r *Row) string {
	cell := fmtFixed(r.BootSeconds, 2) + " bandwidth model"
	if r.FlowSeconds != 0 {
		cell = fmtFixed(r.FlowSeconds, 2) + " end to end / " + cell
	}
	return cell + " (" + strings.Join(r.Bottlenecks, ",") + ")"
}

// mdUpgrades is the best first upgrade of every batch.
func (rep *Report) mdUpgrades(md *markdown) {
	rc := rep.Recommendation
	md.p("\n## Best first upgrade per batch (%s, capacity x%s)\n\n", rc.Mapping, fmtSig(rc.Factor))
	flow := rep.FlowModel != ""
	head := []string{"batch", "bottleneck", "boot s", "best upgrade", "after s"}
	if flow {
		head = append(head, "end to end s", "after, end to end")
	}
	var rows [][]string
	for _, bu := range rc.PerBatch {
		up, after := "none helps", "-"
		if bu.Best != nil {
			up, after = describeUpgrade(*bu.Best), fmtFixed(bu.Best.AfterSeconds, 2)
		}
		row := []string{bu.Batch, strings.Join(bu.Bottlenecks, ", "), fmtFixed(bu.BootSeconds, 2), up, after}
		if flow {
			b, a, _ := endToEndCells(bu.Best)
			row = append(row, b, a)
		}
		rows = append(rows, row)
	}
	md.table(head, rows)
}
