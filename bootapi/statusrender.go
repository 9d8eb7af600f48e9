package bootapi

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/bootfabric/bootfabric/nodestate"
)

// WriteCSV writes one row per node, the unknown ones last.
func (res *Status) WriteCSV(w io.Writer) error {
	rows := [][]string{{"node", "server", "state", "since", "attempt", "ip", "mac", "position", "error", "power", "reboot"}}
	for _, n := range res.Nodes {
		since := ""
		if !n.Since.IsZero() {
			since = n.Since.UTC().Format(time.RFC3339)
		}
		power, reboot := n.Marks()
		rows = append(rows, []string{n.Name, n.Server, n.State.String(), since, strconv.Itoa(n.Attempt), n.IP, n.MAC, n.Position, n.Error, power, reboot})
	}
	for _, u := range res.Unknown {
		rows = append(rows, []string{u.Name, u.Owner, "unknown", "", "", u.IP, u.MAC, u.Position, u.Reason, "", ""})
	}
	return texttable.WriteCSV(w, rows)
}

// WriteTable writes the summary lines, then one row per node, its time in its state as of now.
func (res *Status) WriteTable(w io.Writer, now time.Time) error {
	res.writeSummary(w)
	if len(res.Nodes)+len(res.Unknown) == 0 {
		return nil
	}
	t := texttable.New(w)
	t.Row("node", "server", "state", "since", "attempt", "ip", "mac", "position", "detail")
	for _, n := range res.Nodes {
		since := "-"
		if !n.Since.IsZero() {
			since = now.Sub(n.Since).Round(time.Second).String() + " ago"
		}
		t.Row(n.Name, texttable.OrDash(n.Server), n.State, since, n.Attempt, texttable.OrDash(n.IP), n.MAC, n.Position, texttable.OrDash(n.Detail()))
	}
	for _, u := range res.Unknown {
		t.Row(u.Name, texttable.OrDash(u.Owner), "unknown", "-", "-", texttable.OrDash(u.IP), u.MAC, u.Position, u.Reason)
	}
	return t.Flush()
}

// writeSummary writes the lines above the nodes' table: the summary, the counts by state, the
// fleet's live servers and the servers that did not answer, then a blank line.
func (res *Status) writeSummary(w io.Writer) {
	s := res.Summary
	fmt.Fprintf(w, "%s: %d nodes, health %s (%d healthy, %d failed, %d booting, %d pending)", s.Server, s.Nodes,
		s.Health.Status, s.Health.Healthy, s.Health.Failed, s.Health.Booting, s.Health.Pending)
	if b := s.BootSeconds; b != nil {
		fmt.Fprintf(w, "; discover to healthy min %s s, median %s s, max %s s", texttable.Float(b.Min, 1), texttable.Float(b.Median, 1), texttable.Float(b.Max, 1))
	}
	fmt.Fprintln(w)
	var counts []string
	for _, st := range nodestate.States() {
		if n := res.ByState[st]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", st, n))
		}
	}
	if res.UnknownCount > 0 {
		counts = append(counts, fmt.Sprintf("unknown %d", res.UnknownCount))
	}
	fmt.Fprintf(w, "by state: %s\n", strings.Join(counts, ", "))
	if res.Fleet != "" {
		var live []string
		for _, m := range res.Members {
			live = append(live, m.Name)
		}
		fmt.Fprintf(w, "fleet %s: %d live servers (%s)\n", res.Fleet, len(live), strings.Join(live, ", "))
	}
	for _, u := range res.Unreachable {
		fmt.Fprintf(w, "NOT ANSWERING: %s (%s)\n", u.URL, u.Error)
	}
	fmt.Fprintln(w)
}
