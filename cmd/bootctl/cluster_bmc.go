package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/bootfabric/bootfabric/internal/redfishsim"
	"github.com/bootfabric/bootfabric/testcluster"
	"github.com/urfave/cli/v2"
)

func clusterBMCCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "bmc",
		Usage:     "serve a Redfish or IPMI BMC for one lab VM: power and one-time PXE boot act on the QEMU command given after --, through QMP",
		ArgsUsage: "[-- QEMU-COMMAND...]",
		Description: "The VM is powered off until a client powers it on (bootctl power on, bootctl boot, redfishtool, sushy).\n" +
			"A start that takes a one-time Pxe override gets --pxe-args appended. The BMC runs until interrupted, then powers the VM off.\n" +
			"--protocol ipmi runs OpenIPMI's ipmi_sim (Debian's openipmi) as the BMC, IPMI 2.0 RMCP+ on UDP; ipmitool needs -C 3 with it.",
		Flags: []cli.Flag{
			withChoices(cli.StringFlag{Name: "protocol", Value: "redfish", Usage: "redfish (HTTPS, bmc_driver redfish) or ipmi (ipmi_sim on UDP, bmc_driver ipmi)"},
				"redfish", "ipmi"),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8443", Usage: "address the BMC listens on (Redfish: HTTPS; ipmi: an IPv4 address and a UDP port, default 127.0.0.1:623; port 0: a free one)"},
			&cli.StringFlag{Name: "dir", Usage: "directory for the BMC's certificate (ca.pem), the QMP socket and the VM's console log (required)"},
			&cli.StringFlag{Name: "system", Value: "1", Usage: "the ComputerSystem's Id (the node's name lets one inventory row match it by name)"},
			&cli.StringFlag{Name: "user", Value: "admin", Usage: "the BMC's user"},
			&cli.StringFlag{Name: "password-file", Usage: "file whose first line is the BMC's password (required; never on the command line)"},
			&cli.StringSliceFlag{Name: "cert-host", Usage: "more names or addresses the BMC's certificate is for (the listening address is)"},
			&cli.BoolFlag{Name: "plain-http", Usage: "serve plain HTTP instead of HTTPS (an isolated test network only: the password crosses in clear)"},
			&cli.StringSliceFlag{Name: "command", Usage: "NAME=SHELL-COMMAND, repeated: a Redfish system NAME whose machine is the command instead of a VM (power on starts it in a process group of its own, off kills the group; on while it runs)"},
			&cli.StringFlag{Name: "pxe-args", Value: "-boot once=n", Usage: "QEMU arguments added to a start that takes the one-time Pxe override (SeaBIOS honours -boot once=n)"},
			&cli.DurationFlag{Name: "lag", Usage: "how long after a reset is accepted it takes effect, as real BMCs lag"},
			&cli.BoolFlag{Name: "reject-mode", Usage: "awkward BMC: refuse a boot override that names BootSourceOverrideMode (400)"},
			&cli.BoolFlag{Name: "boot-read-only", Usage: "awkward BMC: Boot is read-only on the system, written through its @Redfish.Settings resource and applied at the next reset"},
			&cli.IntFlag{Name: "drop-overrides", Usage: "awkward BMC: answer this many boot override PATCHes 200 and keep nothing (-1: all)"},
			&cli.BoolFlag{Name: "legacy-led", Usage: "awkward BMC: the identify LED as IndicatorLED only, without LocationIndicatorActive"},
			&cli.DurationFlag{Name: "session-lifetime", Usage: "end each session this long after its login (0: never)"},
			outputFlag("table", "json", "yaml"),
		},
		Action: func(c *cli.Context) error { return clusterBMCAction(e, c) },
	}
}

func clusterBMCAction(e *env, c *cli.Context) error {
	format := c.String("output")
	switch c.String("protocol") {
	case "ipmi":
		return ipmiBMCAction(e, c, format)
	case "redfish":
	default:
		return badInput("--protocol: %q is not one of redfish, ipmi", c.String("protocol"))
	}
	if c.IsSet("command") {
		return commandBMCAction(e, c, format)
	}
	opts, err := labBMCOptions(c)
	if err != nil {
		return err
	}
	dir := c.String("dir")
	m := &redfishsim.QEMUMachine{Argv: c.Args().Slice(), Dir: dir, BootArgs: map[string][]string{"Pxe": strings.Fields(c.String("pxe-args"))}}
	return serveRedfishLab(e, c, format, opts, map[string]redfishsim.Machine{c.String("system"): m},
		testcluster.LabBMCReport{System: c.String("system"), QMP: m.SocketPath(), Console: m.ConsoleLog()})
}

// serveRedfishLab serves a Redfish BMC in --dir whose systems are machines (by Id; opts.Systems
// in order) and reports it (info, the BMC's address and files filled in) until interrupted; then
// it powers them off: a lab machine left running has nothing that could stop it.
func serveRedfishLab(e *env, c *cli.Context, format string, opts redfishsim.Options, machines map[string]redfishsim.Machine, info testcluster.LabBMCReport) error {
	dir := c.String("dir")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return badInput("--dir: %v", err)
	}
	opts.Logf = func(format string, args ...any) { fmt.Fprintf(e.stderr, "bootctl cluster bmc: "+format+"\n", args...) }
	var werr error // the report's own failure, returned as it is
	err := redfishsim.ServeMachines(c.Context, opts, dir, machines, func(bmc *redfishsim.BMC) error {
		info.Endpoint, info.BMC, info.BMCDriver, info.User, info.CA = bmc.URL, bmc.Host(), "redfish", bmc.User, bmc.CAFile
		werr = writeLabBMC(e, format, info)
		return werr
	})
	if err != nil && err != werr {
		return fmt.Errorf("cluster bmc: %w", err)
	}
	return err
}

// labBMCOptions checks cluster bmc's flags and arguments and makes the Redfish BMC's options
// (without its machine).
func labBMCOptions(c *cli.Context) (redfishsim.Options, error) {
	var none redfishsim.Options
	password, err := labBMCCommon(c)
	if err != nil {
		return none, err
	}
	switch {
	case c.Duration("lag") < 0 || c.Duration("session-lifetime") < 0:
		return none, badInput("--lag and --session-lifetime must not be negative")
	case c.Int("drop-overrides") < -1:
		return none, badInput("--drop-overrides: %d: want -1 (all), 0 or a count", c.Int("drop-overrides"))
	}
	if _, _, err := net.SplitHostPort(c.String("listen")); err != nil {
		return none, badInput("--listen: %q: %v (want host:port)", c.String("listen"), err)
	}
	return redfishsim.Options{
		Listen: c.String("listen"), TLS: !c.Bool("plain-http"), CertHosts: c.StringSlice("cert-host"),
		User: c.String("user"), Password: password, Systems: []string{c.String("system")}, Lag: c.Duration("lag"),
		RejectMode: c.Bool("reject-mode"), BootReadOnly: c.Bool("boot-read-only"), DropOverrides: c.Int("drop-overrides"),
		LegacyLED: c.Bool("legacy-led"), SessionLifetime: c.Duration("session-lifetime"),
	}, nil
}

// labBMCCommon checks what both protocols take (the VM's command, --dir, --system, the password
// file) and returns the password.
func labBMCCommon(c *cli.Context) (string, error) {
	switch dir := c.String("dir"); {
	case c.Args().Len() == 0 && !c.IsSet("command"):
		return "", badInput("cluster bmc: no VM command: give it after --, as: bootctl cluster bmc --dir D --password-file F -- qemu-system-x86_64 ... (or machines as --command NAME=COMMAND)")
	case dir == "":
		return "", badInput("--dir: required: where the BMC keeps its certificate, QMP socket and the VM's console log")
	case strings.Contains(dir, ","):
		// QEMU's option syntax takes a comma in the socket's path as the next option.
		return "", badInput("--dir: %q: QEMU cannot take a comma in the QMP socket's path", dir)
	case c.String("password-file") == "":
		return "", badInput("--password-file: required: a file whose first line is the BMC's password")
	case c.String("system") == "" || strings.ContainsAny(c.String("system"), "/?#% "):
		return "", badInput("--system: %q: want a non-empty path segment (no / ? # %% or space)", c.String("system"))
	}
	return readPasswordFile(c.String("password-file"))
}

// writeLabBMC reports the BMC's address and files, in the format asked for.
func writeLabBMC(e *env, format string, b testcluster.LabBMCReport) error {
	return writeResult(e.stdout, format, b, b.WriteText)
}

// readPasswordFile reads the first line of a password file.
func readPasswordFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", badInput("--password-file: %v", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimRight(line, "\r")
	if line == "" {
		return "", badInput("--password-file: %s: the first line is empty", filepath.Clean(path))
	}
	return line, nil
}
