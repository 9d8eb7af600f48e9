package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden reports in testdata/golden")

// goldenExt is each format's file extension under testdata/golden.
var goldenExt = map[string]string{"html": ".html", "markdown": ".md", "csv": ".csv", "json": ".json"}

// TestGolden renders the mini machine's report, with two example scenarios and one whose name and
// description need escaping, in every format and compares it byte for byte with the committed
// pages. The pages were written by the renderer before it moved to html/template, so the test holds
// the template to the page as it was; a change on purpose is recorded with -update.
func TestGolden(t *testing.T) {
	cfg := machineConfig(t, "mini", true, false)
	for _, f := range []string{"n5-10g.yaml", "n4-40g.yaml"} {
		s, err := LoadScenario(filepath.Join("..", "examples", "scenarios", f))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Scenarios = append(cfg.Scenarios, s)
	}
	odd, err := ParseScenario([]byte("name: \"<b>N5</b> & 'N4' at \\\"10G\\\"\"\ndescription: a < b > c & d\nsegments: {N5: 10000, N4: 40000}\n"), "odd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Scenarios = append(cfg.Scenarios, odd)
	rep := buildReport(t, cfg)
	for _, format := range Formats() {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			if err := rep.Write(&b, format); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", "mini"+goldenExt[format])
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./report -run Golden -update writes it)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("%s report differs from %s (%d bytes, want %d); if on purpose, rerun with -update", format, path, b.Len(), len(want))
			}
		})
	}
}
