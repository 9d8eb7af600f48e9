package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/units"
)

// The page's markup lives in report.html.tmpl; this file only arranges the Report into the tables
// and sections the template lays out. html/template escapes every value, so no writer here escapes
// anything by hand; the charts come in as template.HTML because the SVG writer escapes its own text.

//go:embed report.html.tmpl
var pageTemplateText string

// pageTemplate is parsed once; a parsed template is safe for concurrent use and never changes.
var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"join": func(list []string, sep ...string) string {
		if len(sep) == 0 {
			return strings.Join(list, ", ")
		}
		return strings.Join(list, sep[0])
	},
	"fixed":          func(prec int, v float64) string { return fmtFixed(v, prec) },
	"exact":          func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) },
	"sig":            fmtSig,
	"capitalize":     capitalize,
	"bandwidthModel": func() string { return BandwidthModel },
}).Parse(pageTemplateText))

// htmlPage is what the template shows: the Report itself for the plain fields, and every table
// and chart arranged beforehand.
type htmlPage struct {
	Rep          *Report
	Image        string
	HeadlineFlow bool

	Levels, MachineSegments htmlTable
	Servers                 string

	FlowSVG, BandwidthSVG template.HTML
	BootTable             htmlTable
	// P2P is the peer delivery table (nil without it) and P2PText what it is of.
	P2P     *htmlTable
	P2PText string

	Segments  []htmlSegment
	Dist      *htmlDist
	Scenarios *htmlScenarios

	PerBatch, Singles htmlTable
}

// htmlTable is a table: header rows, then body rows.
type htmlTable struct {
	Head [][]th
	Body [][]td
}

// th is a header cell; a zero span is left out.
type th struct {
	Text             string
	Class            string
	Rowspan, Colspan int
}

// td is a body cell: Class "l" aligns left, "b" marks a bottleneck.
type td struct{ Text, Class string }

// left and num are the two kinds of body cell: a name, aligned left, and a number.
func left(s string) td { return td{Text: s, Class: "l"} }
func num(s string) td  { return td{Text: s} }
func count(n int) td   { return td{Text: strconv.Itoa(n)} }

// lth is a left-aligned header cell.
func lth(s string) th { return th{Text: s, Class: "l"} }

// headRow is a header row of plain (right-aligned) cells after the given first cells.
func headRow(first []th, names ...string) []th {
	for _, n := range names {
		first = append(first, th{Text: n})
	}
	return first
}

type htmlSegment struct {
	Algo  string
	SVG   template.HTML
	Table htmlTable
}

type htmlDist struct {
	Analytic, Symmetric bool
	Batch               string
	SVG                 template.HTML
	Percentiles, CDF    htmlTable
}

type htmlScenarios struct {
	Cases      []*Case
	SVG        template.HTML
	Mapping    string
	Table, All htmlTable
}

// WriteHTML writes the report as one self-contained HTML page.
func (rep *Report) WriteHTML(w io.Writer) error {
	page := &htmlPage{
		Rep:             rep,
		Image:           units.FormatBytes(rep.ImageBytes),
		HeadlineFlow:    rep.Headline.Model == EndToEndModel,
		Levels:          rep.levelTable(),
		MachineSegments: rep.machineSegmentTable(),
		Servers:         rep.serversText(),
		BandwidthSVG:    svg(rep.bootChart(false)),
		BootTable:       rep.bootTable(),
		P2P:             rep.p2pTable(),
		P2PText:         p2pText,
		Segments:        rep.segmentSections(),
		Dist:            rep.distSection(),
		Scenarios:       rep.scenarioSection(),
		PerBatch:        rep.upgradeTable(),
		Singles:         rep.singleUpgradeTable(),
	}
	if rep.FlowModel != "" {
		page.FlowSVG = svg(rep.bootChart(true))
	}
	// Render to memory first, so that a template error leaves w untouched.
	var b strings.Builder
	if err := pageTemplate.Execute(&b, page); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// svg is a chart as markup the template inserts as it is: the SVG writer escapes its own text.
func svg(c *Chart) template.HTML {
	return template.HTML(c.SVG()) // WriteSVG escapes every string it writes
}

func (rep *Report) levelTable() htmlTable {
	t := htmlTable{Head: [][]th{{lth("level"), {Text: "per parent"}, {Text: "in machine"}, {Text: "nodes each"}, lth("uplink segment"), {Text: "uplink Mb/s"}}}}
	for _, l := range rep.Machine.Levels {
		capacity := "-"
		if l.Segment != "" {
			capacity = fmtFixed(l.CapacityMbps, 0)
		}
		t.Body = append(t.Body, []td{left(l.Name), count(l.PerParent), count(l.Total), count(l.NodesEach), left(l.Segment), num(capacity)})
	}
	return t
}

func (rep *Report) machineSegmentTable() htmlTable {
	t := htmlTable{Head: [][]th{{lth("segment"), lth("link"), {Text: "capacity Mb/s"}, {Text: "links"}}}}
	for _, s := range rep.Machine.Segments {
		t.Body = append(t.Body, []td{left(s.Name), left(s.Link), num(fmtFixed(s.CapacityMbps, 0)), count(s.Links)})
	}
	return t
}

// serversText says how many boot servers there are, where, and which failed.
func (rep *Report) serversText() string {
	m := rep.Machine
	servers := fmt.Sprintf("%d boot servers", m.Servers)
	if m.PerCascade > 0 {
		servers += fmt.Sprintf(", %d per cascade switch on %d cascade switches", m.PerCascade, m.Cascades)
	}
	if len(m.Failed) > 0 {
		servers += "; failed: " + strings.Join(m.Failed, ", ")
	}
	return servers
}

// bootTable is every algorithm's boot time per batch in both models, each followed by its speed-up
// over scda computed from the times beside it (scda's own columns, always 1, left out). Two header
// rows: the algorithm over its columns, then what each column is.
func (rep *Report) bootTable() htmlTable {
	flow := rep.FlowModel != ""
	top := []th{{Text: "batch", Class: "l", Rowspan: 2}, {Text: "nodes", Rowspan: 2}}
	var sub []th
	for _, a := range rep.Algos {
		cols := 1
		if flow {
			cols++
			sub = append(sub, th{Text: "end to end s"})
			if a != "scda" {
				cols++
				sub = append(sub, th{Text: "x scda"})
			}
		}
		sub = append(sub, th{Text: "bandwidth model s"})
		if a != "scda" {
			cols++
			sub = append(sub, th{Text: "x scda"})
		}
		top = append(top, th{Text: a, Colspan: cols})
	}
	t := htmlTable{Head: [][]th{top, sub}}
	for i, bt := range rep.Batches {
		row := []td{left(bt.Label), count(bt.Nodes)}
		for j, a := range rep.Algos {
			r := rep.Baseline.row(i, j, len(rep.Algos))
			if flow {
				row = append(row, num(fmtFixed(r.FlowSeconds, 2)))
				if a != "scda" {
					row = append(row, num(ratio(r.FlowSpeedupVsSCDA)))
				}
			}
			row = append(row, num(fmtFixed(r.BootSeconds, 2)))
			if a != "scda" {
				row = append(row, num(ratio(r.SpeedupVsSCDA)))
			}
		}
		t.Body = append(t.Body, row)
	}
	return t
}

// segmentSections are one chart and table per algorithm: each segment's bandwidth per batch, the
// bottleneck's cells marked.
func (rep *Report) segmentSections() []htmlSegment {
	var out []htmlSegment
	for j, a := range rep.Algos {
		head := headRow([]th{lth("batch")}, "nodes", "servers used")
		head = headRow(head, rep.Segments...)
		head = append(head, th{Text: "batch Mb/s"}, lth("bottleneck"))
		t := htmlTable{Head: [][]th{head}}
		for i, bt := range rep.Batches {
			r := rep.Baseline.row(i, j, len(rep.Algos))
			row := []td{left(bt.Label), count(bt.Nodes), count(r.ServersUsed)}
			for _, s := range rep.Segments {
				v, bott := segMin(r, s)
				c := num(fmtFixed(v, 2))
				if bott {
					c.Class = "b"
				}
				row = append(row, c)
			}
			t.Body = append(t.Body, append(row, num(fmtFixed(r.BandwidthMbps, 2)), left(strings.Join(r.Bottlenecks, ", "))))
		}
		out = append(out, htmlSegment{Algo: a, SVG: svg(rep.segmentChart(j)), Table: t})
	}
	return out
}

// distSection is the node completion times: percentiles per algorithm and the CDF points plotted.
func (rep *Report) distSection() *htmlDist {
	d := rep.Distribution
	if d == nil {
		return nil
	}
	pct := htmlTable{Head: [][]th{{lth("algorithm")}}}
	for _, q := range d.Ranks {
		pct.Head[0] = append(pct.Head[0], th{Text: "p" + fmtSig(q) + " s"})
	}
	pct.Head[0] = append(pct.Head[0], th{Text: "mean s"})
	cdf := htmlTable{Head: [][]th{headRow([]th{lth("algorithm")}, "s", "nodes done %")}}
	for _, a := range d.Algos {
		row := []td{left(a.Algo)}
		for _, v := range a.Percentiles {
			row = append(row, num(fmtFixed(v, 2)))
		}
		pct.Body = append(pct.Body, append(row, num(fmtFixed(a.Mean, 2))))
		for k := range a.CDFSeconds {
			cdf.Body = append(cdf.Body, []td{left(a.Algo), num(fmtFixed(a.CDFSeconds[k], 3)), num(fmtFixed(100*a.CDFFraction[k], 2))})
		}
	}
	return &htmlDist{Analytic: d.Model == "analytic", Symmetric: d.symmetric(), Batch: d.Batch,
		SVG: svg(rep.distChart()), Percentiles: pct, CDF: cdf}
}

// scenarioSection is the scenarios beside the baseline: under the recommended mapping, and every
// algorithm in every scenario.
func (rep *Report) scenarioSection() *htmlScenarios {
	if len(rep.Scenarios) == 0 {
		return nil
	}
	j := rep.recommendedIndex()
	return &htmlScenarios{Cases: rep.Scenarios, SVG: svg(rep.scenarioChart()), Mapping: rep.Algos[j],
		Table: rep.scenarioTable(j), All: rep.scenarioAllTable()}
}

// scenarioTable is each case's boot time and bottleneck per batch under algorithm j.
func (rep *Report) scenarioTable(j int) htmlTable {
	flow := rep.FlowModel != ""
	top := []th{{Text: "batch", Class: "l", Rowspan: 2}, {Text: "nodes", Rowspan: 2}}
	var sub []th
	for _, cs := range rep.cases() {
		cols := 2
		if flow {
			cols++
			sub = append(sub, th{Text: "end to end s"})
		}
		top = append(top, th{Text: cs.Name, Colspan: cols})
		sub = append(sub, th{Text: "bandwidth model s"}, lth("bottleneck"))
	}
	t := htmlTable{Head: [][]th{top, sub}}
	for i, bt := range rep.Batches {
		row := []td{left(bt.Label), count(bt.Nodes)}
		for _, cs := range rep.cases() {
			r := cs.row(i, j, len(rep.Algos))
			if flow {
				row = append(row, num(flowCell(r)))
			}
			row = append(row, num(fmtFixed(r.BootSeconds, 2)), left(strings.Join(r.Bottlenecks, ", ")))
		}
		t.Body = append(t.Body, row)
	}
	return t
}

// scenarioAllTable is every algorithm's boot time in every case, one row per case and batch.
func (rep *Report) scenarioAllTable() htmlTable {
	flow := rep.FlowModel != ""
	head := []th{lth("scenario"), lth("batch")}
	for _, a := range rep.Algos {
		if flow {
			head = append(head, th{Text: a + " end-to-end s"})
		}
		head = append(head, th{Text: a + " bandwidth-model s"})
	}
	t := htmlTable{Head: [][]th{head}}
	for _, cs := range rep.cases() {
		for i, bt := range rep.Batches {
			row := []td{left(cs.Name), left(bt.Label)}
			for k := range rep.Algos {
				r := cs.row(i, k, len(rep.Algos))
				if flow {
					row = append(row, num(flowCell(r)))
				}
				row = append(row, num(fmtFixed(r.BootSeconds, 2)))
			}
			t.Body = append(t.Body, row)
		}
	}
	return t
}

// upgradeTable is the best segment upgrade of every batch; with the flow model, its effect end to
// end beside the bandwidth model's.
func (rep *Report) upgradeTable() htmlTable {
	flow := rep.FlowModel != ""
	head := []th{lth("batch"), {Text: "nodes"}, lth("bottleneck"), {Text: "boot s"}, lth("best upgrade"), {Text: "after s"}, {Text: "gain"}}
	if flow {
		head = append(head, th{Text: "end to end s"}, th{Text: "after, end to end"}, th{Text: "gain end to end"})
	}
	t := htmlTable{Head: [][]th{head}}
	for _, bu := range rep.Recommendation.PerBatch {
		up, after, gain := "none helps", "-", "-"
		if bu.Best != nil {
			up, after, gain = describeUpgrade(*bu.Best), fmtFixed(bu.Best.AfterSeconds, 2), fmtSig(bu.Best.Gain())+"x"
		}
		row := []td{left(bu.Batch), count(bu.Nodes), left(strings.Join(bu.Bottlenecks, ", ")),
			num(fmtFixed(bu.BootSeconds, 2)), left(up), num(after), num(gain)}
		if flow {
			b, a, g := endToEndCells(bu.Best)
			row = append(row, num(b), num(a), num(g))
		}
		t.Body = append(t.Body, row)
	}
	return t
}

// endToEndCells are an upgrade's end-to-end before and after times and gain ("-" for none).
func endToEndCells(u *Upgrade) (before, after, gain string) {
	if u == nil || !(u.EndToEndAfterSeconds > 0) {
		return "-", "-", "-"
	}
	return fmtFixed(u.EndToEndBeforeSeconds, 2), fmtFixed(u.EndToEndAfterSeconds, 2), fmtSig(u.EndToEndGain()) + "x"
}

// singleUpgradeTable is each segment upgraded alone on the recommendation's batch.
func (rep *Report) singleUpgradeTable() htmlTable {
	flow := rep.FlowModel != ""
	head := []th{lth("upgrade"), {Text: "before s"}, {Text: "after s"}, {Text: "gain"}, lth("bottleneck after")}
	if flow {
		head = append(head, th{Text: "end to end s"}, th{Text: "after, end to end"}, th{Text: "gain end to end"})
	}
	t := htmlTable{Head: [][]th{head}}
	for _, u := range rep.Recommendation.Singles {
		row := []td{left(describeUpgrade(u)), num(fmtFixed(u.BeforeSeconds, 2)),
			num(fmtFixed(u.AfterSeconds, 2)), num(fmtSig(u.Gain()) + "x"), left(strings.Join(u.Bottlenecks, ", "))}
		if flow {
			b, a, g := endToEndCells(&u)
			row = append(row, num(b), num(a), num(g))
		}
		t.Body = append(t.Body, row)
	}
	return t
}
