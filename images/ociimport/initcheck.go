package ociimport

import (
	"fmt"
	"strings"

	"github.com/bootfabric/bootfabric/images"
)

// initPath is the init the booted image starts and where that comes from: with the agent,
// bootfabric.init= on the command line or /sbin/init; without it, rdinit= or the kernel's /init.
func (b *build) initPath() (string, string) {
	key, init, from := "rdinit=", "/init", "the kernel's default"
	if b.opt.Busybox != "" {
		key, init, from = "bootfabric.init=", "/sbin/init", "what the agent starts"
	}
	for _, f := range strings.Fields(b.opt.Cmdline) {
		if v, ok := strings.CutPrefix(f, key); ok {
			init, from = v, key+" on --cmdline"
		}
	}
	return init, from
}

// initWarning says when the image has no executable file at the init path (symbolic links
// followed as at boot): the node would boot, report and then have nothing to run.
func (b *build) initWarning() string {
	init, from := b.initPath()
	_, n := b.t.follow(strings.TrimPrefix(init, "/"))
	if n != nil && n.meta.mode&images.CpioTypeMask == images.CpioRegular && n.meta.mode&0o111 != 0 {
		return ""
	}
	what := "no"
	if n != nil {
		what = "no executable"
	}
	if b.opt.Busybox != "" {
		return fmt.Sprintf("the image has %s %s (%s): its nodes will report failed and stop; install an init (systemd-sysv, sysvinit-core, or a shell as /sbin/init) or name one with bootfabric.init=PATH in --cmdline", what, init, from)
	}
	return fmt.Sprintf("the image has %s %s (%s): the kernel will find nothing to run; name its init with rdinit=PATH in --cmdline, or keep the agent", what, init, from)
}
