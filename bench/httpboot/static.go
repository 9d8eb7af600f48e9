package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/testcluster"
)

// healthCGI is busybox httpd's handler for the health report: it reads the JSON body and
// answers 200, which is all the initramfs's wget needs to say "sent=yes".
const healthCGI = `#!/bin/sh
cat >/dev/null
printf 'Content-Type: application/json\r\n\r\n{"state":"healthy"}\n'
`

// startDnsmasq puts the boot files of the qemu kind's VMs (Debian's ipxe.efi, the kernel and an
// initramfs built as StartQEMUServers builds them, the node's iPXE script rendered as bootctl
// serve renders it) in dir and serves them from the cluster's first server namespace with
// busybox httpd, beside dnsmasq answering the cluster's first node: an HTTP boot client (vendor
// class HTTPClient) gets the URL of ipxe.efi with option 60 echoed, iPXE (user class iPXE) the
// script URL and option 175.176 (no proxyDHCP wait), as dnsmasq's documentation sets up iPXE.
// Both processes are recorded in the cluster state, so Down stops them.
func startDnsmasq(ctx context.Context, c *testcluster.Cluster, dir string) error {
	srv, node := c.Servers[0], c.Nodes[0]
	base := "http://" + srv.IP
	if err := writeStatic(dir, srv, node); err != nil {
		return err
	}
	dnsmasq := []string{"dnsmasq", "--keep-in-foreground", "--log-facility=" + filepath.Join(dir, "dnsmasq.log"), "--log-dhcp",
		"--port=0", "--user=root", "--pid-file=", "--interface=eth0", "--bind-interfaces",
		"--dhcp-leasefile=" + filepath.Join(dir, "dnsmasq.leases"),
		"--dhcp-range=" + node.IP + ",static," + maskOf(c.PrefixLen),
		"--dhcp-host=" + node.MAC + "," + node.IP + "," + node.Name,
		"--dhcp-vendorclass=set:httpboot,HTTPClient",
		"--dhcp-userclass=set:ipxe,iPXE",
		"--dhcp-option-force=tag:httpboot,60,HTTPClient",
		"--dhcp-boot=tag:httpboot,tag:!ipxe," + base + "/ipxe.efi",
		"--dhcp-boot=tag:ipxe," + base + "/boot.ipxe",
		"--dhcp-option=encap:175,176,1b",
	}
	httpd := []string{"busybox", "httpd", "-f", "-p", srv.IP + ":80", "-h", dir}
	for _, argv := range [][]string{dnsmasq, httpd} {
		if err := startIn(c, srv.Namespace, filepath.Join(dir, argv[0]+".out"), argv); err != nil {
			return err
		}
	}
	// Both must be up before the first VM asks.
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", srv.Namespace, "curl", "-sf", "--max-time", "1", "-o", "/dev/null", "-w", "%{http_code}", base+"/boot.ipxe").Output()
		if err == nil && string(out) == "200" {
			return nil
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "dnsmasq.out"))
			return fmt.Errorf("busybox httpd did not answer on %s: %v (dnsmasq said: %s)", base, err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startIn starts argv in namespace ns, its output in logPath, and records its pid in the
// cluster state so that Down stops it.
func startIn(c *testcluster.Cluster, ns, logPath string, argv []string) error {
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...)
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return fmt.Errorf("starting %s: %w", argv[0], err)
	}
	if err := c.AddPid(cmd.Process.Pid); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// writeStatic writes the static server's tree: ipxe.efi, boot.ipxe (node's script),
// boot/default/{vmlinuz,initrd.img} and cgi-bin/health.
func writeStatic(dir string, srv, node testcluster.Endpoint) error {
	boot := filepath.Join(dir, "boot", "default")
	for _, d := range []string{boot, filepath.Join(dir, "cgi-bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	k, err := testcluster.FindKernel("", "")
	if err != nil {
		return err
	}
	mods, err := testcluster.ModuleFiles(k.ModulesDir, testcluster.DefaultVMModules)
	if err != nil {
		return err
	}
	if err := images.WriteInitramfs(filepath.Join(boot, "initrd.img"), images.InitramfsConfig{Modules: mods}); err != nil {
		return err
	}
	for src, dst := range map[string]string{k.Image: filepath.Join(boot, "vmlinuz"), filepath.Join(images.DebianIPXEDir, "ipxe.efi"): filepath.Join(dir, "ipxe.efi")} {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
	}
	script, err := images.RenderScript(images.Profile{Name: "default", Kernel: "vmlinuz", Initrd: "initrd.img", Cmdline: testcluster.DefaultVMCmdline},
		images.ScriptParams{Server: srv.IP, Port: 80, Node: node.Name, HealthURL: "http://" + srv.IP + "/cgi-bin/health"})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "boot.ipxe"), script, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cgi-bin", "health"), []byte(healthCGI), 0o755)
}

func maskOf(bits int) string {
	m := uint32(0xffffffff) << (32 - bits)
	return strconv.Itoa(int(m>>24)) + "." + strconv.Itoa(int(m>>16&255)) + "." + strconv.Itoa(int(m>>8&255)) + "." + strconv.Itoa(int(m&255))
}
