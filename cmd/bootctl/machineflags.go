package main

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/bootfabric/bootfabric/units"
	"github.com/urfave/cli/v2"
)

// machineFlags are the topology, algorithm and batch flags that plan, simulate and report share.
func machineFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Value: "sunway", Usage: "machine: a preset (" + strings.Join(topology.Presets(), ", ") + ") or a YAML machine description file"},
		withChoices(cli.StringFlag{Name: "algo", Aliases: []string{"a"}, Value: "all", Usage: "mapping: scda, bcda, ncda, balanced, cyclic:LEVEL, a comma-separated list, or all"},
			"scda", "bcda", "ncda", "balanced", "all"),
		&cli.StringFlag{Name: "batch", Aliases: []string{"b"}, Usage: "batches, comma-separated: COUNT[UNIT] from the machine's start, FIRST-LAST[UNIT], all, or @FILE of node names (default: the paper's ladder)"},
		&cli.StringFlag{Name: "unit", Aliases: []string{"u"}, Value: "board", Usage: "unit of batch counts without one: node or a level name (board, supernode, cabinet, ...)"},
		&cli.StringFlag{Name: "image-size", Value: "50MB", Usage: "boot image size with a unit (MB = 10^6 bytes, MiB = 2^20)"},
		&cli.StringFlag{Name: "profile", Usage: "take the image size from this profile of the image store (its kernel and initrd) instead of --image-size"},
		&cli.StringFlag{Name: "store", EnvVars: []string{"BOOTCTL_IMAGES"}, Usage: "image store directory, for --profile"},
		&cli.StringFlag{Name: "failed-servers", Usage: "boot servers down from the start (absent): blocks are dealt over the others; comma-separated indices (0-based) or names like bs3"},
		&cli.StringFlag{Name: "inventory", Aliases: []string{"i"}, Usage: "machine: the flat machine of a boot server's inventory FILE (CSV or YAML; its nodes under their names, one switch per " + strconv.Itoa(topology.FlatPerSwitch) + ", the boot servers on the core), instead of --topology"},
		&cli.IntFlag{Name: "servers", Value: 1, Usage: "boot servers of the flat machine --inventory builds"},
		&cli.StringFlag{Name: "failed-during-boot", Usage: "boot servers that fail during the boot (dead): only their blocks move, to the least-loaded survivors; same syntax as --failed-servers"},
	}
}

// withoutFlags returns flags less the named ones, for commands that share machineFlags but not all
// of their meaning.
func withoutFlags(flags []cli.Flag, names ...string) []cli.Flag {
	var out []cli.Flag
	for _, f := range flags {
		if !slices.Contains(names, f.Names()[0]) {
			out = append(out, f)
		}
	}
	return out
}

// machineInput is what the shared flags describe.
type machineInput struct {
	Machine    *topology.Machine
	Graph      *topology.Graph
	Algos      []mapping.Algo
	Batches    []topology.Batch
	ImageBytes float64
	// Profile is the --profile whose sizes ImageBytes is (kernel, initrd and a two-stage
	// profile's root image); empty without one.
	Profile                             string
	KernelBytes, InitrdBytes, RootBytes int64
	// Absent marks the servers never up (--failed-servers), Dead those failing during the boot
	// (--failed-during-boot): the two kinds of mapping.Owners.
	Absent []bool
	Dead   []bool
}

// readMachineInput loads and checks everything the shared flags name; every error is bad input.
func readMachineInput(c *cli.Context) (*machineInput, error) {
	m, flat, err := loadMachineFlag(c)
	if err != nil {
		return nil, err
	}
	g, err := m.Build()
	if err != nil {
		return nil, asBadInput(fmt.Errorf("%s: %w", cmp.Or(c.String("inventory"), c.String("topology")), err))
	}
	in := &machineInput{Machine: m, Graph: g}
	h := g.Hierarchy()
	algo, unit := c.String("algo"), c.String("unit")
	if flat > 0 {
		// The flat machine has switches and nodes, no boards: the board defaults become the node's.
		if !c.IsSet("algo") && algo == mapping.Default(false) {
			algo = mapping.Default(true)
		}
		if !c.IsSet("unit") {
			unit = "node"
		}
	}
	if in.Algos, err = mapping.ParseAlgos(algo, h); err != nil {
		return nil, badInput("--algo: %w", err)
	}
	if _, err := h.UnitLevel(unit); err != nil {
		return nil, badInput("--unit: %w", err)
	}
	if c.IsSet("batch") {
		if in.Batches, err = h.ParseBatches(c.String("batch"), unit); err != nil {
			return nil, badInput("--batch: %w", err)
		}
	} else {
		in.Batches = h.DefaultBatches()
	}
	if flat > 0 {
		if in.Batches, err = topology.ClipBatches(in.Batches, flat); err != nil {
			return nil, badInput("--batch: %w", err)
		}
	}
	if err := in.readImageSize(c); err != nil {
		return nil, err
	}
	if in.Absent, in.Dead, err = parseFailures(c.String("failed-servers"), c.String("failed-during-boot"), len(g.Servers())); err != nil {
		return nil, err
	}
	return in, nil
}

// loadMachineFlag loads the machine --topology or --inventory names. flat is the number of
// inventory nodes when the machine is the flat one built from --inventory, else 0.
func loadMachineFlag(c *cli.Context) (m *topology.Machine, flat int, err error) {
	servers := c.Int("servers")
	if c.String("inventory") == "" {
		if c.IsSet("servers") {
			return nil, 0, badInput("--servers: only with --inventory; a topology gives its own boot servers")
		}
		m, err := topology.Load(c.String("topology"))
		if err != nil {
			return nil, 0, asBadInput(err)
		}
		return m, 0, nil
	}
	if c.IsSet("topology") {
		return nil, 0, badInput("--inventory: builds the flat machine of the inventory; drop --topology (or --inventory)")
	}
	if servers < 1 || servers > maxFlatServers {
		return nil, 0, badInput("--servers: %d is not 1-%d", servers, maxFlatServers)
	}
	inv, err := bootconfig.LoadInventory(c.String("inventory"), nil)
	if err != nil {
		return nil, 0, asBadInput(err)
	}
	return bootconfig.FlatMachine(inv, servers), len(inv.Nodes), nil
}

// maxFlatServers bounds --servers so that a typo cannot build a machine of millions of servers.
const maxFlatServers = 1024

// readImageSize takes the image size from --profile (its kernel and initrd in the store) or
// from --image-size; giving both is an error, since they would disagree.
func (in *machineInput) readImageSize(c *cli.Context) error {
	name := c.String("profile")
	if name == "" {
		var err error
		if in.ImageBytes, err = units.ParseSize(c.String("image-size")); err != nil {
			return badInput("--image-size: %w", err)
		}
		return nil
	}
	if c.IsSet("image-size") {
		return badInput("--profile %s and --image-size both give the image size; give one", name)
	}
	if c.String("store") == "" {
		return badInput("--profile %s: the image store is not given (--store DIR or $BOOTCTL_IMAGES)", name)
	}
	st, err := images.Open(c.String("store"))
	if err != nil {
		return asBadInput(fmt.Errorf("--profile %s: %w", name, err))
	}
	p, err := st.Get(name)
	if err != nil {
		return badInput("--profile: no profile %q in %s (profiles: %s)", name, st.Dir(), texttable.OrDash(strings.Join(st.ProfileNames(), ", ")))
	}
	in.Profile, in.KernelBytes, in.InitrdBytes = name, p.Files[p.Kernel].Size, p.Files[p.Initrd].Size
	if p.Root != "" {
		in.RootBytes = p.Files[p.Root].Size
	}
	in.ImageBytes = float64(in.KernelBytes + in.InitrdBytes + in.RootBytes)
	return nil
}

// parseFailures reads --failed-servers (absent) and --failed-during-boot (dead). A server may not
// be both (absent means never up, dead means up and then lost), and one must stay up.
func parseFailures(absent, dead string, servers int) ([]bool, []bool, error) {
	ab, err := parseServers("--failed-servers", absent, servers)
	if err != nil {
		return nil, nil, err
	}
	de, err := parseServers("--failed-during-boot", dead, servers)
	if err != nil {
		return nil, nil, err
	}
	up := servers
	for s := 0; s < servers; s++ {
		a, d := ab != nil && ab[s], de != nil && de[s]
		if a && d {
			return nil, nil, badInput("--failed-during-boot: bs%d is also in --failed-servers; a server is either absent (never up) or dead (failed during the boot)", s)
		}
		if a || d {
			up--
		}
	}
	if up == 0 {
		return nil, nil, badInput("--failed-servers, --failed-during-boot: all %d boot servers failed; at least one must stay up", servers)
	}
	return ab, de, nil
}

// parseServers reads a list of servers (mapping.ParseServerSet), naming flag in its error.
func parseServers(flag, s string, servers int) ([]bool, error) {
	set, err := mapping.ParseServerSet(s, servers)
	if err != nil {
		return nil, badInput("%s: %w", flag, err)
	}
	return set, nil
}
