package ociimport

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/images"
)

// AgentDir is where the agent's files go in the image: a name no distribution uses.
const AgentDir = ".bootfabric"

// agentLayout is the agent's layout in an imported image: its files under AgentDir, and the
// image's own /sbin/init after the report, as PID 1 still, so that systemd or a shell runs as it
// would on a disk. The busybox applets are called by path, so nothing of the image is shadowed.
func agentLayout() images.AgentLayout {
	d := "/" + AgentDir
	return images.AgentLayout{Busybox: d + "/busybox", ModulesDir: d + "/modules", ModulesOrder: d + "/modules.order",
		DHCPScript: d + "/udhcpc.script", IPFile: d + "/ip", Init: "/sbin/init"}
}

// stageOneLayout is the agent's layout as the first stage of a two-stage profile: the same files,
// with bootfetch beside them, seeding for seedFor unless the kernel line says otherwise.
func stageOneLayout(seedFor time.Duration) images.AgentLayout {
	l := agentLayout()
	l.Fetcher, l.SeedFor, l.Home = "/"+AgentDir+"/bootfetch", seedFor.String(), "/"+AgentDir
	return l
}

// writeAgent appends the agent after the image's files, so that its /init wins over any the
// image has: the kernel unpacks entries in order, a later one replacing an earlier. modules are
// kernel modules the agent loads, in order, before it brings the network up. A first stage
// (l.Fetcher) carries the static fetcher, from the file fetcher.
func (e *emitter) writeAgent(busybox string, modules []agentModule, l images.AgentLayout, fetcher string) error {
	if err := e.put(AgentDir, meta{mode: images.CpioDir | 0o755}, e.ino(), 2, 0); err != nil {
		return err
	}
	if err := e.copyFile(busybox, AgentDir+"/busybox", images.CpioRegular|0o755); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if l.Fetcher != "" {
		if err := e.copyFile(fetcher, AgentDir+"/bootfetch", images.CpioRegular|0o755); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	if err := e.writeModules(modules); err != nil {
		return err
	}
	if err := e.writeConsole(); err != nil {
		return err
	}
	for _, s := range []struct{ name, body string }{{AgentDir + "/udhcpc.script", images.AgentDHCPScript(l)}, {"init", images.AgentInit(l)}} {
		if err := e.put(s.name, meta{mode: images.CpioRegular | 0o755}, e.ino(), 1, int64(len(s.body))); err != nil {
			return err
		}
		if err := e.bytes(s.body); err != nil {
			return err
		}
	}
	return nil
}

// writeModules adds the modules under AgentDir/modules, uncompressed, and their order in
// AgentDir/modules.order.
func (e *emitter) writeModules(modules []agentModule) error {
	if len(modules) == 0 {
		return nil
	}
	if err := e.put(AgentDir+"/modules", meta{mode: images.CpioDir | 0o755}, e.ino(), 2, 0); err != nil {
		return err
	}
	var order strings.Builder
	for _, m := range modules {
		data, err := m.moduleBytes()
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		if err := e.put(AgentDir+"/modules/"+m.name, meta{mode: images.CpioRegular | 0o644}, e.ino(), 1, int64(len(data))); err != nil {
			return err
		}
		if _, err := e.cw.Write(data); err != nil {
			return err
		}
		order.WriteString(m.name + "\n")
	}
	if err := e.put(AgentDir+"/modules.order", meta{mode: images.CpioRegular | 0o644}, e.ino(), 1, int64(order.Len())); err != nil {
		return err
	}
	return e.bytes(order.String())
}

// copyFile writes the file at src as the archive entry name.
func (e *emitter) copyFile(src, name string, mode uint32) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if err := e.put(name, meta{mode: mode}, e.ino(), 1, fi.Size()); err != nil {
		return err
	}
	if err := e.data(f, fi.Size()); err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}

// writeConsole adds /dev/console when the image has none (container images often have an empty
// /dev): the kernel opens it for init's output before the agent can mount devtmpfs.
func (e *emitter) writeConsole() error {
	if e.t.lookup("dev/console") != nil {
		return nil
	}
	if d := e.t.lookup("dev"); d == nil {
		if err := e.put("dev", meta{mode: images.CpioDir | 0o755}, e.ino(), 2, 0); err != nil {
			return err
		}
	} else if d.children == nil {
		return nil // not a directory: leave the image as it is
	}
	return e.put("dev/console", meta{mode: images.CpioCharDev | 0o600, rmajor: 5, rmin: 1}, e.ino(), 1, 0)
}
