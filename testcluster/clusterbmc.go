package testcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// LabBMCs are the BMCs StartLabBMCs gave a cluster's VMs, and the files with which `bootctl power`
// and `bootctl boot` drive them as they drive servers.
type LabBMCs struct {
	// Driver is the BMCs' protocol and the inventory's bmc_driver: redfish or ipmi.
	Driver string `json:"driver"`
	// Inventory lists the nodes with a BMC (name, mac, ip, node, bmc, bmc_driver).
	Inventory string `json:"inventory"`
	// Credentials is the BMCs' login (mode 600), for --credentials.
	Credentials string `json:"credentials"`
	// CA holds the Redfish BMCs' certificates, for --redfish-ca ("" for IPMI).
	CA string `json:"ca,omitempty"`
	// Config names the boot servers, the machine and the inventory, for --config.
	Config string `json:"config"`
	// BMCs are the BMCs' addresses by node.
	BMCs map[string]string `json:"bmcs"`
	// Consoles are the VMs' console logs by node (each start's command line first).
	Consoles map[string]string `json:"consoles"`
}

// LabBMCReport is what `bootctl cluster bmc` reports once its BMC answers (-o json is what
// StartLabBMCs reads): what the inventory, the credentials file and --redfish-ca need.
type LabBMCReport struct {
	Endpoint  string `json:"endpoint"`
	BMC       string `json:"bmc"`
	BMCDriver string `json:"bmc_driver"`
	System    string `json:"system"`
	User      string `json:"user"`
	CA        string `json:"ca,omitempty"` // Redfish only
	QMP       string `json:"qmp,omitempty"`
	Console   string `json:"console,omitempty"`
	// Systems and Logs are a --command BMC's machines and each one's output file.
	Systems []string          `json:"systems,omitempty"`
	Logs    map[string]string `json:"logs,omitempty"`
}

// WriteText writes the BMC's address and files.
func (b *LabBMCReport) WriteText(w io.Writer) error {
	kind := "Redfish"
	if b.BMCDriver == "ipmi" {
		kind = "IPMI"
	}
	fmt.Fprintf(w, "%s BMC for system %s at %s (user %s)\n", kind, b.System, b.Endpoint, b.User)
	if b.CA != "" {
		fmt.Fprintf(w, "its certificate (for --redfish-ca): %s\n", b.CA)
	}
	fmt.Fprintf(w, "inventory columns: bmc=%s bmc_driver=%s\n", b.BMC, b.BMCDriver)
	if len(b.Systems) > 0 {
		fmt.Fprintf(w, "systems: %s (each one's output: %s)\n", strings.Join(b.Systems, ", "), filepath.Dir(b.Logs[b.Systems[0]]))
		return nil
	}
	_, err := fmt.Fprintf(w, "VM console: %s\nQMP socket: %s\n", b.Console, b.QMP)
	return err
}

// StartLabBMCs gives the first n nodes of a cluster whose servers StartQEMUServers started a BMC
// each, speaking protocol (redfish or ipmi): a `bootctl cluster bmc` process on the host (bootctl
// is its binary; for ipmi it runs ipmi_sim), on a free loopback port, whose machine is the node's
// VM, QEMU in the node's namespace on its tap, with firmware that tries the disk first (it has
// none), so that the one-time PXE override is what makes a start boot the network. mapping is the
// servers' (written into the configuration). The VMs stay off until a client powers them on. The
// BMCs' pids are in the cluster's state, so Down stops them, and a BMC stopped powers its VM off.
//
// The VMs run under TCG unless KVM is asked for by name (BOOTFABRIC_ACCEL=kvm): a VM that nested
// KVM fails has no supervisor here to start it again under TCG, as BootVMs does.
func (c *Cluster) StartLabBMCs(ctx context.Context, bootctl, protocol string, n int, mapping string) (*LabBMCs, error) {
	if n < 1 || n > len(c.Nodes) {
		return nil, fmt.Errorf("%s BMCs: %d VMs, want 1 to the cluster's %d nodes", protocol, n, len(c.Nodes))
	}
	if protocol != "redfish" && protocol != "ipmi" {
		return nil, fmt.Errorf("lab BMCs: protocol %q, want redfish or ipmi", protocol)
	}
	opt := QEMUOptions{Accel: "tcg"}
	if v, _ := accelRequest(""); v == "kvm" {
		accel, _, err := c.Accel(ctx, "kvm", c.log)
		if err != nil {
			return nil, err
		}
		opt.Accel = accel
	}
	opt.defaults(c)
	password, pwFile, err := c.writeLabPassword(protocol)
	if err != nil {
		return nil, err
	}
	labs := &LabBMCs{Driver: protocol, BMCs: map[string]string{}, Consoles: map[string]string{}}
	var cas []byte
	user := ""
	for i := 0; i < n; i++ {
		if err := c.attachTap(ctx, i); err != nil {
			return nil, err
		}
		node := c.Nodes[i]
		vm := diskFirst(append([]string{"ip", "netns", "exec", node.Namespace, opt.QEMU}, qemuArgs(opt, node.MAC, vmTap, "")...))
		rep, err := c.startLabBMC(ctx, bootctl, node.Name, pwFile, append([]string{"--protocol", protocol, "--system", node.Name, "--"}, vm...))
		if err != nil {
			return nil, err
		}
		if rep.CA != "" {
			pem, err := os.ReadFile(rep.CA)
			if err != nil {
				return nil, err
			}
			cas = append(cas, pem...)
		}
		labs.BMCs[node.Name], labs.Consoles[node.Name], user = rep.BMC, rep.Console, rep.User
	}
	return labs, c.writeLabFiles(labs, n, mapping, user, password, cas)
}

// writeLabPassword makes a random password for a cluster's BMCs and writes it to a file (mode 600)
// for `cluster bmc --password-file`.
func (c *Cluster) writeLabPassword(protocol string) (password, file string, err error) {
	raw := make([]byte, 16)
	if protocol == "ipmi" {
		raw = raw[:ipmiMaxPassword/2] // hex digits, within what ipmi_sim takes
	}
	_, _ = rand.Read(raw)
	password = hex.EncodeToString(raw)
	file = filepath.Join(c.dir(), "bmc-password")
	return password, file, os.WriteFile(file, []byte(password+"\n"), 0o600)
}

// startLabBMC starts `bootctl cluster bmc` with extra flags and arguments (named node: a node, or
// the BMC of all) and waits for its report (DIR/bmc-NODE.json).
func (c *Cluster) startLabBMC(ctx context.Context, bootctl, node, pwFile string, extra []string) (LabBMCReport, error) {
	dir := c.dir()
	bmcDir := filepath.Join(dir, "bmc-"+node)
	report := bmcDir + ".json"
	out, err := os.Create(report)
	if err != nil {
		return LabBMCReport{}, err
	}
	defer out.Close()
	logf, err := os.Create(bmcDir + ".log")
	if err != nil {
		return LabBMCReport{}, err
	}
	defer logf.Close()
	args := append([]string{"cluster", "bmc", "--listen", "127.0.0.1:0", "--dir", bmcDir, "--password-file", pwFile, "-o", "json"}, extra...)
	cmd := exec.Command(bootctl, args...)
	cmd.Stdout, cmd.Stderr = out, logf
	if err := cmd.Start(); err != nil {
		return LabBMCReport{}, fmt.Errorf("node %s: start its BMC: %w", node, err)
	}
	if err := c.AddPid(cmd.Process.Pid); err != nil {
		return LabBMCReport{}, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }() // reap; Down stops it by pid
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var rep LabBMCReport
		if data, err := os.ReadFile(report); err == nil && json.Unmarshal(data, &rep) == nil && rep.BMC != "" {
			return rep, nil
		}
		select {
		case <-exited:
			return LabBMCReport{}, fmt.Errorf("node %s: its BMC exited (see %s.log)", node, bmcDir)
		case <-deadline.C:
			return LabBMCReport{}, fmt.Errorf("node %s: its BMC did not report within 30 s (see %s.log)", node, bmcDir)
		case <-ctx.Done():
			return LabBMCReport{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// writeLabFiles writes the inventory of the first n nodes with their BMCs, the credentials, the
// CA bundle (Redfish) and a configuration naming the servers, the machine and the inventory.
func (c *Cluster) writeLabFiles(labs *LabBMCs, n int, mapping, user, password string, cas []byte) error {
	dir := c.dir()
	labs.Inventory = filepath.Join(dir, "bmc-inventory.csv")
	labs.Credentials = filepath.Join(dir, "bmc-credentials.yaml")
	if labs.Driver == "redfish" {
		labs.CA = filepath.Join(dir, "bmc-ca.pem")
	}
	labs.Config = filepath.Join(dir, "bmc-boot.yaml")
	var inv strings.Builder
	inv.WriteString("name,mac,ip,node,bmc,bmc_driver\n")
	for _, node := range c.Nodes[:n] {
		fmt.Fprintf(&inv, "%s,%s,%s,%s,%s,%s\n", node.Name, node.MAC, node.IP, node.Name, labs.BMCs[node.Name], labs.Driver)
	}
	mach, err := c.Machine.MarshalYAMLText()
	if err != nil {
		return err
	}
	var cfg strings.Builder
	cfg.WriteString("servers:\n")
	for _, s := range c.Servers {
		fmt.Fprintf(&cfg, "  - {name: %s, address: %s}\n", s.Name, s.IP)
	}
	fmt.Fprintf(&cfg, "topology: bmc-machine.yaml\ninventory: bmc-inventory.csv\n")
	if mapping != "" {
		fmt.Fprintf(&cfg, "mapping: %s\n", mapping)
	}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{labs.Inventory, []byte(inv.String()), 0o644},
		{labs.Credentials, []byte(fmt.Sprintf("default: {user: %s, password: %s}\n", user, password)), 0o600},
		{labs.CA, cas, 0o644},
		{filepath.Join(dir, "bmc-machine.yaml"), mach, 0o644},
		{labs.Config, []byte(cfg.String()), 0o644},
	} {
		if f.path == "" {
			continue // no CA bundle for IPMI BMCs
		}
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			return errors.Join(errors.New("lab BMC files"), err)
		}
	}
	return nil
}

// ipmiMaxPassword is the longest password ipmi_sim takes (internal/ipmibmc.MaxPassword, which
// this package may not import: it runs the BMCs through bootctl).
const ipmiMaxPassword = 19

// diskFirst makes a VM's SeaBIOS try its disk first (a cluster's VMs have none, so it then falls
// back to the NIC's ROM): a start that boots the network first did so for the one-time override.
func diskFirst(argv []string) []string {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == "-boot" {
			argv[i+1] = "order=c,menu=off"
		}
	}
	return argv
}
