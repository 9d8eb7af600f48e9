package report

import (
	"fmt"
	"github.com/bootfabric/bootfabric/units"
	"io"
	"strconv"
	"strings"
)

const css = `body{font-family:"DejaVu Sans","Liberation Sans",Arial,sans-serif;margin:24px auto;max-width:1100px;color:#222;line-height:1.4;padding:0 16px}
h1{font-size:24px;margin-bottom:4px}h2{font-size:19px;margin-top:32px;border-bottom:1px solid #ccc;padding-bottom:4px}h3{font-size:16px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f2f2f2}td.l,th.l{text-align:left}th[colspan]{text-align:center}tr>td:first-child{white-space:nowrap}td.b{font-weight:bold;background:#fff1d6}
.plot{display:block;margin:12px 0;border:1px solid #ddd}.rec{background:#eef6ee;border-left:4px solid #009E73;padding:8px 14px}
.note{color:#555;font-size:13px}details{margin:8px 0}summary{cursor:pointer;color:#0072B2}`

// WriteHTML writes the report as one self-contained HTML page.
func (rep *Report) WriteHTML(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := rep.Machine
	na := len(rep.Algos)
	p("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Boot capacity report: %s</title>\n<style>\n%s\n</style>\n</head>\n<body>\n", esc(m.Name), css)
	p("<h1>Boot capacity report: %s</h1>\n", esc(m.Name))
	models := "the " + BandwidthModel
	if rep.FlowModel != "" {
		models = "the " + esc(rep.FlowModel) + ", and beside it the " + BandwidthModel
	}
	p("<p class=\"note\">%d nodes, %d boot servers, image %s; algorithms %s; %d batches; %s. Bandwidths in Mb/s (10<sup>6</sup> bit/s) per node.</p>\n",
		m.Nodes, m.Servers, esc(units.FormatBytes(rep.ImageBytes)), esc(strings.Join(rep.Algos, ", ")), len(rep.Batches), models)
	rep.writeHeadline(p)

	p("<h2>Recommendation</h2>\n<div class=\"rec\">\n")
	for _, t := range rep.Recommendation.Text {
		p("<p>%s</p>\n", esc(t))
	}
	p("</div>\n")

	// Machine summary.
	p("<h2>Machine</h2>\n<p>%s</p>\n", esc(m.Description))
	p("<table>\n<tr><th class=\"l\">level</th><th>per parent</th><th>in machine</th><th>nodes each</th><th class=\"l\">uplink segment</th><th>uplink Mb/s</th></tr>\n")
	for _, l := range m.Levels {
		capacity := "-"
		if l.Segment != "" {
			capacity = fmtFixed(l.CapacityMbps, 0)
		}
		p("<tr><td class=\"l\">%s</td><td>%d</td><td>%d</td><td>%d</td><td class=\"l\">%s</td><td>%s</td></tr>\n", esc(l.Name), l.PerParent, l.Total, l.NodesEach, esc(l.Segment), capacity)
	}
	p("</table>\n")
	servers := fmt.Sprintf("%d boot servers", m.Servers)
	if m.PerCascade > 0 {
		servers += fmt.Sprintf(", %d per cascade switch on %d cascade switches", m.PerCascade, m.Cascades)
	}
	if len(m.Failed) > 0 {
		servers += "; failed: " + strings.Join(m.Failed, ", ")
	}
	p("<p>%s; %d switches in all.</p>\n", esc(servers), m.Switches)
	p("<table>\n<tr><th class=\"l\">segment</th><th class=\"l\">link</th><th>capacity Mb/s</th><th>links</th></tr>\n")
	for _, s := range m.Segments {
		p("<tr><td class=\"l\">%s</td><td class=\"l\">%s</td><td>%s</td><td>%d</td></tr>\n", esc(s.Name), esc(s.Link), fmtFixed(s.CapacityMbps, 0), s.Links)
	}
	p("</table>\n")

	// Boot time: end to end first, the bandwidth model beside it.
	p("<h2>Boot time against batch size</h2>\n")
	if rep.FlowModel == "" {
		p("<p class=\"note\">The end-to-end flow model is not part of this report (run without --flow=false to add it); the times below are the %s.</p>\n", BandwidthModel)
	} else {
		p("<p class=\"note\">%s.</p>\n", esc(capitalize(rep.FlowModel)))
		b.WriteString(rep.bootChart(true).SVG())
	}
	p("<p class=\"note\">The %s: the image size over the bottleneck's capacity/sharers; no DHCP, TFTP cap or health report.</p>\n", BandwidthModel)
	b.WriteString(rep.bootChart(false).SVG())
	rep.writeBootTable(p)

	// Per-segment bandwidth.
	p("<h2>Per-segment bandwidth</h2>\n<p class=\"note\">Each segment's smallest capacity/sharers over the channels the batch crosses; rings and highlighted cells mark the bottleneck.</p>\n")
	for j, a := range rep.Algos {
		p("<h3>%s</h3>\n", esc(a))
		b.WriteString(rep.segmentChart(j).SVG())
		p("<table>\n<tr><th class=\"l\">batch</th><th>nodes</th><th>servers used</th>")
		for _, s := range rep.Segments {
			p("<th>%s</th>", esc(s))
		}
		p("<th>batch Mb/s</th><th class=\"l\">bottleneck</th></tr>\n")
		for i, bt := range rep.Batches {
			r := rep.Baseline.row(i, j, na)
			p("<tr><td class=\"l\">%s</td><td>%d</td><td>%d</td>", esc(bt.Label), bt.Nodes, r.ServersUsed)
			for _, s := range rep.Segments {
				v, bott := segMin(r, s)
				cls := ""
				if bott {
					cls = " class=\"b\""
				}
				p("<td%s>%s</td>", cls, fmtFixed(v, 2))
			}
			p("<td>%s</td><td class=\"l\">%s</td></tr>\n", fmtFixed(r.BandwidthMbps, 2), esc(strings.Join(r.Bottlenecks, ", ")))
		}
		p("</table>\n")
	}

	// Completion times.
	if d := rep.Distribution; d != nil {
		p("<h2>Node completion times</h2>\n")
		if d.Model == "analytic" {
			p("<p class=\"note\">Without the flow-level model each node is shown at its own path's analytic bandwidth (capacity/sharers, minimum over its route); the batch time is the slowest node's.</p>\n")
		}
		if d.symmetric() {
			p("<p class=\"note\">Every node of %s finishes at the same time under every mapping: the batch is symmetric. A scattered batch (--batch FIRST-LAST or @FILE, with --dist-batch) or a failed server shows a spread.</p>\n", esc(d.Batch))
		}
		b.WriteString(rep.distChart().SVG())
		p("<table>\n<tr><th class=\"l\">algorithm</th>")
		for _, q := range d.Ranks {
			p("<th>p%s s</th>", fmtSig(q))
		}
		p("<th>mean s</th></tr>\n")
		for _, a := range d.Algos {
			p("<tr><td class=\"l\">%s</td>", esc(a.Algo))
			for _, v := range a.Percentiles {
				p("<td>%s</td>", fmtFixed(v, 2))
			}
			p("<td>%s</td></tr>\n", fmtFixed(a.Mean, 2))
		}
		p("</table>\n")
		p("<details><summary>CDF points plotted</summary>\n<table>\n<tr><th class=\"l\">algorithm</th><th>s</th><th>nodes done %%</th></tr>\n")
		for _, a := range d.Algos {
			for k := range a.CDFSeconds {
				p("<tr><td class=\"l\">%s</td><td>%s</td><td>%s</td></tr>\n", esc(a.Algo), fmtFixed(a.CDFSeconds[k], 3), fmtFixed(100*a.CDFFraction[k], 2))
			}
		}
		p("</table>\n</details>\n")
	}

	// Scenarios.
	if len(rep.Scenarios) > 0 {
		j := rep.recommendedIndex()
		p("<h2>What-if scenarios</h2>\n<ul>\n")
		for _, cs := range rep.Scenarios {
			desc := ""
			if cs.Description != "" {
				desc = ": " + esc(cs.Description)
			}
			p("<li><b>%s</b>%s (%s)</li>\n", esc(cs.Name), desc, esc(strings.Join(cs.Changes, "; ")))
		}
		p("</ul>\n")
		b.WriteString(rep.scenarioChart().SVG())
		p("<p class=\"note\">Boot time (s) end to end where the flow model ran, and in the %s with its bottleneck, per batch under %s.</p>\n<table>\n<tr><th class=\"l\" rowspan=\"2\">batch</th><th rowspan=\"2\">nodes</th>", BandwidthModel, esc(rep.Algos[j]))
		cols := 2
		if rep.FlowModel != "" {
			cols++
		}
		for _, cs := range rep.cases() {
			p("<th colspan=\"%d\">%s</th>", cols, esc(cs.Name))
		}
		p("</tr>\n<tr>")
		for range rep.cases() {
			if rep.FlowModel != "" {
				p("<th>end to end s</th>")
			}
			p("<th>bandwidth model s</th><th class=\"l\">bottleneck</th>")
		}
		p("</tr>\n")
		for i, bt := range rep.Batches {
			p("<tr><td class=\"l\">%s</td><td>%d</td>", esc(bt.Label), bt.Nodes)
			for _, cs := range rep.cases() {
				r := cs.row(i, j, na)
				if rep.FlowModel != "" {
					p("<td>%s</td>", flowCell(r))
				}
				p("<td>%s</td>", fmtFixed(r.BootSeconds, 2))
				p("<td class=\"l\">%s</td>", esc(strings.Join(r.Bottlenecks, ", ")))
			}
			p("</tr>\n")
		}
		p("</table>\n")
		p("<details><summary>Every algorithm in every scenario</summary>\n<table>\n<tr><th class=\"l\">scenario</th><th class=\"l\">batch</th>")
		for _, a := range rep.Algos {
			if rep.FlowModel != "" {
				p("<th>%s end-to-end s</th>", esc(a))
			}
			p("<th>%s bandwidth-model s</th>", esc(a))
		}
		p("</tr>\n")
		for _, cs := range rep.cases() {
			for i, bt := range rep.Batches {
				p("<tr><td class=\"l\">%s</td><td class=\"l\">%s</td>", esc(cs.Name), esc(bt.Label))
				for k := range rep.Algos {
					r := cs.row(i, k, na)
					if rep.FlowModel != "" {
						p("<td>%s</td>", flowCell(r))
					}
					p("<td>%s</td>", fmtFixed(r.BootSeconds, 2))
				}
				p("</tr>\n")
			}
		}
		p("</table>\n</details>\n")
	}

	// Upgrades.
	rc := rep.Recommendation
	p("<h2>Segment upgrades</h2>\n<p class=\"note\">Computed by re-running the %s with %s and each segment's capacity multiplied by %s (and, where segments bind together, those segments at once).</p>\n",
		BandwidthModel, esc(rc.Mapping), fmtSig(rc.Factor))
	p("<table>\n<tr><th class=\"l\">batch</th><th>nodes</th><th class=\"l\">bottleneck</th><th>boot s</th><th class=\"l\">best upgrade</th><th>after s</th><th>gain</th></tr>\n")
	for _, bu := range rc.PerBatch {
		up, after, gain := "none helps", "-", "-"
		if bu.Best != nil {
			up, after, gain = describeUpgrade(*bu.Best), fmtFixed(bu.Best.AfterSeconds, 2), fmtSig(bu.Best.Gain())+"x"
		}
		p("<tr><td class=\"l\">%s</td><td>%d</td><td class=\"l\">%s</td><td>%s</td><td class=\"l\">%s</td><td>%s</td><td>%s</td></tr>\n",
			esc(bu.Batch), bu.Nodes, esc(strings.Join(bu.Bottlenecks, ", ")), fmtFixed(bu.BootSeconds, 2), esc(up), after, gain)
	}
	p("</table>\n<h3>Each segment alone, %s</h3>\n<table>\n<tr><th class=\"l\">upgrade</th><th>before s</th><th>after s</th><th>gain</th><th class=\"l\">bottleneck after</th></tr>\n", esc(rc.Batch))
	for _, u := range rc.Singles {
		p("<tr><td class=\"l\">%s</td><td>%s</td><td>%s</td><td>%sx</td><td class=\"l\">%s</td></tr>\n", esc(describeUpgrade(u)),
			fmtFixed(u.BeforeSeconds, 2), fmtFixed(u.AfterSeconds, 2), fmtSig(u.Gain()), esc(strings.Join(u.Bottlenecks, ", ")))
	}
	p("</table>\n</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHeadline writes the answer first: every batch's boot time under the recommended mapping,
// end to end (the figure bootctl simulate prints) beside the per-segment bandwidth model. The
// end-to-end cells carry the batch and the exact seconds as data attributes for tools and tests.
func (rep *Report) writeHeadline(p func(string, ...any)) {
	h := rep.Headline
	flow := h.Model == EndToEndModel
	p("<h2>Boot time</h2>\n<p class=\"headline\">%s</p>\n", esc(h.Text))
	p("<table class=\"headline\">\n<tr><th class=\"l\">batch</th><th>nodes</th>")
	if flow {
		p("<th>boot s, end to end</th><th class=\"l\">limited by</th>")
	}
	p("<th>s, %s</th><th class=\"l\">bottleneck</th></tr>\n", BandwidthModel)
	for _, hb := range h.Batches {
		p("<tr><td class=\"l\">%s</td><td>%d</td>", esc(hb.Batch), hb.Nodes)
		if flow {
			p("<td class=\"e2e\" data-batch=\"%s\" data-seconds=\"%s\"><b>%s</b></td><td class=\"l\">%s</td>", esc(hb.Batch),
				strconv.FormatFloat(hb.EndToEndSeconds, 'g', -1, 64), fmtFixed(hb.EndToEndSeconds, 3), esc(hb.EndToEndLimit))
		}
		p("<td>%s</td><td class=\"l\">%s</td></tr>\n", fmtFixed(hb.BandwidthModelSeconds, 2), esc(strings.Join(hb.Bottlenecks, ", ")))
	}
	p("</table>\n<p class=\"note\">Under %s, the recommended mapping. ", esc(h.Mapping))
	if flow {
		p("End to end is what <code>bootctl simulate</code> prints as the batch time for the same batch: DHCP, the NBP and the image over TFTP (each flow capped at blksize/RTT), the health report. ")
	}
	p("The %s is the image size over the bottleneck's capacity/sharers: it finds the segment to upgrade, not the time to wait.</p>\n", BandwidthModel)
}

// writeBootTable writes every algorithm's boot time per batch in both models, and its speed-up over
// scda in the bandwidth model (scda's own column, always 1, left out).
func (rep *Report) writeBootTable(p func(string, ...any)) {
	na := len(rep.Algos)
	// Two header rows: the algorithm over its columns, then what each column is.
	p("<table>\n<tr><th class=\"l\" rowspan=\"2\">batch</th><th rowspan=\"2\">nodes</th>")
	for _, a := range rep.Algos {
		cols := 1
		if rep.FlowModel != "" {
			cols++
		}
		if a != "scda" {
			cols++
		}
		p("<th colspan=\"%d\">%s</th>", cols, esc(a))
	}
	p("</tr>\n<tr>")
	for _, a := range rep.Algos {
		if rep.FlowModel != "" {
			p("<th>end to end s</th>")
		}
		p("<th>bandwidth model s</th>")
		if a != "scda" {
			p("<th>x scda</th>")
		}
	}
	p("</tr>\n")
	for i, bt := range rep.Batches {
		p("<tr><td class=\"l\">%s</td><td>%d</td>", esc(bt.Label), bt.Nodes)
		for j, a := range rep.Algos {
			r := rep.Baseline.row(i, j, na)
			if rep.FlowModel != "" {
				p("<td>%s</td>", fmtFixed(r.FlowSeconds, 2))
			}
			p("<td>%s</td>", fmtFixed(r.BootSeconds, 2))
			if a != "scda" {
				p("<td>%s</td>", ratio(r.SpeedupVsSCDA))
			}
		}
		p("</tr>\n")
	}
	p("</table>\n")
}
