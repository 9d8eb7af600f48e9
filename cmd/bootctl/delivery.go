package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/internal/suggest"
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
	if s := suggest.Nearest(v, choices); s != "" {
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

// p2pSplit is what peer delivery takes from the servers and from peers: a two-stage profile's
// kernel and agent initrd, then its root image; a one-stage profile's kernel, then its initrd;
// else fabricsim.P2PSplit of the image size.
func (in *machineInput) p2pSplit() (serverBytes, rootBytes float64) {
	if in.RootBytes > 0 {
		return float64(in.KernelBytes + in.InitrdBytes), float64(in.RootBytes)
	}
	if in.Profile != "" {
		return float64(in.KernelBytes), float64(in.InitrdBytes)
	}
	return fabricsim.P2PSplit(in.ImageBytes)
}

// checkP2P refuses peer delivery when the image leaves nothing for peers to deliver (a profile
// without an initrd).
func (in *machineInput) checkP2P(d fabricsim.Delivery) error {
	if _, root := in.p2pSplit(); d == fabricsim.P2PDelivery && !(root > 0) {
		return badInput("--delivery p2p: the image has no root image for peers to deliver (profile %s: initrd %d bytes)", in.Profile, in.InitrdBytes)
	}
	return nil
}
