package main

import (
	"fmt"
	"io"

	"github.com/bootfabric/bootfabric/bootrun"
	"github.com/bootfabric/bootfabric/fabricsim/simrun"
)

// simWrite prints the runs in format.
func simWrite(w io.Writer, format string, job *simJob, runs []simrun.Run) error {
	g := job.in.Graph
	switch format {
	case "json", "yaml":
		for i := range runs {
			if runs[i].Health != nil {
				runs[i].Health = runs[i].Health.ForJSON(job.opt.healthNodes)
			}
		}
		return writeData(w, format, simJSON{Topology: g.Name, Nodes: len(g.Nodes()), Servers: len(g.Servers()), Calibration: job.cal, Runs: runs})
	case "csv":
		return simrun.WriteCSV(w, runs)
	}
	if err := simrun.WriteTable(w, g, runs); err != nil {
		return err
	}
	if err := simrun.WriteFailures(w, runs); err != nil {
		return err
	}
	if job.cal != nil {
		fmt.Fprintf(w, "\nDHCP %.3f s and health %.3f s per node, ", job.cfg.DHCPSeconds, job.cfg.HealthSeconds)
		job.cal.WriteTable(w)
	}
	return simrun.WriteHealth(w, runs)
}

type simJSON struct {
	Topology string `json:"topology"`
	Nodes    int    `json:"nodes"`
	Servers  int    `json:"servers"`
	// Calibration is what --calibrate fitted the DHCP and health times from.
	Calibration *bootrun.Calibration `json:"calibration,omitempty"`
	Runs        []simrun.Run         `json:"runs"`
}
