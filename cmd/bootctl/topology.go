package main

import (
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
				format := c.String("output")
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
				return m.WriteTable(e.stdout, g)
			},
		}},
	}
}
