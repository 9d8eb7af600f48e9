package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/units"
	"github.com/urfave/cli/v2"
)

// deliveryFlag is --delivery of plan, report and boot --dry-run: server, or p2p beside it.
func deliveryFlag() *choiceFlag {
	return withChoices(cli.StringFlag{Name: "delivery", Value: "server",
		Usage: "root image delivery: server (every byte from the boot server) or p2p (the kernel from the server, the root image by peers, own board first; shown beside server)"},
		"server", "p2p")
}

// choiceValue returns flag name's value if it is one of choices, else a usage error naming the
// flag, the choices and the nearest one.
func choiceValue(c *cli.Context, name string, choices ...string) (string, error) {
	v := c.String(name)
	if slices.Contains(choices, v) {
		return v, nil
	}
	msg := fmt.Sprintf("--%s: %q is not one of %s", name, v, strings.Join(choices, ", "))
	if s := nearest(v, choices); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return "", badInput("%s", msg)
}

// readDelivery returns --delivery, checked.
func readDelivery(c *cli.Context) (fabricsim.Delivery, error) {
	v, err := choiceValue(c, "delivery", "server", "p2p")
	if err != nil {
		return 0, err
	}
	return fabricsim.ParseDelivery(v)
}

// p2pSplit is what peer delivery takes from the servers and from peers: a profile's kernel and
// initrd, else fabricsim.P2PSplit of the image size.
func (in *machineInput) p2pSplit() (serverBytes, rootBytes float64) {
	if in.Profile != "" {
		return float64(in.KernelBytes), float64(in.InitrdBytes)
	}
	return fabricsim.P2PSplit(in.ImageBytes)
}

// p2pHeader is the line that says what peer delivery's column is of.
func p2pHeader(server, root float64) string {
	return fmt.Sprintf("delivery p2p: %s from the servers, then the root image (%s) by peers (own board first) in %d KiB pieces",
		units.FormatBytes(server), units.FormatBytes(root), fabricsim.DefaultPieceBytes>>10)
}

// p2pCells are a plan row's peer delivery cells: boot seconds, of which the kernel from the
// servers and the root stage (prec decimals), the root stage's bottlenecks joined by sep, the
// servers' seeding (in CSV the schedule and the copies the servers send), the ratio to server
// delivery; "-" for an empty batch.
func p2pCells(p *fabricsim.P2PPlan, prec int, sep string) []string {
	if p == nil {
		return []string{"-", "-", "-", "-", "-", "-"}
	}
	return []string{fmtFloat(p.BootSeconds, prec), fmtFloat(p.ServerSeconds, prec), fmtFloat(p.Root.Seconds, prec),
		strings.Join(p.Root.Bottlenecks, sep), p.Root.Seeding(), fmtFloat(p.SpeedupVsServer, prec)}
}

// checkP2P refuses peer delivery when the image leaves nothing for peers to deliver (a profile
// without an initrd).
func (in *machineInput) checkP2P(d fabricsim.Delivery) error {
	if _, root := in.p2pSplit(); d == fabricsim.P2PDelivery && !(root > 0) {
		return badInput("--delivery p2p: the image has no root image for peers to deliver (profile %s: initrd %d bytes)", in.Profile, in.InitrdBytes)
	}
	return nil
}
