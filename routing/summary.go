package routing

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/internal/texttable"
)

// Summary is the result of bootctl route: the tables' size and their check.
type Summary struct {
	Topology       string  `json:"topology"`
	Engine         string  `json:"engine"`
	Faults         int     `json:"faults"`
	ComputeSeconds float64 `json:"compute_seconds,omitempty"` // with timings only
	TableBytes     int     `json:"table_bytes"`
	BytesPerEntry  float64 `json:"bytes_per_entry"`
	Report         *Report `json:"report"`
	// DumpFiles are the files a dump wrote: the LFTs, and for tables on several virtual channels
	// the path SLs (.sl) and the SL-to-VL tables (.sl2vl).
	DumpFiles []string `json:"dump_files,omitempty"`
	// DumpCheck is the reading of the dumped files, when they were checked.
	DumpCheck *DumpCheck `json:"dump_check,omitempty"`
	// Took is the time the tables took, shown in the table with timings only (0: not shown):
	// wall-clock times differ from run to run.
	Took time.Duration `json:"-"`
}

// WriteTable writes the summary a field a line.
func (sum *Summary) WriteTable(w io.Writer) error {
	rep := sum.Report
	t := texttable.New(w)
	t.Row("topology", sum.Topology)
	t.Row("engine", sum.Engine)
	t.Row("faults", sum.Faults)
	t.Row("switches", rep.Switches)
	t.Row("endpoints", fmt.Sprintf("%d (%d healthy)", rep.Endpoints, rep.Healthy))
	if sum.Took > 0 {
		t.Row("compute", sum.Took.Round(time.Microsecond))
	}
	t.Row("table bytes", fmt.Sprintf("%d (%.2f per entry)", sum.TableBytes, sum.BytesPerEntry))
	t.Row("valid", rep.Valid)
	t.Row("unreachable pairs", rep.Unreachable)
	t.Row("loops", rep.Loops)
	if rep.UpDownChecked {
		t.Row("up*/down* violations", rep.UpDownViolations)
	}
	t.Row("virtual channels", rep.VCs)
	t.Row("deadlock free", rep.DeadlockFree)
	if rep.AllToAll != nil {
		t.Row("all-to-all routes/channel", fmt.Sprintf("max %d, mean %.1f", rep.AllToAll.Max, rep.AllToAll.Mean))
	}
	if rep.Shift != nil {
		t.Row("shift routes/channel", fmt.Sprintf("max %d, mean of max %.2f over %d shifts", rep.Shift.Max, rep.Shift.MeanMax, rep.Shift.Shifts))
	}
	if len(sum.DumpFiles) > 0 {
		t.Row("dump", strings.Join(sum.DumpFiles, ", "))
	}
	if d := sum.DumpCheck; d != nil {
		t.Row("dump read back", fmt.Sprintf("%d pairs, %d unreachable, %d loops, %d SLs, %d VLs", d.Paths, d.Unreachable, d.Loops, d.SLs, d.VLs))
		t.Row("dump deadlock free", d.DeadlockFree)
	}
	return t.Flush()
}
