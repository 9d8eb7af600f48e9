package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// chromium returns the path of headless Chromium (Debian package chromium), or skips the test
// outside CI when it is not installed; in CI (CI set) it is installed by scripts/test, so its
// absence is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	testenv.Skip(t, "chromium is not installed (Debian package chromium; scripts/test installs it when root)")
	return ""
}

// screenshot renders the HTML file at page to a PNG of the given size with headless Chromium,
// offline: no background networking, no component updates, a throw-away profile.
func screenshot(t *testing.T, page string, width, height int) image.Image {
	t.Helper()
	bin := chromium(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+out,
		"--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height), "file://"+page)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v\n%s", err, stderr.String())
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return img
}

// inkStats returns the fraction of pixels that are not near-white, and whether each colour of
// the palette's first n entries appears somewhere.
func inkStats(img image.Image, n int) (float64, []bool) {
	b := img.Bounds()
	ink := 0
	want := make([][3]uint8, n)
	for i := range want {
		v, _ := strconv.ParseUint(palette[i][1:], 16, 32)
		want[i] = [3]uint8{uint8(v >> 16), uint8(v >> 8), uint8(v)}
	}
	seen := make([]bool, n)
	near := func(a, b uint8) bool { return max(a, b)-min(a, b) < 12 }
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r8, g8, b8 := uint8(r>>8), uint8(g>>8), uint8(bl>>8)
			if r8 < 235 || g8 < 235 || b8 < 235 {
				ink++
			}
			for i, w := range want {
				if !seen[i] && near(r8, w[0]) && near(g8, w[1]) && near(b8, w[2]) {
					seen[i] = true
				}
			}
		}
	}
	return float64(ink) / float64(b.Dx()*b.Dy()), seen
}

// TestRenderInChromium renders the paper machine's full report as a person sees it: the page must
// not be blank, the series colours must show, and every plot must have axes, labels and a legend.
// The headline, read from the page as Chromium rendered it, must be what `bootctl simulate` prints
// as the batch time for the same batch.
func TestRenderInChromium(t *testing.T) {
	chromium(t)
	cfg := paperConfig(t, true, true)
	rep := buildReport(t, cfg)
	path := filepath.Join(t.TempDir(), "report.html")
	if err := rep.WriteFile(path, "html"); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := checkPlots(t, string(page)); n != 2+len(rep.Algos)+2 {
		t.Errorf("%d plots, want %d", n, 2+len(rep.Algos)+2)
	}
	// Tall enough for the headline, both boot-time plots and the first per-segment plots.
	img := screenshot(t, path, 1100, 4200)
	if b := img.Bounds(); b.Dx() != 1100 || b.Dy() != 4200 {
		t.Errorf("screenshot is %v, want 1100x4200", b)
	}
	ink, seen := inkStats(img, 4)
	if ink < 0.03 {
		t.Errorf("screenshot is nearly blank: %.2f%% of pixels inked", 100*ink)
	}
	for i, ok := range seen {
		if !ok {
			t.Errorf("series colour %s does not appear in the screenshot", palette[i])
		}
	}
	t.Logf("screenshot: %.1f%% of pixels inked", 100*ink)

	dom := dumpDOM(t, path)
	for _, batch := range []string{"1 board", "40 cabinets"} {
		want := simulateBatchSeconds(t, cfg, "bcda", batch)
		re := regexp.MustCompile(`<td class="e2e" data-batch="` + regexp.QuoteMeta(batch) + `" data-seconds="([^"]+)"><b>([^<]+)</b></td>`)
		m := re.FindStringSubmatch(dom)
		if m == nil {
			t.Errorf("%s: no end-to-end headline cell in the rendered page", batch)
			continue
		}
		got, err := strconv.ParseFloat(m[1], 64)
		if err != nil || got != want {
			t.Errorf("%s: headline %s s (%v), simulate says %v s", batch, m[1], err, want)
		}
		if shown := fmtFixed(want, 3); m[2] != shown {
			t.Errorf("%s: headline shows %q, simulate prints %q", batch, m[2], shown)
		}
		t.Logf("%s: headline %s s = simulate's batch time", batch, m[2])
	}
}

// simulateBatchSeconds is `bootctl simulate --algo ALGO --batch BATCH` with every other flag at
// its default, computed as the command computes it: the fleet's ownership rule (AssignOwners) and
// fabricsim's default flow configuration for TFTP, whose files are simulate's default --files.
func simulateBatchSeconds(t *testing.T, cfg Config, algoName, batch string) float64 {
	t.Helper()
	g, err := cfg.Machine.Build()
	if err != nil {
		t.Fatal(err)
	}
	algo, err := mapping.ParseAlgo(algoName, g.Hierarchy())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cfg.Batches, func(b topology.Batch) bool { return b.Label == batch })
	if i < 0 {
		t.Fatalf("no batch %q", batch)
	}
	nodes := cfg.Batches[i].Nodes
	a, _, err := mapping.AssignOwners(g, algo, nodes, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fabricsim.Simulate(context.Background(), g, nil, a, nodes, fabricsim.DefaultFlowConfig(fabricsim.TFTP))
	if err != nil {
		t.Fatal(err)
	}
	return res.BatchSeconds
}

// dumpDOM returns the page as headless Chromium parsed and laid it out (--dump-dom).
func dumpDOM(t *testing.T, page string) string {
	t.Helper()
	bin := chromium(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+page)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

// TestDocsFigure renders the headline's plot of the paper machine alone, as in docs/report.md: the
// end-to-end boot time. With BOOTFABRIC_DOCS_PNG=path it also writes the PNG there (the committed
// docs/report-boot-time.png).
func TestDocsFigure(t *testing.T) {
	chromium(t)
	rep := buildReport(t, paperConfig(t, true, false))
	c := rep.bootChart(true)
	c.Title = "End-to-end boot time of a 50 MB image (sunway, flow model)"
	page := "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>body{margin:0}svg{display:block}</style></head><body>" + c.SVG() + "</body></html>"
	path := filepath.Join(t.TempDir(), "figure.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	// The chart is as wide as its legend needs (720 px at least).
	m := regexp.MustCompile(`<svg class="plot"[^>]* width="(\d+)" height="(\d+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no plot size in the figure")
	}
	w, _ := strconv.Atoi(m[1])
	h, _ := strconv.Atoi(m[2])
	img := screenshot(t, path, w, h)
	if ink, _ := inkStats(img, 4); ink < 0.03 {
		t.Errorf("figure is nearly blank: %.2f%% inked", 100*ink)
	}
	if out := os.Getenv("BOOTFABRIC_DOCS_PNG"); out != "" {
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExtensions: every format has an extension, and no extension names two formats.
func TestExtensions(t *testing.T) {
	seen := map[string]string{}
	for _, f := range Formats() {
		exts := Extensions(f)
		if len(exts) == 0 {
			t.Errorf("format %s has no extension", f)
		}
		for _, e := range exts {
			if prev, dup := seen[e]; dup {
				t.Errorf("%s is the extension of %s and %s", e, prev, f)
			}
			seen[e] = f
		}
	}
	if Extensions("pdf") != nil || Extensions("html")[0] != ".html" {
		t.Errorf("pdf: %v, html: %v", Extensions("pdf"), Extensions("html"))
	}
}
