package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Chart is a line chart drawn as SVG: one or more series over linear or logarithmic axes, a legend
// on the right, and optional marks (rings around chosen points, e.g. the bottleneck).
type Chart struct {
	Title, XLabel, YLabel string
	XLog, YLog            bool
	// YFromZero starts a linear y axis at 0 whatever the data.
	YFromZero bool
	Series    []Series
	// Marks are rings drawn around points; MarkName is their legend entry.
	Marks    []Mark
	MarkName string
	// Width and Height in pixels; 0 means 720 x 380.
	Width, Height int
}

// Series is one line of a chart. Points whose X or Y is NaN, or not positive on a log axis, are
// left out and break the line.
type Series struct {
	Name  string
	X, Y  []float64
	Color string
	// Dash draws the line dashed ("7 4"); DashArray, when set, is the SVG dash pattern instead.
	Dash      bool
	DashArray string
	// Dots draws a marker at each point: Marker's shape (MarkerShapes), a circle when empty.
	Dots   bool
	Marker string
	// Step draws a staircase (for cumulative distributions).
	Step bool
	// Width is the line width in pixels (0: 2). Lines drawn earlier and wider stay visible under
	// later ones where the data coincide.
	Width float64
}

// LayerWidth returns the width of the i-th of n series drawn in layers: the first widest (at most
// 6.5 px), the last 2 px, so that coinciding lines all show.
func LayerWidth(i, n int) float64 {
	if n < 2 {
		return 2
	}
	return 2 + min(1.5, 4.5/float64(n-1))*float64(n-1-i)
}

// dashes are the dash patterns of series drawn in layers, solid first: series whose lines coincide
// over part of the range stay told apart by the pattern (and the wider line underneath shows in
// the gaps of the dashed one on top).
var dashes = []string{"", "9 4", "3 3", "12 4 3 4", "6 3", "2 5", "14 3", "4 2 1 2"}

// DashPattern returns the i-th dash pattern ("" is solid).
func DashPattern(i int) string { return dashes[i%len(dashes)] }

// MarkerShapes are the point markers, one per series, so that points of series that coincide at
// some batches still show each series' marker.
var MarkerShapes = []string{"circle", "square", "triangle", "diamond", "triangle-down", "cross", "plus", "bar"}

// MarkerShape returns the i-th marker shape.
func MarkerShape(i int) string { return MarkerShapes[i%len(MarkerShapes)] }

// Styled returns series i of n of a chart in its layer style: colour, width, dash pattern and
// marker all by index, so each stays visible where lines coincide.
func Styled(s Series, i, n int) Series {
	s.Color, s.Width, s.DashArray = Color(i), LayerWidth(i, n), DashPattern(i)
	if s.Dots {
		s.Marker = MarkerShape(i)
	}
	return s
}

// MergeCoincident joins series that are equal at every point (same X, same Y within a relative
// 1e-9, gaps at the same places) into one line named "a = b = c", styled as the first. Identical
// lines drawn on top of each other show only the last; one line with all the names says what the
// plot means.
func MergeCoincident(series []Series) []Series {
	var out []Series
	for _, s := range series {
		k := slices.IndexFunc(out, func(o Series) bool { return sameSeries(o, s) })
		if k < 0 {
			out = append(out, s)
			continue
		}
		out[k].Name += " = " + s.Name
	}
	return out
}

func sameSeries(a, b Series) bool {
	if len(a.X) != len(b.X) || len(a.Y) != len(b.Y) {
		return false
	}
	eq := func(u, v float64) bool {
		if math.IsNaN(u) || math.IsNaN(v) {
			return math.IsNaN(u) && math.IsNaN(v)
		}
		return sameTime(u, v)
	}
	for i := range a.X {
		if !eq(a.X[i], b.X[i]) {
			return false
		}
	}
	for i := range a.Y {
		if !eq(a.Y[i], b.Y[i]) {
			return false
		}
	}
	return true
}

func (s Series) dash() string {
	switch {
	case s.DashArray != "":
		return ` stroke-dasharray="` + s.DashArray + `"`
	case s.Dash:
		return ` stroke-dasharray="7 4"`
	}
	return ""
}

// writeMarker draws a marker of the given shape centred on (x, y), about 7 px across.
func writeMarker(b *strings.Builder, shape string, x, y float64, color string) {
	const r = 3.5
	poly := func(pts ...float64) {
		var ps []string
		for k := 0; k+1 < len(pts); k += 2 {
			ps = append(ps, px(x+pts[k])+","+px(y+pts[k+1]))
		}
		fmt.Fprintf(b, `<polygon class="marker" points="%s" fill="%s"/>`+"\n", strings.Join(ps, " "), color)
	}
	switch shape {
	case "square":
		poly(-r, -r, r, -r, r, r, -r, r)
	case "triangle":
		poly(0, -r-1, r+0.5, r, -r-0.5, r)
	case "triangle-down":
		poly(0, r+1, r+0.5, -r, -r-0.5, -r)
	case "diamond":
		poly(0, -r-1, r+1, 0, 0, r+1, -r-1, 0)
	case "cross", "plus", "bar":
		d := [][4]float64{{-r, -r, r, r}, {-r, r, r, -r}}
		if shape == "plus" {
			d = [][4]float64{{-r - 1, 0, r + 1, 0}, {0, -r - 1, 0, r + 1}}
		} else if shape == "bar" {
			d = [][4]float64{{-r - 1, 0, r + 1, 0}}
		}
		for _, l := range d {
			fmt.Fprintf(b, `<line class="marker" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>`+"\n", px(x+l[0]), px(y+l[1]), px(x+l[2]), px(y+l[3]), color)
		}
	default:
		fmt.Fprintf(b, `<circle class="marker" cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", px(x), px(y), color)
	}
}

func (s Series) width() string {
	if s.Width > 0 {
		return px(s.Width)
	}
	return "2"
}

// Mark is a ring around a point.
type Mark struct{ X, Y float64 }

// Palette is the colour cycle of series: the Okabe-Ito colours, distinguishable by colour-blind
// readers, darkest first.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// Color returns the i-th colour of the palette.
func Color(i int) string { return palette[i%len(palette)] }

const (
	marginLeft   = 72
	marginRight  = 170
	marginTop    = 34
	marginBottom = 50
	fontFamily   = "DejaVu Sans, Liberation Sans, Arial, sans-serif"
)

// axis maps data values to pixels along one direction.
type axis struct {
	log        bool
	lo, hi     float64 // in data units
	p0, p1     float64 // pixels for lo and hi
	ticks      []float64
	tickLabels []string
}

func (a *axis) pos(v float64) float64 {
	if a.log {
		return a.p0 + (math.Log10(v)-math.Log10(a.lo))/(math.Log10(a.hi)-math.Log10(a.lo))*(a.p1-a.p0)
	}
	return a.p0 + (v-a.lo)/(a.hi-a.lo)*(a.p1-a.p0)
}

func usable(v float64, log bool) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!log || v > 0)
}

// newAxis chooses the range and ticks of an axis for the data values vs.
func newAxis(vs []float64, log, fromZero bool, p0, p1 float64) *axis {
	a := &axis{log: log, p0: p0, p1: p1}
	lo, hi, hasData := dataRange(vs, log)
	if log {
		a.setLog(lo, hi)
		return a
	}
	if fromZero {
		lo = min(lo, 0)
	} else if hasData && hi-lo <= 1e-9*max(math.Abs(lo), math.Abs(hi)) {
		// Data at one value (every node done at the same time) sits mid-axis, not as one line on
		// the left edge of a unit range; a time stays non-negative.
		pad := max(0.05*math.Abs(hi), 0.5)
		nlo := lo - pad
		if lo >= 0 {
			nlo = max(nlo, 0)
		}
		lo, hi = nlo, hi+pad
	}
	a.setLinear(lo, hi)
	return a
}

// dataRange is the smallest and largest value an axis can show; without any, an arbitrary unit
// range.
func dataRange(vs []float64, log bool) (lo, hi float64, hasData bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if usable(v, log) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if !math.IsInf(lo, 1) {
		return lo, hi, true
	}
	if log {
		return 1, 10, false
	}
	return 0, 10, false
}

// setLog spans whole decades around lo..hi, a tick at each decade and, over at most two decades,
// at 2 and 5 times it.
func (a *axis) setLog(lo, hi float64) {
	dlo, dhi := math.Floor(math.Log10(lo)+1e-9), math.Ceil(math.Log10(hi)-1e-9)
	if dhi <= dlo {
		dhi = dlo + 1
	}
	a.lo, a.hi = math.Pow(10, dlo), math.Pow(10, dhi)
	minor := dhi-dlo <= 2
	for d := dlo; d <= dhi; d++ {
		base := math.Pow(10, d)
		a.ticks = append(a.ticks, base)
		a.tickLabels = append(a.tickLabels, fmtTick(base, 0))
		if minor && d < dhi {
			for _, m := range []float64{2, 5} {
				a.ticks = append(a.ticks, m*base)
				a.tickLabels = append(a.tickLabels, fmtTick(m*base, 0))
			}
		}
	}
}

// setLinear rounds lo..hi out to about five nice steps, a tick at each.
func (a *axis) setLinear(lo, hi float64) {
	if hi <= lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / 5)
	a.lo = math.Floor(lo/step+1e-9) * step
	a.hi = math.Ceil(hi/step-1e-9) * step
	if a.hi <= a.lo {
		a.hi = a.lo + step
	}
	dec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	for i := 0; ; i++ {
		v := a.lo + float64(i)*step
		if v > a.hi+step*1e-9 || i > 50 {
			break
		}
		a.ticks = append(a.ticks, v)
		a.tickLabels = append(a.tickLabels, fmtTick(v, dec))
	}
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if !(raw > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// fmtTick writes a tick value: thousands as k, millions as M on whole numbers (10k, 1M).
func fmtTick(v float64, dec int) string {
	if dec == 0 && v >= 1000 && math.Mod(v, 1000) == 0 {
		if v >= 1e6 && math.Mod(v, 1e6) == 0 {
			return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
		}
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	}
	if dec == 0 && v < 1 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// px formats a pixel coordinate with one decimal, the same on every platform.
func px(v float64) string {
	s := strconv.FormatFloat(math.Round(v*10)/10, 'f', 1, 64)
	if s == "-0.0" {
		s = "0.0"
	}
	return s
}

func esc(s string) string { return html.EscapeString(s) }

// WriteSVG writes the chart as an <svg> element. Its parts carry classes that tests and style
// sheets can find: plot, title, axis x-axis/y-axis, axis-label, tick, series, mark, legend.
func (c *Chart) WriteSVG(w io.Writer) error {
	fr := c.frame()
	var b svgBuilder
	c.writeHeader(&b, fr)
	writeGrid(&b, fr)
	writeAxes(&b, fr)
	c.writeAxisLabels(&b, fr)
	c.writeSeries(&b, fr)
	c.writeMarks(&b, fr)
	c.writeLegend(&b, fr)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// svgBuilder accumulates an SVG element.
type svgBuilder struct{ strings.Builder }

func (b *svgBuilder) f(format string, args ...any) { fmt.Fprintf(b, format, args...) }

// svgFrame is a chart's layout: its size in pixels, the plot area and the axes that map data into it.
type svgFrame struct {
	width, height            int
	left, right, top, bottom float64
	xa, ya                   *axis
}

// frame lays the chart out. The legend gets the room its longest entry needs ("bcda = ncda =
// balanced"): the chart grows to the right rather than cutting names, and the plot area keeps its
// size.
func (c *Chart) frame() svgFrame {
	width, height := c.Width, c.Height
	if width == 0 {
		width = 720
	}
	if height == 0 {
		height = 380
	}
	legend := marginRight
	for _, name := range append(seriesNames(c.Series), c.MarkName) {
		legend = max(legend, legendWidth(name))
	}
	width += legend - marginRight
	fr := svgFrame{width: width, height: height, left: float64(marginLeft), right: float64(width - legend),
		top: float64(marginTop), bottom: float64(height - marginBottom)}
	var xs, ys []float64
	for _, s := range c.Series {
		xs = append(xs, s.X...)
		ys = append(ys, s.Y...)
	}
	for _, m := range c.Marks {
		xs, ys = append(xs, m.X), append(ys, m.Y)
	}
	fr.xa = newAxis(xs, c.XLog, false, fr.left, fr.right)
	fr.ya = newAxis(ys, c.YLog, c.YFromZero, fr.bottom, fr.top)
	return fr
}

// writeHeader opens the <svg> element: its title, for screen readers too, and the background.
func (c *Chart) writeHeader(b *svgBuilder, fr svgFrame) {
	b.f(`<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="%s" font-size="12">`+"\n",
		fr.width, fr.height, fr.width, fr.height, esc(c.Title), fontFamily)
	b.f("<title>%s</title>\n", esc(c.Title))
	b.f(`<rect class="background" x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", fr.width, fr.height)
	b.f(`<text class="title" x="%s" y="20" text-anchor="middle" font-size="14" font-weight="bold">%s</text>`+"\n", px((fr.left+fr.right)/2), esc(c.Title))
}

// writeGrid draws a grid line at every tick.
func writeGrid(b *svgBuilder, fr svgFrame) {
	b.WriteString(`<g class="grid" stroke="#e3e3e3" stroke-width="1">` + "\n")
	for _, t := range fr.xa.ticks {
		x := px(fr.xa.pos(t))
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", x, px(fr.top), x, px(fr.bottom))
	}
	for _, t := range fr.ya.ticks {
		y := px(fr.ya.pos(t))
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", px(fr.left), y, px(fr.right), y)
	}
	b.WriteString("</g>\n")
}

// writeAxes draws both axes with their ticks and tick labels.
func writeAxes(b *svgBuilder, fr svgFrame) {
	b.WriteString(`<g class="axis x-axis" stroke="#333333" stroke-width="1">` + "\n")
	b.f(`<line class="axis-line" x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", px(fr.left), px(fr.bottom), px(fr.right), px(fr.bottom))
	for i, t := range fr.xa.ticks {
		x := px(fr.xa.pos(t))
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", x, px(fr.bottom), x, px(fr.bottom+5))
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="middle" stroke="none" fill="#333333">%s</text>`+"\n", x, px(fr.bottom+18), esc(fr.xa.tickLabels[i]))
	}
	b.WriteString("</g>\n")
	b.WriteString(`<g class="axis y-axis" stroke="#333333" stroke-width="1">` + "\n")
	b.f(`<line class="axis-line" x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", px(fr.left), px(fr.top), px(fr.left), px(fr.bottom))
	for i, t := range fr.ya.ticks {
		y := px(fr.ya.pos(t))
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", px(fr.left-5), y, px(fr.left), y)
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="end" stroke="none" fill="#333333">%s</text>`+"\n", px(fr.left-8), px(fr.ya.pos(t)+4), esc(fr.ya.tickLabels[i]))
	}
	b.WriteString("</g>\n")
}

// writeAxisLabels names the axes.
func (c *Chart) writeAxisLabels(b *svgBuilder, fr svgFrame) {
	b.f(`<text class="axis-label x-label" x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", px((fr.left+fr.right)/2), px(float64(fr.height)-10), esc(c.XLabel))
	ly := px((fr.top + fr.bottom) / 2)
	b.f(`<text class="axis-label y-label" x="18" y="%s" text-anchor="middle" transform="rotate(-90 18 %s)">%s</text>`+"\n", ly, ly, esc(c.YLabel))
}

// seriesColor is series i's own colour, else the palette's.
func seriesColor(s Series, i int) string {
	if s.Color != "" {
		return s.Color
	}
	return Color(i)
}

// writeSeries draws every series, clipped to the plot area, with its markers.
func (c *Chart) writeSeries(b *svgBuilder, fr svgFrame) {
	xa, ya := fr.xa, fr.ya
	b.f(`<clipPath id="%s"><rect x="%s" y="%s" width="%s" height="%s"/></clipPath>`+"\n", clipID(c.Title), px(fr.left-6), px(fr.top-6), px(fr.right-fr.left+12), px(fr.bottom-fr.top+12))
	for i, s := range c.Series {
		color := seriesColor(s, i)
		b.f(`<g class="series" data-name="%s" clip-path="url(#%s)">`+"\n", esc(s.Name), clipID(c.Title))
		b.f(`<path d="%s" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round"%s/>`+"\n", pathData(s, xa, ya), color, s.width(), s.dash())
		if s.Dots {
			for j := range s.X {
				if j < len(s.Y) && usable(s.X[j], xa.log) && usable(s.Y[j], ya.log) {
					writeMarker(&b.Builder, s.Marker, xa.pos(s.X[j]), ya.pos(s.Y[j]), color)
				}
			}
		}
		b.WriteString("</g>\n")
	}
}

// writeMarks rings the marked points (the bottlenecks).
func (c *Chart) writeMarks(b *svgBuilder, fr svgFrame) {
	if len(c.Marks) == 0 {
		return
	}
	b.WriteString(`<g class="marks" fill="none" stroke="#000000" stroke-width="1.5">` + "\n")
	for _, m := range c.Marks {
		if usable(m.X, fr.xa.log) && usable(m.Y, fr.ya.log) {
			b.f(`<circle class="mark" cx="%s" cy="%s" r="7"/>`+"\n", px(fr.xa.pos(m.X)), px(fr.ya.pos(m.Y)))
		}
	}
	b.WriteString("</g>\n")
}

// writeLegend names every series, and the marks, right of the plot area.
func (c *Chart) writeLegend(b *svgBuilder, fr svgFrame) {
	lx := fr.right + 16
	b.WriteString(`<g class="legend">` + "\n")
	y := fr.top + 8
	for i, s := range c.Series {
		color := seriesColor(s, i)
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`+"\n", px(lx), px(y), px(lx+28), px(y), color, s.width(), s.dash())
		if s.Dots {
			writeMarker(&b.Builder, s.Marker, lx+14, y, color)
		}
		b.f(`<text class="legend-entry" x="%s" y="%s">%s</text>`+"\n", px(lx+34), px(y+4), esc(s.Name))
		y += 20
	}
	if len(c.Marks) > 0 && c.MarkName != "" {
		b.f(`<circle cx="%s" cy="%s" r="7" fill="none" stroke="#000000" stroke-width="1.5"/>`+"\n", px(lx+14), px(y))
		b.f(`<text class="legend-entry" x="%s" y="%s">%s</text>`+"\n", px(lx+34), px(y+4), esc(c.MarkName))
	}
	b.WriteString("</g>\n")
}

func seriesNames(ss []Series) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

// legendWidth estimates the pixels a legend entry takes: the 34 px sample line and gap, then the
// name at about 7.2 px a character in 12 px DejaVu Sans (its widest common letters), and a margin.
func legendWidth(name string) int {
	return 34 + int(math.Ceil(7.2*float64(utf8.RuneCountInString(name)))) + 12
}

// SVG returns the chart as an <svg> element.
func (c *Chart) SVG() string {
	var b strings.Builder
	_ = c.WriteSVG(&b) // a strings.Builder does not fail
	return b.String()
}

// clipID derives an element id from the title, so that several charts in one page do not clash.
func clipID(title string) string {
	var b strings.Builder
	b.WriteString("clip-")
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

func pathData(s Series, xa, ya *axis) string {
	var b strings.Builder
	pen := false
	prevY := 0.0
	for j := range s.X {
		if j >= len(s.Y) || !usable(s.X[j], xa.log) || !usable(s.Y[j], ya.log) {
			pen = false
			continue
		}
		x, y := xa.pos(s.X[j]), ya.pos(s.Y[j])
		switch {
		case !pen:
			b.WriteString("M" + px(x) + " " + px(y))
		case s.Step:
			b.WriteString("L" + px(x) + " " + px(prevY) + "L" + px(x) + " " + px(y))
		default:
			b.WriteString("L" + px(x) + " " + px(y))
		}
		pen, prevY = true, y
	}
	if b.Len() == 0 {
		return "M0 0"
	}
	return b.String()
}
