package report

import (
	"encoding/xml"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct{ raw, want float64 }{
		{0.3, 0.5}, {1, 1}, {1.2, 2}, {3, 5}, {7, 10}, {20, 20}, {21, 50}, {0, 1},
	} {
		if got := niceStep(tc.raw); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("niceStep(%v) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

func TestAxisTicks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		vs       []float64
		log      bool
		fromZero bool
		want     []string
	}{
		{"log decades", []float64{8, 40960}, true, false, []string{"1", "10", "100", "1k", "10k", "100k"}},
		{"log with minor ticks", []float64{3.2, 64}, true, false, []string{"1", "2", "5", "10", "20", "50", "100"}},
		{"log below one", []float64{0.04, 0.5}, true, false, []string{"0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"}},
		{"log ignores non-positive", []float64{0, -1, 10, 100}, true, false, []string{"10", "20", "50", "100"}},
		{"linear", []float64{0, 102.4}, false, false, []string{"0", "50", "100", "150"}},
		{"linear from zero", []float64{3, 7}, false, true, []string{"0", "2", "4", "6", "8"}},
		{"linear fractions", []float64{0.1, 0.35}, false, false, []string{"0.10", "0.15", "0.20", "0.25", "0.30", "0.35"}},
		// One value sits mid-axis (every node of a symmetric batch done at once), not on an edge.
		{"one value", []float64{5, 5}, false, false, []string{"4.4", "4.6", "4.8", "5.0", "5.2", "5.4", "5.6"}},
		{"one value near zero stays non-negative", []float64{0.2}, false, false, []string{"0.0", "0.2", "0.4", "0.6", "0.8"}},
		{"one large value", []float64{103.64, 103.64}, false, false, []string{"95", "100", "105", "110"}},
		{"no data", []float64{math.NaN()}, false, false, []string{"0", "2", "4", "6", "8", "10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAxis(tc.vs, tc.log, tc.fromZero, 0, 100)
			if diff := cmp.Diff(tc.want, a.tickLabels); diff != "" {
				t.Errorf("ticks (-want +got):\n%s", diff)
			}
			// Every usable value lies inside the axis.
			for _, v := range tc.vs {
				if usable(v, tc.log) && (v < a.lo-1e-9 || v > a.hi+1e-9) {
					t.Errorf("value %v outside [%v, %v]", v, a.lo, a.hi)
				}
			}
		})
	}
}

func TestPathData(t *testing.T) {
	xa := &axis{lo: 0, hi: 10, p0: 0, p1: 100}
	ya := &axis{lo: 0, hi: 10, p0: 100, p1: 0}
	for _, tc := range []struct {
		name string
		s    Series
		want string
	}{
		{"line", Series{X: []float64{0, 5, 10}, Y: []float64{0, 5, 10}}, "M0.0 100.0L50.0 50.0L100.0 0.0"},
		{"gap at NaN", Series{X: []float64{0, 5, 10}, Y: []float64{0, math.NaN(), 10}}, "M0.0 100.0M100.0 0.0"},
		{"step", Series{X: []float64{0, 5}, Y: []float64{0, 10}, Step: true}, "M0.0 100.0L50.0 100.0L50.0 0.0"},
		{"empty", Series{}, "M0 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pathData(tc.s, xa, ya); got != tc.want {
				t.Errorf("path %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFmtTick(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		dec  int
		want string
	}{{1000, 0, "1k"}, {20000, 0, "20k"}, {1e6, 0, "1M"}, {1500, 0, "1500"}, {0.01, 0, "0.01"}, {2.5, 1, "2.5"}, {100, 0, "100"}} {
		if got := fmtTick(tc.v, tc.dec); got != tc.want {
			t.Errorf("fmtTick(%v, %d) = %q, want %q", tc.v, tc.dec, got, tc.want)
		}
	}
}

// svgNode is a generic XML element for structure checks.
type svgNode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Text     string     `xml:",chardata"`
	Children []svgNode  `xml:",any"`
}

func (n *svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n *svgNode) hasClass(c string) bool {
	return strings.Contains(" "+n.attr("class")+" ", " "+c+" ")
}

// find returns the elements below n (n included) with class c.
func (n *svgNode) find(c string) []*svgNode {
	var out []*svgNode
	if n.hasClass(c) {
		out = append(out, n)
	}
	for i := range n.Children {
		out = append(out, n.Children[i].find(c)...)
	}
	return out
}

var svgRE = regexp.MustCompile(`(?s)<svg class="plot".*?</svg>`)

// checkPlots parses every plot of an HTML page and checks that it has both axes with ticks, both
// axis labels, a title, drawn series and a legend with one entry per series; it returns the
// number of plots.
func checkPlots(t *testing.T, page string) int {
	t.Helper()
	plots := svgRE.FindAllString(page, -1)
	for _, p := range plots {
		var root svgNode
		if err := xml.Unmarshal([]byte(p), &root); err != nil {
			t.Errorf("plot is not well-formed SVG: %v", err)
			continue
		}
		title := ""
		if ts := root.find("title"); len(ts) == 1 {
			title = strings.TrimSpace(ts[0].Text)
		}
		if title == "" {
			t.Errorf("plot without a title")
		}
		checkAxes(t, title, &root)
		series := checkSeries(t, title, &root)
		checkLegend(t, title, &root, series)
	}
	return len(plots)
}

// checkAxes checks that a plot has both axes, each with a line and tick labels, and both axis labels.
func checkAxes(t *testing.T, title string, root *svgNode) {
	t.Helper()
	for _, c := range []string{"x-axis", "y-axis"} {
		axes := root.find(c)
		if len(axes) != 1 {
			t.Errorf("%s: %d %s elements, want 1", title, len(axes), c)
			continue
		}
		if ticks := axes[0].find("tick"); len(ticks) < 2 {
			t.Errorf("%s: %s has %d tick labels, want at least 2", title, c, len(ticks))
		}
		if len(axes[0].find("axis-line")) != 1 {
			t.Errorf("%s: %s has no axis line", title, c)
		}
	}
	for _, c := range []string{"x-label", "y-label"} {
		l := root.find(c)
		if len(l) != 1 || strings.TrimSpace(l[0].Text) == "" {
			t.Errorf("%s: missing or empty %s", title, c)
		}
	}
}

// checkSeries checks that a plot has series and that each draws a line; it returns them.
func checkSeries(t *testing.T, title string, root *svgNode) []*svgNode {
	t.Helper()
	series := root.find("series")
	if len(series) == 0 {
		t.Errorf("%s: no series", title)
	}
	for _, s := range series {
		drawn := false
		for _, ch := range s.Children {
			if ch.XMLName.Local == "path" && strings.Contains(ch.attr("d"), "L") {
				drawn = true
			}
		}
		if !drawn {
			t.Errorf("%s: series %q draws no line", title, s.attr("data-name"))
		}
	}
	return series
}

// checkLegend checks that a plot has one legend naming every series, in order.
func checkLegend(t *testing.T, title string, root *svgNode, series []*svgNode) {
	t.Helper()
	legends := root.find("legend")
	if len(legends) != 1 {
		t.Errorf("%s: %d legends, want 1", title, len(legends))
		return
	}
	entries := legends[0].find("legend-entry")
	if len(entries) < len(series) {
		t.Errorf("%s: legend has %d entries for %d series", title, len(entries), len(series))
	}
	for i, s := range series {
		if i < len(entries) && strings.TrimSpace(entries[i].Text) != s.attr("data-name") {
			t.Errorf("%s: legend entry %d is %q, series is %q", title, i, entries[i].Text, s.attr("data-name"))
		}
	}
}

func TestChartStructure(t *testing.T) {
	c := &Chart{Title: "Boot <time> & size", XLabel: "nodes", YLabel: "seconds", XLog: true, YLog: true,
		Series: []Series{
			{Name: "scda", X: []float64{8, 256, 40960}, Y: []float64{3.2, 102.4, 102.4}, Dots: true},
			{Name: "bcda", X: []float64{8, 256, 40960}, Y: []float64{3.2, 5.12, 102.4}, Dash: true},
		},
		Marks: []Mark{{X: 256, Y: 5.12}}, MarkName: "bottleneck"}
	svg := c.SVG()
	if n := checkPlots(t, svg); n != 1 {
		t.Fatalf("found %d plots, want 1", n)
	}
	if !strings.Contains(svg, "Boot &lt;time&gt; &amp; size") {
		t.Errorf("title not escaped")
	}
	if strings.Count(svg, `class="mark"`) != 1 || !strings.Contains(svg, ">bottleneck</text>") {
		t.Errorf("bottleneck mark or its legend entry missing")
	}
	if svg != c.SVG() {
		t.Errorf("two renderings of one chart differ")
	}
	if err := c.WriteSVG(failWriter{}); err == nil {
		t.Errorf("write error not reported")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestReportPlotsStructure(t *testing.T) {
	rep := buildReport(t, machineConfig(t, "mini", true, false))
	var b strings.Builder
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	// Boot time (analytic, flow), one per-segment plot per algorithm, completion times.
	want := 2 + len(rep.Algos) + 1
	if n := checkPlots(t, b.String()); n != want {
		t.Errorf("found %d plots, want %d", n, want)
	}
	ids := regexp.MustCompile(`<clipPath id="([^"]+)"`).FindAllStringSubmatch(b.String(), -1)
	seen := map[string]bool{}
	for _, m := range ids {
		if seen[m[1]] {
			t.Errorf("clip path id %s used twice", m[1])
		}
		seen[m[1]] = true
	}
}
