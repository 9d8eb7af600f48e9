package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/testcluster"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/bootfabric/bootfabric/units"
	"github.com/urfave/cli/v2"
)

func clusterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "name", Value: "bf", Usage: "cluster name (1-12 lower-case letters and digits)"},
		&cli.StringFlag{Name: "state-dir", Value: "/run/bootfabric", Usage: "where cluster state, configs and logs live"},
	}
}

func bootFlags() []cli.Flag {
	return []cli.Flag{
		withChoices(cli.StringFlag{Name: "algo", Value: mapping.Default(false), Usage: "block-cyclic mapping the boot servers use: scda, bcda, ncda, cyclic:LEVEL"},
			"scda", "bcda", "ncda"),
		&cli.StringFlag{Name: "nbp", Value: "/usr/lib/ipxe/undionly.kpxe", Usage: "network boot program served over TFTP (Debian package ipxe)"},
		&cli.StringFlag{Name: "kernel-size", Value: "1MB", Usage: "size of the test kernel fetched over HTTP"},
		&cli.StringFlag{Name: "initrd-size", Value: "3MB", Usage: "size of the test initrd fetched over HTTP"},
	}
}

func clusterCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "cluster",
		Usage: "build netns test clusters on this host, boot them with real clients, and measure against the prediction",
		Subcommands: []*cli.Command{
			clusterUpCommand(e), clusterBootCommand(e), clusterStatusCommand(e), clusterDownCommand(e), clusterMeasureCommand(e),
			clusterBMCCommand(e), clusterChassisCommand(e),
		},
	}
}

func clusterUpCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "up",
		Usage: "create the cluster's namespaces, bridges and shaped links and start its boot servers",
		Flags: append(append(clusterFlags(), bootFlags()...),
			&cli.StringFlag{Name: "kind", Value: "netns", Usage: "netns (container nodes boot with busybox udhcpc and curl) or qemu (nodes are QEMU VMs with PXE firmware)"},
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Value: "mini", Usage: "machine: mini or a machine description file"},
			&cli.Float64Flag{Name: "scale", Value: 0.1, Usage: "multiply every link capacity by this to shape it on one host"},
			withChoices(cli.StringFlag{Name: "bmc", Value: "none", Usage: "none (cluster boot starts the nodes), redfish or ipmi: qemu: each of the first --vms nodes gets a BMC of that protocol (bootctl cluster bmc), for bootctl power and boot; netns: redfish only, one BMC whose systems are the first --vms nodes, power on starting a node's boot script"},
				"none", "redfish", "ipmi"),
			&cli.IntFlag{Name: "vms", Value: 4, Usage: "--bmc redfish|ipmi: how many nodes get a BMC (the first N; at most the cluster's nodes)"},
			outputFlag("table", "json", "yaml"),
		),
		Action: func(c *cli.Context) error { return clusterUpAction(e, c) },
	}
}

func clusterUpAction(e *env, c *cli.Context) error {
	format := c.String("output")
	spec, opt, err := clusterSpec(c)
	if err != nil {
		return err
	}
	if err := checkBMCFlags(c); err != nil {
		return err
	}
	if c.String("kind") == "qemu" {
		if err := testcluster.CheckQEMUHost(testcluster.QEMUOptions{}); err != nil {
			return asBadInput(err)
		}
	}
	cl, err := testcluster.UpAndServe(c.Context, spec, opt, c.String("kind") == "qemu", e.log)
	if err != nil {
		return clusterError(err)
	}
	var labs *testcluster.LabBMCs
	if c.String("bmc") != "none" {
		if labs, err = startLabBMCs(c, cl, opt); err != nil {
			_ = cl.Down(context.Background())
			return err
		}
	}
	return writeClusterUp(e, format, cl, spec, opt, labs)
}

// checkBMCFlags checks --bmc and --vms of cluster up.
func checkBMCFlags(c *cli.Context) error {
	bmc := c.String("bmc")
	switch {
	case bmc != "none" && bmc != "redfish" && bmc != "ipmi":
		return badInput("--bmc: %q is not one of none, redfish, ipmi", bmc)
	case bmc == "ipmi" && c.String("kind") != "qemu":
		return badInput("--bmc ipmi: only VMs have IPMI BMCs here: add --kind qemu, or give container nodes --bmc redfish")
	case c.Int("vms") < 1:
		return badInput("--vms: %d: want at least 1", c.Int("vms"))
	}
	if _, err := exec.LookPath("ipmi_sim"); bmc == "ipmi" && err != nil {
		return badInput("--bmc ipmi: no ipmi_sim; install with: apt-get install openipmi")
	}
	return nil
}

// startLabBMCs gives the first --vms nodes of a qemu cluster a BMC each, of --bmc's protocol; the
// first --vms nodes of a netns cluster get one Redfish BMC, a system per node.
func startLabBMCs(c *cli.Context, cl *testcluster.Cluster, opt testcluster.ServerOptions) (*testcluster.LabBMCs, error) {
	n := c.Int("vms")
	if n > len(cl.Nodes) {
		if c.IsSet("vms") {
			return nil, badInput("--vms: %d is more than the cluster's %d nodes", n, len(cl.Nodes))
		}
		n = len(cl.Nodes)
	}
	if c.String("kind") != "qemu" {
		return cl.StartFirmwareBMC(c.Context, opt.Bootctl, n, opt.Mapping)
	}
	return cl.StartLabBMCs(c.Context, opt.Bootctl, c.String("bmc"), n, opt.Mapping)
}

// writeClusterUp reports a cluster brought up, with its BMCs' files when it has some.
func writeClusterUp(e *env, format string, cl *testcluster.Cluster, spec testcluster.Spec, opt testcluster.ServerOptions, labs *testcluster.LabBMCs) error {
	return writeResult(e.stdout, format, map[string]any{"name": spec.Name, "nodes": len(cl.Nodes), "servers": len(cl.Servers),
		"links": cl.Graph.NumLinks(), "scale": spec.Scale, "mapping": opt.Mapping, "bmcs": labs},
		func(w io.Writer) error { return cl.WriteUp(w, opt.Mapping, labs) })
}

func clusterBootCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "boot",
		Usage: "boot every container node of a running cluster at once and print each node's timeline",
		Flags: append(clusterFlags(), outputFlag("table", "json", "yaml"),
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Minute, Usage: "give up on nodes not booted by then"},
			&cli.StringFlag{Name: "kind", Value: "netns", Usage: "netns: container nodes; qemu: PXE-boot VMs (the cluster was brought up with --kind qemu)"},
			&cli.IntFlag{Name: "vms", Value: 4, Usage: "qemu: how many VMs to boot at once (the first N nodes)"},
			withChoices(cli.StringFlag{Name: "firmware", Value: "bios", Usage: "qemu: bios (SeaBIOS + iPXE ROM), uefi (OVMF + iPXE's EFI ROM) uefi-pxe (OVMF's own PXE client fetches ipxe.efi over TFTP) or uefi-http (OVMF's HTTP boot client fetches ipxe.efi over HTTP, no TFTP)"},
				testcluster.Firmwares()...),
			withChoices(cli.StringFlag{Name: "accel", Usage: "qemu: kvm, tcg or auto (default: $BOOTFABRIC_ACCEL, else auto: kvm when a probe guest runs under KVM, else tcg)"},
				"kvm", "tcg", "auto"),
		),
		Action: func(c *cli.Context) error { return clusterBootAction(e, c) },
	}
}

// openCluster reads the output format and opens the running cluster the flags name.
func openCluster(e *env, c *cli.Context) (format string, cl *testcluster.Cluster, err error) {
	format = c.String("output")
	if cl, err = testcluster.Open(c.String("state-dir"), c.String("name"), e.log); err != nil {
		return "", nil, asBadInput(err)
	}
	return format, cl, nil
}

func clusterBootAction(e *env, c *cli.Context) error {
	format, cl, err := openCluster(e, c)
	if err != nil {
		return err
	}
	switch c.String("kind") {
	case "qemu":
		return bootVMs(e, c, cl, format)
	case "netns":
	default:
		return badInput("--kind: %q is not one of netns, qemu", c.String("kind"))
	}
	bar := e.progressBar("cluster boot", 0, "nodes booted")
	tl, batch, cpu, err := cl.BootProgress(c.Context, nil, c.Duration("timeout"), bar.Func())
	bar.Done()
	if werr := writeResult(e.stdout, format, map[string]any{"batch_seconds": batch, "cpu": cpu, "nodes": tl},
		func(w io.Writer) error { return testcluster.WriteTimelines(w, tl, batch, cpu) }); werr != nil {
		return werr
	}
	return err
}

func clusterStatusCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:   "status",
		Usage:  "show a running cluster's boot servers' summaries",
		Flags:  append(clusterFlags(), outputFlag("table", "json", "yaml")),
		Action: func(c *cli.Context) error { return clusterStatusAction(e, c) },
	}
}

func clusterStatusAction(e *env, c *cli.Context) error {
	format, cl, err := openCluster(e, c)
	if err != nil {
		return err
	}
	sums, err := cl.Summaries(c.Context)
	if err != nil {
		return err
	}
	return writeResult(e.stdout, format, map[string]any{"name": cl.Name, "scale": cl.Scale, "nodes": cl.Nodes, "servers": sums}, func(w io.Writer) error {
		fmt.Fprintf(w, "cluster %s: %d nodes, %d boot servers, scale x%g\n", cl.Name, len(cl.Nodes), len(cl.Servers), cl.Scale)
		return testcluster.WriteSummaries(w, sums)
	})
}

func clusterDownCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:   "down",
		Usage:  "stop a cluster's processes and remove its namespaces",
		Flags:  clusterFlags(),
		Action: func(c *cli.Context) error { return clusterDownAction(e, c) },
	}
}

func clusterDownAction(e *env, c *cli.Context) error {
	cl, err := testcluster.Open(c.String("state-dir"), c.String("name"), e.log)
	if err != nil {
		return asBadInput(err)
	}
	if err := cl.Down(context.Background()); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "cluster %s down\n", cl.Name)
	return nil
}

func clusterMeasureCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "measure",
		Usage: "for each mapping: bring a cluster up, boot every node at once, predict the same boot with fabricsim, compare, tear down",
		Flags: append(append(clusterFlags(), bootFlags()...), outputFlag("table", "json", "yaml"),
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Value: "mini", Usage: "machine: mini or a machine description file"},
			&cli.Float64Flag{Name: "scale", Value: 0.1, Usage: "multiply every link capacity by this to shape it on one host"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Minute, Usage: "give up on a boot not done by then"},
			&cli.BoolFlag{Name: "nodes", Usage: "print every node's measured and predicted time"},
		),
		Action: func(c *cli.Context) error { return measureAction(e, c) },
	}
}

func clusterSpec(c *cli.Context) (testcluster.Spec, testcluster.ServerOptions, error) {
	// A host without a netns cluster's commands, or a user other than root, is refused first.
	if err := testcluster.CheckHost(); err != nil {
		return testcluster.Spec{}, testcluster.ServerOptions{}, badInput("cluster: %w", err)
	}
	if k := c.String("kind"); k != "" && k != "netns" && k != "qemu" {
		return testcluster.Spec{}, testcluster.ServerOptions{}, badInput("--kind: %q is not one of netns, qemu", k)
	}
	m, err := topology.Load(c.String("topology"))
	if err != nil {
		return testcluster.Spec{}, testcluster.ServerOptions{}, asBadInput(err)
	}
	self, err := os.Executable()
	if err != nil {
		return testcluster.Spec{}, testcluster.ServerOptions{}, err
	}
	opt := testcluster.ServerOptions{Bootctl: self, Mapping: c.String("algo")}
	opt.Files.NBP = c.String("nbp")
	if _, err := os.Stat(opt.Files.NBP); err != nil {
		return testcluster.Spec{}, testcluster.ServerOptions{}, badInput("--nbp: %v (install the Debian package ipxe)", err)
	}
	for _, f := range []struct {
		flag string
		dst  *int64
	}{{"kernel-size", &opt.Files.Kernel}, {"initrd-size", &opt.Files.Initrd}} {
		v, err := units.ParseSize(c.String(f.flag))
		if err != nil {
			return testcluster.Spec{}, testcluster.ServerOptions{}, badInput("--%s: %w", f.flag, err)
		}
		*f.dst = int64(v)
	}
	spec := testcluster.Spec{Name: c.String("name"), Machine: m, Scale: c.Float64("scale"), StateDir: c.String("state-dir")}
	if err := testcluster.CheckSpec(&spec); err != nil {
		return spec, opt, asBadInput(err)
	}
	return spec, opt, nil
}

// clusterError marks the errors Up returns for bad input (a leftover cluster, a machine too large).
func clusterError(err error) error {
	var bad *testcluster.SpecError
	if errors.As(err, &bad) {
		return asBadInput(err)
	}
	return err
}

func measureAction(e *env, c *cli.Context) error {
	format := c.String("output")
	spec, opt, err := clusterSpec(c)
	if err != nil {
		return err
	}
	var results []*testcluster.Measurement
	for _, algo := range strings.Split(c.String("algo"), ",") {
		if isTerminal(e.stderr) {
			fmt.Fprintf(e.stderr, "measuring %s: cluster up, boot %s, predict, down...\n", algo, spec.Machine.Name)
		}
		bar := e.progressBar("measure "+strings.TrimSpace(algo), 0, "nodes booted")
		opt.Progress = bar.Func()
		res, err := testcluster.Measure(c.Context, spec, strings.TrimSpace(algo), opt, c.Duration("timeout"), e.log)
		bar.Done()
		if err != nil {
			return clusterError(fmt.Errorf("%s: %w", algo, err))
		}
		results = append(results, res)
	}
	return writeResult(e.stdout, format, results, func(w io.Writer) error { return testcluster.WriteMeasurements(w, results, c.Bool("nodes")) })
}

func bootVMs(e *env, c *cli.Context, cl *testcluster.Cluster, format string) error {
	n := c.Int("vms")
	if n < 1 || n > len(cl.Nodes) {
		return badInput("--vms: %d is not between 1 and the cluster's %d nodes", n, len(cl.Nodes))
	}
	if f := c.String("firmware"); !slices.Contains(testcluster.Firmwares(), f) {
		return badInput("--firmware: %q is not one of %s", f, strings.Join(testcluster.Firmwares(), ", "))
	}
	opt := testcluster.QEMUOptions{Firmware: c.String("firmware"), Accel: c.String("accel"), Timeout: c.Duration("timeout"), Log: e.log}
	if err := testcluster.CheckQEMUHost(opt); err != nil {
		return asBadInput(err)
	}
	bar := e.progressBar("cluster boot", n, "VMs")
	opt.Progress = bar.Func()
	res, err := testcluster.BootVMs(c.Context, cl, n, opt)
	bar.Done()
	if werr := writeResult(e.stdout, format, res, func(w io.Writer) error { return testcluster.WriteVMResults(w, res) }); werr != nil {
		return werr
	}
	return err
}
