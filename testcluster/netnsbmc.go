package testcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// netnsFirmware is a container node's firmware behind a BMC: nodeScript's boot without the
// gate, run when the BMC powers the node on. It ends once the node has reported healthy, and the
// node then reads off, as a VM that powers itself off after its boot.
const netnsFirmware = "set -e\n" + nodeLinksUp + nodeBootSteps

// StartFirmwareBMC puts the first n container nodes of a netns cluster whose servers StartServers
// started behind one Redfish BMC, a system per node (its Id the node's name): a `bootctl cluster
// bmc --command` process on the host (bootctl is its binary), on a free loopback port. Power on
// starts the node's firmware, the boot script in its namespace; power off kills it. mapping is the
// servers'. The BMC's pid is in the cluster's state, so Down stops it and its nodes' scripts.
func (c *Cluster) StartFirmwareBMC(ctx context.Context, bootctl string, n int, mapping string) (*LabBMCs, error) {
	if n < 1 || n > len(c.Nodes) {
		return nil, fmt.Errorf("firmware BMC: %d nodes, want 1 to the cluster's %d", n, len(c.Nodes))
	}
	dir := c.dir()
	udhcpc, firmware := filepath.Join(dir, "udhcpc.script"), filepath.Join(dir, "firmware.sh")
	if err := os.WriteFile(udhcpc, []byte(udhcpcScript), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(firmware, []byte(netnsFirmware), 0o755); err != nil {
		return nil, err
	}
	password, pwFile, err := c.writeLabPassword("redfish")
	if err != nil {
		return nil, err
	}
	var args []string
	for _, node := range c.Nodes[:n] {
		// exec: the script's process is the one the BMC's power off kills, with its group.
		cmd := fmt.Sprintf("BF_UDHCPC_SCRIPT=%s exec ip netns exec %s sh %s", shellWord(udhcpc), shellWord(node.Namespace), shellWord(firmware))
		args = append(args, "--command", node.Name+"="+cmd)
	}
	rep, err := c.startLabBMC(ctx, bootctl, "nodes", pwFile, args)
	if err != nil {
		return nil, err
	}
	cas, err := os.ReadFile(rep.CA)
	if err != nil {
		return nil, err
	}
	labs := &LabBMCs{Driver: "redfish", BMCs: map[string]string{}, Consoles: map[string]string{}}
	for _, node := range c.Nodes[:n] {
		labs.BMCs[node.Name], labs.Consoles[node.Name] = rep.BMC, rep.Logs[node.Name]
	}
	return labs, c.writeLabFiles(labs, n, mapping, rep.User, password, cas)
}

// shellWord quotes s as one word for sh.
func shellWord(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
