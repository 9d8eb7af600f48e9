package testcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bootfabric/bootfabric/images"
	"go.uber.org/zap"
	"gopkg.in/yaml.v3"
)

// VMImage is what the qemu kind's VMs boot: a kernel, an initramfs built by images with the
// kernel's network modules, and a command line.
type VMImage struct {
	// Kernel is the kernel to boot; zero: FindKernel("", "") (Debian's linux-image-amd64).
	Kernel Kernel
	// Modules are loaded by the initramfs, with their dependencies; nil: DefaultVMModules.
	Modules []string
	// Busybox is the static busybox of the initramfs; empty: images.DefaultBusybox.
	Busybox string
	// Cmdline is the kernel command line; empty: DefaultVMCmdline.
	Cmdline string
	// Import, when set, is a container image (OCI layout, OCI archive or docker save tarball)
	// imported with bootctl image import, with its agent and the modules, instead of the busybox
	// test initramfs: the VMs boot the image's own userspace.
	Import string
	// Fetcher, with Import, imports it for peer delivery (--delivery p2p): the VMs boot a small
	// agent initrd that fetches the root image with this static bootfetch.
	Fetcher string
}

// DefaultVMCmdline keeps the kernel's part of a VM boot short: serial console without the kernel's
// own messages (every character costs an emulated UART write), no IPv6 (nothing to wait for), no
// speculative-execution mitigations (emulated, they only cost time), no timer IRQ check (under TCG
// on a loaded host the vCPU can miss the check's window and the kernel panics with "IO-APIC +
// timer doesn't work", as a guest of a busy hypervisor does; cloud images boot with it too), and a
// power-off (QEMU exits under -no-reboot) rather than a hang if the kernel panics.
const DefaultVMCmdline = "console=ttyS0,115200 quiet ipv6.disable=1 mitigations=off no_timer_check panic=-1"

// StartQEMUServers is StartServers for the qemu kind: the image store's profile "default" holds
// img's kernel and an initramfs made by images.WriteInitramfs, whose /init loads the network
// modules, gets its address by DHCP, reports health and powers off. opt.Files sizes are ignored;
// opt.Files.NBP still names the iPXE directory for TFTP.
func (c *Cluster) StartQEMUServers(ctx context.Context, opt ServerOptions, img VMImage) error {
	dir := c.dir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if img.Kernel.Image == "" {
		k, err := FindKernel("", "")
		if err != nil {
			return err
		}
		img.Kernel = k
	}
	if img.Modules == nil {
		img.Modules = DefaultVMModules
	}
	if img.Cmdline == "" {
		img.Cmdline = DefaultVMCmdline
	}
	mods, err := ModuleFiles(img.Kernel.ModulesDir, img.Modules)
	if err != nil {
		return err
	}
	if err := c.addDefaultProfile(ctx, opt.Bootctl, img, mods); err != nil {
		return err
	}
	// The VMs' taps and bridges are made now, so that a boot does not wait for fresh bridge ports.
	for i := range c.Nodes {
		if err := c.attachTap(ctx, i); err != nil {
			return err
		}
	}
	return c.startServersWithImages(ctx, opt)
}

// addDefaultProfile stores the VMs' profile "default": img's kernel with the busybox test
// initramfs, or with the container image img.Import imported.
func (c *Cluster) addDefaultProfile(ctx context.Context, bootctl string, img VMImage, mods []string) error {
	dir := c.dir()
	args := []string{"--store", filepath.Join(dir, "images"), "--name", "default", "--kernel", img.Kernel.Image, "--cmdline", img.Cmdline}
	if img.Import != "" {
		args = append([]string{"image", "import"}, args...)
		if img.Busybox != "" {
			args = append(args, "--busybox", img.Busybox)
		}
		for _, m := range mods {
			args = append(args, "--module", m)
		}
		if img.Fetcher != "" {
			args = append(args, "--delivery", "p2p", "--fetcher", img.Fetcher)
		}
		_, err := c.run.Run(ctx, append(append([]string{bootctl}, args...), img.Import)...)
		return err
	}
	initrd := filepath.Join(dir, "initrd.img")
	if err := images.WriteInitramfs(initrd, images.InitramfsConfig{Busybox: img.Busybox, Modules: mods}); err != nil {
		return err
	}
	_, err := c.run.Run(ctx, append(append([]string{bootctl, "image", "add"}, args...), "--initrd", initrd)...)
	return err
}

// startServersWithImages writes the machine, inventory and per-server configs and starts `bootctl serve`
// in each server namespace, with the image store already in place.
func (c *Cluster) startServersWithImages(ctx context.Context, opt ServerOptions) error {
	dir := c.dir()
	write := c.writeMachineFiles
	if opt.Flat {
		write = c.writeFlatInventory
	}
	if err := write(dir); err != nil {
		return err
	}
	ipxeDir := images.DebianIPXEDir
	if opt.Files.NBP != "" {
		ipxeDir = filepath.Dir(opt.Files.NBP)
	}
	for j, s := range c.Servers {
		path, err := c.writeServerConfig(dir, j, opt, ipxeDir)
		if err != nil {
			return err
		}
		if err := c.startServer(ctx, s, opt.Bootctl, path); err != nil {
			return err
		}
	}
	for _, s := range c.Servers {
		if err := c.waitHTTP(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// writeMachineFiles writes what every boot server reads besides its own configuration: the
// machine, as the servers see it (unscaled: the mapping depends only on the hierarchy), and the
// inventory of the nodes.
func (c *Cluster) writeMachineFiles(dir string) error {
	mach, err := c.Machine.MarshalYAMLText()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "machine.yaml"), mach, 0o644); err != nil {
		return err
	}
	var inv strings.Builder
	inv.WriteString("name,mac,ip,node\n")
	for _, n := range c.Nodes {
		fmt.Fprintf(&inv, "%s,%s,%s,%s\n", n.Name, n.MAC, n.IP, n.Name)
	}
	return os.WriteFile(filepath.Join(dir, "inventory.csv"), []byte(inv.String()), 0o644)
}

// writeFlatInventory writes the inventory of a cluster served without a topology: names and MACs,
// in the nodes' order (which is their order on the flat machine).
func (c *Cluster) writeFlatInventory(dir string) error {
	var inv strings.Builder
	inv.WriteString("name,mac\n")
	for _, n := range c.Nodes {
		fmt.Fprintf(&inv, "%s,%s\n", n.Name, n.MAC)
	}
	return os.WriteFile(filepath.Join(dir, "inventory.csv"), []byte(inv.String()), 0o644)
}

// configServers is the servers list of a boot server's or fleet's configuration.
func (c *Cluster) configServers() []map[string]string {
	var servers []map[string]string
	for _, s := range c.Servers {
		servers = append(servers, map[string]string{"name": s.Name, "address": s.IP})
	}
	return servers
}

// bootSubnet is the boot network's prefix, for the DHCP configuration.
func (c *Cluster) bootSubnet() string {
	return fmt.Sprintf("%s/%d", addrAt(mustPrefix(c.Servers[0].IP, c.PrefixLen), 0), c.PrefixLen)
}

// writeServerConfig writes server j's configuration (opt's mapping), DIR/NAME.yaml, and returns
// its path. A flat cluster's names no topology and no mapping (the flat machine's default), and
// its nodes take the addresses the cluster gave them from a pool.
func (c *Cluster) writeServerConfig(dir string, j int, opt ServerOptions, ipxeDir string) (string, error) {
	s := c.Servers[j]
	cfg := map[string]any{
		"server_id": j, "servers": c.configServers(), "topology": "machine.yaml", "mapping": opt.Mapping,
		"inventory": "inventory.csv", "images": "images", "ipxe_dir": ipxeDir,
		"state_dir": "state-" + s.Name, "state_flush": "200ms",
		"http": map[string]any{"listen": ":80"},
		"tftp": map[string]any{"listen": ":69", "max_block_size": 1468},
		"dhcp": map[string]any{"mode": "reservation", "interfaces": []string{"eth0"}, "subnet": c.bootSubnet(), "lease_time": "1h"},
	}
	if opt.Flat {
		delete(cfg, "topology")
		if opt.Mapping == "" {
			delete(cfg, "mapping")
		}
		dhcp := cfg["dhcp"].(map[string]any)
		dhcp["pool"] = map[string]any{"range": c.Nodes[0].IP + "-" + c.Nodes[len(c.Nodes)-1].IP}
	}
	if len(opt.Overlays) > 0 {
		var ov []map[string]string
		for _, d := range opt.Overlays {
			ov = append(ov, map[string]string{"dir": d})
		}
		cfg["overlays"] = ov
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, s.Name+".yaml")
	return path, os.WriteFile(path, data, 0o644)
}

// startServer starts `bootctl serve --config config` in s's namespace, logging to DIR/NAME.log,
// and records its pid for Down; it does not wait.
func (c *Cluster) startServer(ctx context.Context, s Endpoint, bootctl, config string) error {
	logf, err := os.Create(filepath.Join(c.dir(), s.Name+".log"))
	if err != nil {
		return err
	}
	c.useBBR(ctx, s)
	cmd := exec.Command("ip", "netns", "exec", s.Namespace, bootctl, "--log-level", "info", "serve", "--config", config)
	cmd.Stdout, cmd.Stderr = logf, logf
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return fmt.Errorf("start server %s: %w", s.Name, err)
	}
	if err := c.AddPid(cmd.Process.Pid); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reap; Down stops it by pid
	return nil
}

// useBBR sets server s's TCP congestion control to BBR. The servers send the data. With loss-based
// congestion control their TCP flows would fill the shaped links' FIFOs, and a lock-step TFTP
// transfer would wait behind that queue on every block; BBR keeps about one round trip of data
// queued, so links stay full, lossless and short-queued, which is the sharing the flow model
// assumes. Without BBR the servers still run, with a warning.
func (c *Cluster) useBBR(ctx context.Context, s Endpoint) {
	if _, err := c.run.Run(ctx, "ip", "netns", "exec", s.Namespace, "sysctl", "-q", "-w", "net.ipv4.tcp_congestion_control=bbr"); err != nil {
		c.log.Warn("BBR unavailable; TCP will fill the shaped queues", zap.String("server", s.Name), zap.Error(err))
	}
}
