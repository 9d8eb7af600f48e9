// Package report renders capacity-planning reports from the analytic boot model (fabricsim) and,
// when one is plugged in, the flow-level model: boot time and per-segment bandwidth against batch
// size per mapping algorithm, the spread of node completion times, what-if scenarios beside the
// baseline, and recommendations computed by re-running the model.
//
// The report answers the planner's question first: its headline is the end-to-end boot time of
// every batch under the recommended mapping, from the flow model run as `bootctl simulate` runs it
// (DHCP, TFTP caps, health report; FabricsimFlow), so the two commands print the same figure for
// the same batch. The per-segment bandwidth model (no protocol caps, no fixed times) stands beside
// it, labelled, because the bottleneck and upgrade analysis reasons with it.
//
// The package has two sides. The model says what the report says: Build (build.go) runs the
// analytic model and, when one is plugged in, the flow model (flow.go) over the ladder for the
// baseline and every scenario (scenario.go), then derives the recommendation (recommend.go, which
// re-runs the analytic model with segments upgraded) and the headline (headline.go); the result
// is a Report, pure data. The
// render side only shows a Report: WriteHTML (render_html.go arranges the tables, the page's
// markup is the html/template report.html.tmpl, which escapes every value), WriteMarkdown
// (render_markdown.go), WriteCSV and WriteJSON (render_text.go), the charts' data (charts.go) and
// the SVG they are drawn in (svg.go); format.go holds the number formats both sides print with,
// atomic.go the write-then-rename of a report file. No renderer runs a model.
//
// The HTML is one self-contained file: inline CSS and SVG drawn by the small chart writer in
// svg.go, no scripts and nothing fetched from the network. Output is deterministic: the same
// inputs give the same bytes (no maps are iterated while rendering, no clocks are read, numbers
// are printed with fixed precision).
//
// Plots use our own SVG writer rather than gonum.org/v1/plot: gonum's vgsvg output is
// deterministic, but it places text by measuring Liberation fonts that the viewer may not have,
// writes every element as an anonymous path in a flipped coordinate system (so a test cannot find
// the axes, labels and legend in the SVG), and would add eleven modules to go.mod.
package report
