// Package texttable writes the aligned tables of bootctl's text output: cells right-aligned in
// columns two spaces apart, and numbers with a fixed count of decimals, so that every command's
// tables look alike.
package texttable

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
)

// Table collects rows and aligns them when flushed.
type Table struct{ tw *tabwriter.Writer }

// New is a table written to w.
func New(w io.Writer) *Table {
	return &Table{tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)}
}

// Row adds one row; each cell is printed with fmt's default format.
func (t *Table) Row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	fmt.Fprint(t.tw, "\t\n")
}

// Flush writes the rows, aligned.
func (t *Table) Flush() error { return t.tw.Flush() }

// Fixed rounds v to prec decimals and prints them all (2.5 with 3: "2.500"). It rounds half away
// from zero (78.125 -> 78.13, as the paper prints it), unlike strconv's round-half-to-even on
// exactly representable halves.
func Fixed(v float64, prec int) string {
	p := math.Pow(10, float64(prec))
	return strconv.FormatFloat(math.Round(v*p)/p, 'f', prec, 64)
}
