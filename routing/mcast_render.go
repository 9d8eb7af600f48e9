package routing

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/internal/texttable"
)

// CSV is the comparison as CSV records, one per algorithm, the header first.
func (sum *McastComparison) CSV() [][]string {
	head := []string{"algo", "max_efi", "mean_efi", "max_height", "mean_height"}
	if sum.Timings {
		head = append(head, "seconds")
	}
	rows := [][]string{head}
	for _, r := range sum.Results {
		rec := []string{r.Algorithm, strconv.Itoa(r.MaxEFI), texttable.Float(r.MeanEFI, 4), strconv.Itoa(r.MaxHeight), texttable.Float(r.MeanHeight, 4)}
		if sum.Timings {
			rec = append(rec, texttable.Float(r.Seconds, 4))
		}
		rows = append(rows, rec)
	}
	return rows
}

// WriteTable writes the summary line and one row per algorithm.
func (sum *McastComparison) WriteTable(w io.Writer) error {
	var parts []string
	for _, s := range sum.Sets {
		parts = append(parts, fmt.Sprintf("%s %d", s.Spec, s.Groups))
	}
	hop := ""
	if sum.Timings {
		hop = fmt.Sprintf("; hop tables %.3f s", sum.HopTableSeconds)
	}
	fmt.Fprintf(w, "%s: %d endpoints, %d switches; %d groups (%s)%s\n", sum.Topology, sum.Endpoints,
		sum.Switches, sum.Groups, strings.Join(parts, ", "), hop)
	t := texttable.New(w)
	head := []any{"algo", "max EFI", "mean EFI", "max height", "mean height"}
	if sum.Timings {
		head = append(head, "seconds")
	}
	t.Row(head...)
	for _, r := range sum.Results {
		row := []any{r.Algorithm, r.MaxEFI, texttable.Float(r.MeanEFI, 2), r.MaxHeight, texttable.Float(r.MeanHeight, 2)}
		if sum.Timings {
			row = append(row, texttable.Float(r.Seconds, 3))
		}
		t.Row(row...)
	}
	return t.Flush()
}
