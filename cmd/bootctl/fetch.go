package main

import (
	"github.com/bootfabric/bootfabric/delivery/fetchcli"
	"github.com/urfave/cli/v2"
)

// fetchCommand is the node side of peer delivery. It is a top-level verb, not under `node` (the
// operator's commands about nodes): it runs on the node itself, from its agent initramfs, where
// bootfetch (cmd/bootfetch) is the same command in a small binary.
func fetchCommand(e *env) *cli.Command {
	c := fetchcli.Command(e.stdout)
	c.UsageText = "bootctl " + c.UsageText
	return c
}
