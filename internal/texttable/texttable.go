// Package texttable writes the aligned tables and cells of bootctl's table output, for the
// packages that render their own results: one layout everywhere, columns right-aligned, two
// spaces apart.
package texttable

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
	"time"
)

// Table writes aligned columns; nothing is written before Flush.
type Table struct{ tw *tabwriter.Writer }

// New returns a table that writes to w.
func New(w io.Writer) *Table {
	return &Table{tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)}
}

// Row adds a row of cells, each written as fmt.Print writes it.
func (t *Table) Row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	fmt.Fprint(t.tw, "\t\n")
}

// Flush writes the rows added.
func (t *Table) Flush() error { return t.tw.Flush() }

// WriteCSV writes rows as CSV.
func WriteCSV(w io.Writer, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// OrDash returns s, or "-" for an empty s, as table cells show nothing.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Time writes a time in UTC to the second ("-" for none): the same in every time zone.
func Time(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// Float writes v rounded to prec decimals.
func Float(v float64, prec int) string {
	p := math.Pow(10, float64(prec))
	return strconv.FormatFloat(math.Round(v*p)/p, 'f', prec, 64)
}

// Plural writes a count with its noun: "1 profile", "2 profiles".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
