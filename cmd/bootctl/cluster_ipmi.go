package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/internal/ipmibmc"
	"github.com/bootfabric/bootfabric/internal/redfishsim"
	"github.com/bootfabric/bootfabric/testcluster"
	"github.com/urfave/cli/v2"
)

// redfishOnlyFlags are cluster bmc's switches that only the Redfish BMC has.
var redfishOnlyFlags = []string{"command", "plain-http", "cert-host", "lag", "reject-mode", "boot-read-only", "drop-overrides", "legacy-led", "session-lifetime"}

// labIPMIConfig checks cluster bmc's flags for --protocol ipmi and makes the simulator's
// configuration; its chassis program is this binary's `cluster chassis`, relaying to sock.
func labIPMIConfig(c *cli.Context, sock string) (ipmibmc.Config, error) {
	var none ipmibmc.Config
	for _, f := range redfishOnlyFlags {
		if c.IsSet(f) {
			return none, badInput("--%s: a Redfish BMC's switch; --protocol ipmi takes none", f)
		}
	}
	password, err := labBMCCommon(c)
	if err != nil {
		return none, err
	}
	listen := c.String("listen")
	if !c.IsSet("listen") {
		listen = "127.0.0.1:623"
	}
	host, portText, err := net.SplitHostPort(listen)
	port, perr := strconv.Atoi(portText)
	if err != nil || perr != nil {
		return none, badInput("--listen: %q: want IPv4-ADDRESS:UDP-PORT", listen)
	}
	self, err := os.Executable()
	if err != nil {
		return none, fmt.Errorf("cluster bmc: %w", err)
	}
	cfg := ipmibmc.Config{Host: host, Port: port, User: c.String("user"), Password: password, Dir: c.String("dir"),
		Chassis: []string{self, "cluster", "chassis", "--socket", sock, "--"}}
	if err := cfg.Check(); err != nil {
		return none, badInput("cluster bmc --protocol ipmi: %v", err)
	}
	return cfg, nil
}

// ipmiBMCAction serves an IPMI BMC for one VM: ipmi_sim answers the clients, and its chassis
// program relays each power or boot device request to this process, which owns the VM (a
// redfishsim.QEMUMachine, as the Redfish BMC's) and acts on it through QMP.
//
// Why a relay rather than a script that drives QMP itself: the VM needs an owner that outlives
// each request (ipmi_sim runs its chassis program once per request); with this process as the
// owner, the VM dies with its BMC, `cluster down` stops both by one pid, and power state, QMP
// quit and the one-time override work exactly as behind the Redfish BMC.
func ipmiBMCAction(e *env, c *cli.Context, format string) error {
	dir := c.String("dir")
	sock := filepath.Join(dir, "chassis.sock")
	cfg, err := labIPMIConfig(c, sock)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return badInput("--dir: %v", err)
	}
	m := &redfishsim.QEMUMachine{Argv: c.Args().Slice(), Dir: dir, BootArgs: map[string][]string{"Pxe": strings.Fields(c.String("pxe-args"))}}
	logf := func(format string, args ...any) { fmt.Fprintf(e.stderr, "bootctl cluster bmc: "+format+"\n", args...) }
	var werr error // the report's own failure, returned as it is
	err = ipmibmc.ServeMachine(c.Context, cfg, sock, m, logf, func(sim *ipmibmc.Sim) error {
		werr = writeLabBMC(e, format, testcluster.LabBMCReport{Endpoint: "ipmi://" + sim.Addr(), BMC: sim.Addr(), BMCDriver: "ipmi", System: c.String("system"),
			User: cfg.User, QMP: m.SocketPath(), Console: m.ConsoleLog()})
		return werr
	})
	if err != nil && err != werr {
		return fmt.Errorf("cluster bmc: %w", err)
	}
	return err
}

// clusterChassisCommand is the program ipmi_sim runs for each chassis request of a `cluster bmc
// --protocol ipmi` BMC: it relays the request to that BMC and prints the answer in ipmi_sim's
// format ("power:1" lines), the only reader, so it has no --output.
func clusterChassisCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "chassis",
		Hidden:    true,
		Usage:     "relay one ipmi_sim chassis request (DEVICE get|set PARAM...) to the `cluster bmc --protocol ipmi` serving --socket",
		ArgsUsage: "DEVICE get|set PARAM [VALUE]...",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "socket", Usage: "the BMC's chassis socket (DIR/chassis.sock)"}},
		Action: func(c *cli.Context) error {
			if c.String("socket") == "" || c.Args().Len() < 2 {
				return badInput("cluster chassis: want --socket SOCKET -- DEVICE get|set PARAM...")
			}
			return ipmibmc.Relay(c.Context, c.String("socket"), c.Args().Slice(), e.stdout)
		},
	}
}
