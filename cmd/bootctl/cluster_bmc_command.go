package main

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/internal/redfishsim"
	"github.com/bootfabric/bootfabric/testcluster"
	"github.com/urfave/cli/v2"
)

// parseMachineCommands parses cluster bmc's --command NAME=SHELL-COMMAND flags, in their order.
func parseMachineCommands(flags []string) ([]string, map[string]string, error) {
	cmds := map[string]string{}
	var names []string
	for _, f := range flags {
		name, command, ok := strings.Cut(f, "=")
		switch {
		case !ok || strings.TrimSpace(command) == "":
			return nil, nil, badInput("--command: %q: want NAME=SHELL-COMMAND", f)
		case name == "" || strings.ContainsAny(name, "/?#% "):
			return nil, nil, badInput("--command: %q: the name must be a non-empty path segment (no / ? # %% or space)", f)
		case cmds[name] != "":
			return nil, nil, badInput("--command: %q: system %s is named twice", f, name)
		}
		cmds[name] = command
		names = append(names, name)
	}
	return names, cmds, nil
}

// commandBMCAction serves one Redfish BMC whose systems are commands (--command): what the
// netns test clusters' nodes are behind, their boot script being their firmware.
func commandBMCAction(e *env, c *cli.Context, format string) error {
	switch {
	case c.Args().Len() > 0:
		return badInput("--command: the machines are the commands; give no QEMU command after --")
	case c.IsSet("system"):
		return badInput("--system: with --command, each command names its system")
	}
	names, cmds, err := parseMachineCommands(c.StringSlice("command"))
	if err != nil {
		return err
	}
	opts, err := labBMCOptions(c)
	if err != nil {
		return err
	}
	machines := map[string]redfishsim.Machine{}
	logs := map[string]string{}
	for _, name := range names {
		logs[name] = filepath.Join(c.String("dir"), name+".log")
		machines[name] = &redfishsim.CommandMachine{Command: cmds[name], Log: logs[name]}
	}
	opts.Systems = names
	return serveRedfishLab(e, c, format, opts, machines, testcluster.LabBMCReport{Systems: slices.Clone(names), Logs: logs})
}
