package report

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/fabricsim"
)

// TestHeadlineEndToEnd checks the headline against figures derived by hand, not from the
// simulator: one board of the paper's machine is bound by the TFTP cap (one 1432-byte block per
// 200 us round trip, 57.28 Mb/s, below the board uplink's 125 Mb/s share), so it boots in DHCP
// 1 s + 50.07 MB at 57.28 Mb/s + health 0.1 s = 8.093 s, while the bandwidth model says 3.2 s.
// Every batch takes at least the bandwidth model's time plus the fixed DHCP and health times.
func TestHeadlineEndToEnd(t *testing.T) {
	const (
		dhcp, health = 1.0, 0.1
		capMbps      = 1432 * 8 / 200e-6 / 1e6
		bootBytes    = 70e3 + 10e6 + 40e6
	)
	rep := buildReport(t, paperConfig(t, true, false))
	h := rep.Headline
	if h.Model != EndToEndModel || h.Mapping != "bcda" || len(h.Batches) != len(rep.Batches) {
		t.Fatalf("headline %q under %q with %d batches, want %q under bcda with %d", h.Model, h.Mapping, len(h.Batches), EndToEndModel, len(rep.Batches))
	}
	checkHeadlineRows(t, h, []headlineCase{
		{"1 board", dhcp + bootBytes*8/(capMbps*1e6) + health, 3.2, "tftp cap"},
		{"32 boards", dhcp + bootBytes*8/(capMbps*1e6) + health, 5.12, "tftp cap"},
		{"40 cabinets", 0, 102.4, "N4"},
	})
	for _, hb := range h.Batches {
		if hb.EndToEndSeconds < hb.BandwidthModelSeconds+dhcp+health-1e-9 {
			t.Errorf("%s: end to end %v s is below the bandwidth model's %v s plus DHCP and health", hb.Batch, hb.EndToEndSeconds, hb.BandwidthModelSeconds)
		}
	}
	for _, want := range []string{"With bcda, 40 cabinets (40960 nodes) boots in 103.643 s end to end", "1 board (8 nodes): 8.093 s end to end (3.2 s in the per-segment bandwidth model, no protocol caps)"} {
		if !strings.Contains(h.Text, want) {
			t.Errorf("headline %q lacks %q", h.Text, want)
		}
	}
	checkHeadlineOnPage(t, rep)

	// Without the flow model the headline is the bandwidth model, and says so.
	an := buildReport(t, paperConfig(t, false, false)).Headline
	if an.Model != BandwidthModel || an.Batches[0].EndToEndSeconds != 0 || !strings.Contains(an.Text, BandwidthModel) {
		t.Errorf("analytic-only headline: model %q, text %q", an.Model, an.Text)
	}
}

// headlineCase is a headline row's expected figures.
type headlineCase struct {
	batch     string
	endToEnd  float64 // 0: only the lower bound is checked
	bandwidth float64
	limit     string
}

// checkHeadlineRows checks the headline's row of each case.
func checkHeadlineRows(t *testing.T, h Headline, cases []headlineCase) {
	for _, tc := range cases {
		t.Run(tc.batch, func(t *testing.T) {
			var hb *HeadlineBatch
			for i := range h.Batches {
				if h.Batches[i].Batch == tc.batch {
					hb = &h.Batches[i]
				}
			}
			if hb == nil {
				t.Fatalf("no headline row for %s", tc.batch)
			}
			if tc.endToEnd > 0 && math.Abs(hb.EndToEndSeconds-tc.endToEnd) > 1e-6 {
				t.Errorf("end to end %v s, want %v", hb.EndToEndSeconds, tc.endToEnd)
			}
			if math.Abs(hb.BandwidthModelSeconds-tc.bandwidth) > 1e-9 {
				t.Errorf("bandwidth model %v s, want %v", hb.BandwidthModelSeconds, tc.bandwidth)
			}
			if hb.EndToEndLimit != tc.limit {
				t.Errorf("limited by %q, want %q", hb.EndToEndLimit, tc.limit)
			}
		})
	}
}

// checkHeadlineOnPage checks that the HTML page opens with the headline, labelled, before the
// recommendation.
func checkHeadlineOnPage(t *testing.T, rep *Report) {
	t.Helper()
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	hi, ri := strings.Index(page.String(), `<p class="headline">`), strings.Index(page.String(), "<h2>Recommendation")
	if hi < 0 || ri < 0 || hi > ri {
		t.Errorf("headline at %d, recommendation at %d: the headline must come first", hi, ri)
	}
	if !strings.Contains(page.String(), `<td class="e2e" data-batch="1 board" data-seconds="8.093`) {
		t.Errorf("page lacks the 1-board end-to-end cell")
	}
}

// TestBootFiles checks that the report boots what simulate boots: the default files for the
// default 50 MB image, else the NBP and one image, as `simulate --image-size` does.
func TestBootFiles(t *testing.T) {
	for _, tc := range []struct {
		image float64
		want  []fabricsim.File
	}{
		{50e6, fabricsim.DefaultFiles(fabricsim.TFTP)},
		{100e6, []fabricsim.File{{Name: "nbp", Bytes: 70e3, Protocol: fabricsim.TFTP}, {Name: "image", Bytes: 100e6, Protocol: fabricsim.TFTP}}},
	} {
		got := flowConfig(tc.image)
		if len(got.Files) != len(tc.want) {
			t.Fatalf("%v bytes: files %+v, want %+v", tc.image, got.Files, tc.want)
		}
		for i := range got.Files {
			if got.Files[i] != tc.want[i] {
				t.Errorf("%v bytes: file %d %+v, want %+v", tc.image, i, got.Files[i], tc.want[i])
			}
		}
		if got.DHCPSeconds != fabricsim.DefaultDHCPSeconds || got.HealthSeconds != fabricsim.DefaultHealthSeconds || got.TFTPBlockSize != 1432 {
			t.Errorf("flow config %+v: not simulate's defaults", got)
		}
	}
}

// TestChartsKeepLinesVisible checks every chart of the full report: no two series are the same
// line (those are drawn once, named "a = b"), and no two share colour, dash and marker, so a line
// that coincides with another over part of the range still shows.
func TestChartsKeepLinesVisible(t *testing.T) {
	rep := buildReport(t, paperConfig(t, true, true))
	var names []string
	for _, c := range rep.Charts() {
		for i, s := range c.Series {
			names = append(names, s.Name)
			for _, o := range c.Series[:i] {
				if sameSeries(s, o) {
					t.Errorf("%s: %q and %q are the same line drawn twice", c.Title, o.Name, s.Name)
				}
				if s.Color == o.Color && s.DashArray == o.DashArray && s.Marker == o.Marker {
					t.Errorf("%s: %q and %q look alike", c.Title, o.Name, s.Name)
				}
			}
		}
	}
	joined := strings.Join(names, "\n")
	for _, want := range []string{"bcda = ncda = balanced", "baseline = "} {
		if !strings.Contains(joined, want) {
			t.Errorf("no series named %q among %q", want, names)
		}
	}
	// The legend has room for the joined names.
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if n := checkPlots(t, page.String()); n != len(rep.Charts()) {
		t.Errorf("%d plots, want %d", n, len(rep.Charts()))
	}
}

func TestMergeCoincident(t *testing.T) {
	x := []float64{1, 2, 3}
	nan := math.NaN()
	for _, tc := range []struct {
		name   string
		series []Series
		want   []string
	}{
		{"all equal", []Series{{Name: "a", X: x, Y: []float64{1, 2, 3}}, {Name: "b", X: x, Y: []float64{1, 2, 3 + 1e-12}}, {Name: "c", X: x, Y: []float64{1, 2, 3}}}, []string{"a = b = c"}},
		{"equal in part stay apart", []Series{{Name: "a", X: x, Y: []float64{1, 2, 3}}, {Name: "b", X: x, Y: []float64{1, 2, 4}}}, []string{"a", "b"}},
		{"gaps must match", []Series{{Name: "a", X: x, Y: []float64{1, nan, 3}}, {Name: "b", X: x, Y: []float64{1, nan, 3}}, {Name: "c", X: x, Y: []float64{1, 2, 3}}}, []string{"a = b", "c"}},
		{"non-adjacent", []Series{{Name: "a", X: x, Y: []float64{1, 1, 1}}, {Name: "b", X: x, Y: []float64{2, 2, 2}}, {Name: "c", X: x, Y: []float64{1, 1, 1}}}, []string{"a = c", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range MergeCoincident(tc.series) {
				got = append(got, s.Name)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("merged %q, want %q", got, tc.want)
			}
		})
	}
}

// TestModelsDiffer checks that the end-to-end plot is not the bandwidth model's drawn twice: they
// differ on every batch (DHCP and health alone add 1.1 s).
func TestModelsDiffer(t *testing.T) {
	rep := buildReport(t, machineConfig(t, "mini", true, false))
	flow, an := rep.bootChart(true), rep.bootChart(false)
	if flow.Title == an.Title {
		t.Errorf("both boot-time plots are titled %q", flow.Title)
	}
	for k := range flow.Series {
		for i := range flow.Series[k].Y {
			if sameTime(flow.Series[k].Y[i], an.Series[k].Y[i]) {
				t.Errorf("%s, batch %d: both models plot %v s", flow.Series[k].Name, i, flow.Series[k].Y[i])
			}
		}
	}
}

// TestCompletionPlotScaled checks that the completion plot of the whole paper machine, where
// every node finishes at the same time, puts that time well inside the axis, not on its edge.
func TestCompletionPlotScaled(t *testing.T) {
	rep := buildReport(t, paperConfig(t, true, false))
	c := rep.distChart()
	var xs []float64
	for _, s := range c.Series {
		xs = append(xs, s.X...)
	}
	a := newAxis(xs, c.XLog, false, 0, 100)
	for _, x := range xs {
		if p := a.pos(x); p < 10 || p > 90 {
			t.Errorf("completion time %v s is at %.1f%% of the axis [%v, %v], want within 10-90%%", x, p, a.lo, a.hi)
		}
	}
}

// TestTiesExplained checks that the recommendation says which mappings tie with the one it picks
// and why it picks that one.
func TestTiesExplained(t *testing.T) {
	text := strings.Join(buildReport(t, paperConfig(t, false, false)).Recommendation.Text, "\n")
	for _, want := range []string{
		"ncda and balanced tie with bcda on every batch",
		"balanced needs the batch in advance",
		"coarsest blocks (a whole board to one server)",
		"bcda, ncda and balanced are up to 20x scda",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("recommendation lacks %q:\n%s", want, text)
		}
	}
}

// TestNoConstantColumns checks the boot-time table: every numeric column changes over the ladder
// (scda's ratio to itself, always 1.00, is left out).
func TestNoConstantColumns(t *testing.T) {
	rep := buildReport(t, paperConfig(t, true, false))
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	s := page.String()
	start := strings.Index(s, "<h2>Boot time against batch size")
	table := s[start+strings.Index(s[start:], "<table>"):]
	table = table[:strings.Index(table, "</table>")]
	if strings.Contains(table, "scda x scda") {
		t.Errorf("the table has a scda x scda column")
	}
	rowRE, cellRE := regexp.MustCompile(`<tr><td class="l">.*</tr>`), regexp.MustCompile(`<td>([^<]*)</td>`)
	var cols [][]string
	for _, row := range rowRE.FindAllString(table, -1) {
		for k, m := range cellRE.FindAllStringSubmatch(row, -1) {
			if k >= len(cols) {
				cols = append(cols, nil)
			}
			cols[k] = append(cols[k], m[1])
		}
	}
	if len(cols) < 1+2*len(rep.Algos) {
		t.Fatalf("%d columns in the boot-time table", len(cols))
	}
	for k, col := range cols {
		same := true
		for _, v := range col {
			same = same && v == col[0]
		}
		if same {
			t.Errorf("column %d is %s on every batch", k, col[0])
		}
	}
}
