package testcluster

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/bootfabric/bootfabric/nodestate"
)

// WriteTimelines writes a container boot's table: each node's events in seconds, then the batch
// time and the host's CPU use.
func WriteTimelines(w io.Writer, tl []Timeline, batch float64, cpu CPUUse) error {
	t := texttable.New(w)
	t.Row("node", "server", "bound s", "nbp s", "kernel s", "initrd s", "reported s", "error")
	for _, n := range tl {
		t.Row(n.Node, n.Server, texttable.Float(n.Events["bound"], 2), texttable.Float(n.Events["nbp"], 2), texttable.Float(n.Events["kernel"], 2),
			texttable.Float(n.Events["initrd"], 2), texttable.Float(n.Events["reported"], 2), n.Err)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "batch %.2f s; host CPU %.0f%% of %d cores\n", batch, cpu.Busy*100, cpu.Cores)
	return err
}

// WriteSummaries writes one row per boot server of its summary.
func WriteSummaries(w io.Writer, sums []ServerSummary) error {
	t := texttable.New(w)
	t.Row("server", "ip", "nodes", "health", "healthy", "failed", "booting", "pending", "boot s min", "median", "max")
	for _, s := range sums {
		var sum nodestate.Summary
		if err := json.Unmarshal(s.Summary, &sum); err != nil {
			return fmt.Errorf("boot server %s: summary: %w", s.Server, err)
		}
		h := sum.Health
		lo, med, hi := "-", "-", "-"
		if b := sum.BootSeconds; b != nil {
			lo, med, hi = texttable.Float(b.Min, 1), texttable.Float(b.Median, 1), texttable.Float(b.Max, 1)
		}
		t.Row(s.Server, s.IP, sum.Nodes, h.Status, h.Healthy, h.Failed, h.Booting, h.Pending, lo, med, hi)
	}
	return t.Flush()
}

// WriteMeasurements writes a row per mapping measured, the speed-up of the second over the
// first when there are two, and with nodes every node's measured and predicted time.
func WriteMeasurements(w io.Writer, results []*Measurement, nodes bool) error {
	t := texttable.New(w)
	t.Row("algo", "nodes", "measured s", "predicted s", "error", "rtt ms", "dhcp s", "host cpu")
	for _, r := range results {
		t.Row(r.Algo, len(r.Nodes), texttable.Float(r.Measured, 2), texttable.Float(r.Predicted, 2), texttable.Float(r.ErrorPct, 1)+"%",
			texttable.Float(r.RTTSeconds*1000, 3), texttable.Float(r.DHCPSeconds, 2), fmt.Sprintf("%.0f%% of %d", r.CPU.Busy*100, r.CPU.Cores))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if len(results) == 2 {
		ms, ps := results[0].Measured/results[1].Measured, results[0].Predicted/results[1].Predicted
		fmt.Fprintf(w, "%s/%s speed-up: measured %.2f, predicted %.2f (%+.1f%%)\n", results[1].Algo, results[0].Algo, ms, ps, 100*(ms-ps)/ps)
	}
	if !nodes {
		return nil
	}
	for _, r := range results {
		fmt.Fprintf(w, "\n%s\n", r.Algo)
		t := texttable.New(w)
		t.Row("node", "server", "measured s", "predicted s", "error")
		for _, n := range r.Nodes {
			t.Row(n.Node, n.Server, texttable.Float(n.Measured, 2), texttable.Float(n.Predicted, 2), texttable.Float(n.ErrorPct, 1)+"%")
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// WriteVMResults writes a row per VM booted: its time, health, the steps of its boot and its
// serial log.
func WriteVMResults(w io.Writer, res []VMResult) error {
	t := texttable.New(w)
	t.Row("vm", "server", "accel", "seconds", "health", "breakdown", "serial log")
	for _, r := range res {
		var steps []string
		for _, st := range Breakdown(r) {
			steps = append(steps, fmt.Sprintf("%s %.2f", st.Name, st.Seconds))
		}
		health := r.Health
		if r.Err != "" {
			health = "error: " + r.Err
		}
		t.Row(r.Node, r.Server, r.Accel, texttable.Float(r.Seconds, 2), health, strings.Join(steps, "; "), r.SerialLog)
	}
	return t.Flush()
}

// WriteUp reports the cluster brought up, its servers' mapping, and how to drive its lab BMCs
// (labs, nil without) as servers.
func (c *Cluster) WriteUp(w io.Writer, mapping string, labs *LabBMCs) error {
	_, err := fmt.Fprintf(w, "cluster %s up: %d nodes, %d boot servers, %d links shaped at x%g; mapping %s\n",
		c.Name, len(c.Nodes), len(c.Servers), c.Graph.NumLinks(), c.Scale, mapping)
	switch {
	case err != nil || labs == nil:
	case labs.CA != "":
		_, err = fmt.Fprintf(w, "%d nodes behind Redfish BMCs, powered off; drive them as servers:\n"+
			"  bootctl power status all --config %s --credentials %s --redfish-ca %s\n", len(labs.BMCs), labs.Config, labs.Credentials, labs.CA)
	default:
		_, err = fmt.Fprintf(w, "%d VMs behind IPMI BMCs (ipmi_sim), powered off; drive them as servers:\n"+
			"  bootctl power status all --config %s --credentials %s\n", len(labs.BMCs), labs.Config, labs.Credentials)
	}
	return err
}
