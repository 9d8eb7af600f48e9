package main

import (
	"fmt"

	"github.com/bootfabric/bootfabric/topology"
	"github.com/urfave/cli/v2"
)

func topologyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "topology",
		Usage: "show machine descriptions",
		Subcommands: []*cli.Command{{
			Name:      "show",
			Usage:     "print a preset or a machine description file (as YAML to start a description of your own)",
			ArgsUsage: "PRESET|FILE",
			Flags:     []cli.Flag{outputFlag("table", "yaml", "json")},
			Action: func(c *cli.Context) error {
				format, err := outputFormat(c, "table", "yaml", "json")
				if err != nil {
					return err
				}
				args := c.Args().Slice() // one: the grammar checks ArgsUsage
				m, err := topology.Load(args[0])
				if err != nil {
					return asBadInput(err)
				}
				g, err := m.Build()
				if err != nil {
					return asBadInput(err)
				}
				switch format {
				case "yaml":
					text, err := m.MarshalYAMLText()
					if err != nil {
						return err
					}
					_, err = e.stdout.Write(text)
					return err
				case "json":
					return writeJSON(e.stdout, m)
				}
				return showMachine(e, m, g)
			},
		}},
	}
}

func showMachine(e *env, m *topology.Machine, g *topology.Graph) error {
	fmt.Fprintf(e.stdout, "%s: %s\n", m.Name, m.Description)
	fmt.Fprintf(e.stdout, "%d nodes, %d boot servers, %d switches, %d links\n\n", len(g.Nodes()), len(g.Servers()),
		g.NumVertices()-len(g.Nodes())-len(g.Servers()), g.NumLinks())
	t := newTable(e.stdout)
	t.row("level", "per parent", "in machine", "nodes each", "uplink", "Mb/s", "latency us")
	h := g.Hierarchy()
	for i, l := range m.Levels {
		seg, capacity, lat := "-", "-", "-"
		if l.Uplink != nil {
			seg, capacity, lat = l.Uplink.Segment, fmtFloat(l.Uplink.CapacityMbps, 0), fmtFloat(l.Uplink.LatencyUS, 1)
		}
		t.row(l.Name, l.Count, h.Total(i), h.Span(i), seg, capacity, lat)
	}
	s := m.Servers
	t.row("boot server", "", s.Count, "", s.NIC.Segment, fmtFloat(s.NIC.CapacityMbps, 0), fmtFloat(s.NIC.LatencyUS, 1))
	if s.CascadeUplink != nil {
		t.row("cascade switch", fmt.Sprintf("%d servers", s.PerCascade), (s.Count+s.PerCascade-1)/s.PerCascade, "", s.CascadeUplink.Segment,
			fmtFloat(s.CascadeUplink.CapacityMbps, 0), fmtFloat(s.CascadeUplink.LatencyUS, 1))
	}
	return t.flush()
}
