package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// outputFlag is the --output flag of a command that supports the given formats (the first is the
// default).
func outputFlag(formats ...string) *cli.StringFlag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: formats[0],
		Usage: "result format: " + strings.Join(formats, ", ")}
}

// outputFormat returns the checked value of --output.
func outputFormat(c *cli.Context, formats ...string) (string, error) {
	f := c.String("output")
	if !slices.Contains(formats, f) {
		return "", badInput("--output: %q is not one of %s", f, strings.Join(formats, ", "))
	}
	return f, nil
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table {
	return &table{tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)}
}

func (t *table) row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	fmt.Fprint(t.tw, "\t\n")
}

func (t *table) flush() error { return t.tw.Flush() }

// writeCSV writes rows as CSV.
func writeCSV(w io.Writer, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// isTerminal reports whether w is a terminal, where progress may be shown.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
