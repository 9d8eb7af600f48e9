package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Formats lists the output formats, the default first.
func Formats() []string { return []string{"html", "markdown", "csv", "json"} }

// Write writes the report in format (see Formats).
func (rep *Report) Write(w io.Writer, format string) error {
	switch format {
	case "html":
		return rep.WriteHTML(w)
	case "markdown":
		return rep.WriteMarkdown(w)
	case "csv":
		return rep.WriteCSV(w)
	case "json":
		return rep.WriteJSON(w)
	}
	return fmt.Errorf("unknown report format %q (want %s)", format, strings.Join(Formats(), ", "))
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteCSV writes one record per scenario, batch and algorithm with every number of the model.
func (rep *Report) WriteCSV(w io.Writer) error {
	head := []string{"scenario", "batch", "nodes", "algo", "servers_used"}
	for _, s := range rep.Segments {
		head = append(head, s+"_mbps")
	}
	head = append(head, "bandwidth_mbps", "bottlenecks", "boot_seconds", "flow_seconds", "speedup_vs_scda", "flow_speedup_vs_scda")
	p2p := rep.Delivery == "p2p"
	if p2p {
		head = append(head, "p2p_seconds", "p2p_root_bottlenecks", "p2p_seeding")
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, cs := range rep.cases() {
		for _, r := range cs.Rows {
			rec := []string{cs.Name, r.Batch, strconv.Itoa(r.Nodes), r.Algo, strconv.Itoa(r.ServersUsed)}
			for _, s := range rep.Segments {
				v, _ := segMin(&r, s)
				rec = append(rec, csvNum(v))
			}
			flow := "" // empty where the flow model did not run
			if r.FlowSeconds != 0 {
				flow = fmtFixed(r.FlowSeconds, 4)
			}
			rec = append(rec, fmtFixed(r.BandwidthMbps, 4), strings.Join(r.Bottlenecks, " "), fmtFixed(r.BootSeconds, 4), flow, csvNum(r.SpeedupVsSCDA), csvNum(r.FlowSpeedupVsSCDA))
			if p2p {
				rec = append(rec, p2pCSV(r.P2P)...)
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvNum(v float64) string {
	if v != v || v == 0 { // NaN: segment not crossed; 0: no ratio
		return ""
	}
	return fmtFixed(v, 4)
}

// Extensions are the file extensions of a report format, the first the one a file gets by
// default.
func Extensions(format string) []string {
	switch format {
	case "html":
		return []string{".html", ".htm"}
	case "markdown":
		return []string{".md", ".markdown"}
	case "csv":
		return []string{".csv"}
	case "json":
		return []string{".json"}
	}
	return nil
}
