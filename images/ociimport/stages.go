package ociimport

import (
	"bufio"
	"fmt"

	"github.com/bootfabric/bootfabric/images"
)

// The files of a two-stage profile (Options.Fetcher): iPXE loads the kernel and StageOneName from
// the boot server; the agent fetches RootName through the fabric.
const (
	StageOneName = "agent.cpio.gz"
	RootName     = "root.cpio.gz"
)

// stageOne writes the first stage of a two-stage profile: the agent alone (busybox, the fetcher,
// the modules, /init), after the second pass, which captured the image's modules.
func (b *build) stageOne() error {
	out, err := b.stage(StageOneName)
	if err != nil {
		return err
	}
	zw, err := compressor(out, Gzip)
	if err != nil {
		out.Close()
		return err
	}
	bw := bufio.NewWriterSize(zw, 1<<20)
	e := newEmitter(newTree())
	e.cw = images.NewCpioWriter(bw)
	err = endArchive(e.cw, bw, zw, out, e.writeAgent(b.opt.Busybox, b.modules, stageOneLayout(b.opt.SeedFor), b.opt.Fetcher))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ociimport: writing the first stage: %w", err)
	}
	return nil
}
