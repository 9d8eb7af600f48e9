package main

import (
	"github.com/bootfabric/bootfabric/power"
	"github.com/urfave/cli/v2"
)

// identifyCommand is `bootctl power identify NODES on|off`: the nodes' identify LEDs, for the
// person walking the machine room to the node.
func identifyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name: "identify", Usage: "light the nodes' identify LED (on) or put it out (off) (Redfish BMCs)",
		ArgsUsage: "NODES... on|off",
		Description: nodesHelp + "\n" +
			"The last argument is on or off. Nodes whose driver has no identify LED (ipmi, exec) fail, the others go on.",
		Flags: powerFlags(),
		Action: func(c *cli.Context) error {
			format := c.String("output")
			opts, err := powerRunOptions(c)
			if err != nil {
				return err
			}
			sel, err := parseSelection(c)
			if err != nil {
				return err
			}
			n := len(sel.exprs)
			if n == 0 || (sel.exprs[n-1] != "on" && sel.exprs[n-1] != "off") {
				return badInput("power identify: the last argument must be on or off (power identify NODES on|off)")
			}
			opts.Identify, sel.exprs = sel.exprs[n-1] == "on", sel.exprs[:n-1]
			targets, err := powerTargets(c, sel)
			if err != nil {
				return err
			}
			return runPower(c.Context, e, power.OpIdentify, targets, opts, format, nil)
		},
	}
}

// loadRedfishTrust reads --redfish-ca into o; with neither it nor --redfish-insecure-skip-verify
// the system's roots are trusted, as a browser would.
func loadRedfishTrust(c *cli.Context, o *power.ControllerOptions) error {
	o.RedfishInsecure, o.HTTPBootURI = c.Bool("redfish-insecure-skip-verify"), c.String("http-boot-uri")
	if f := c.String("redfish-ca"); f != "" {
		if o.RedfishInsecure {
			return badInput("--redfish-ca and --redfish-insecure-skip-verify: give one, not both")
		}
		pool, err := power.LoadRedfishCA(f)
		if err != nil {
			return badInput("--redfish-ca: %w", err)
		}
		o.RedfishRoots = pool
	}
	return nil
}
