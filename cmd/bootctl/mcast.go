package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/routing"
	"github.com/bootfabric/bootfabric/topology"
)

// mcastCommand builds multicast trees for communicator groups and compares the algorithms.
func mcastCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "mcast",
		Usage: "build multicast trees (fulb, minhop, sssp) and compare link load (EFI), tree height and run time",
		Description: "Groups are generated over the topology's nodes (process i on node i) or read from a file:\n" +
			"  grid2d[:RxC]          one group per row and per column of a 2-D process grid (default: most nearly square)\n" +
			"  grid3d[:AxBxC]        one group per line along each axis of a 3-D grid\n" +
			"  planes[:AxBxC]        one group per plane of a 3-D grid\n" +
			"  leaders[:K]           hierarchical groups of K (default 16), their leaders, and so on up\n" +
			"  random:N:SIZE         N groups of SIZE distinct nodes, drawn from --seed\n" +
			"  servers               one group per boot server: it and its nodes under --mapping (machines only)\n" +
			"  @FILE                 one group per line: [NAME:] ENDPOINT ENDPOINT ... (# starts a comment)\n" +
			"Several comma-separated sets are routed together, in order. EFI (edge forwarding index) is the\n" +
			"number of groups whose tree uses a link, over switch-to-switch links; the mean is over used links.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Required: true, Usage: "topology spec (pgft:..., fat2d:...), ibnetdiscover file, preset or machine YAML"},
			&cli.StringFlag{Name: "groups", Aliases: []string{"g"}, Value: "grid2d", Usage: "group sets, comma-separated: grid2d[:RxC], grid3d[:AxBxC], planes[:AxBxC], leaders[:K], random:N:SIZE, servers, @FILE"},
			&cli.StringFlag{Name: "algo", Aliases: []string{"a"}, Value: "all", Usage: "fulb, minhop, sssp, a comma-separated list, or all"},
			&cli.BoolFlag{Name: "fixed-root", Usage: "minhop and sssp take the first root of least eccentricity, as OpenSM does (no root rotation)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of random groups"},
			&cli.StringFlag{Name: "mapping", Value: "bcda", Usage: "mapping of nodes to boot servers for the servers groups"},
			timingsFlag(),
			outputFlag("table", "json", "yaml", "csv"),
		},
		Action: func(c *cli.Context) error {
			format, err := outputFormat(c, "table", "json", "yaml", "csv")
			if err != nil {
				return err
			}
			return runMcast(e, c, format)
		},
	}
}

// mcastSet is one group set of --groups.
type mcastSet struct {
	Spec   string `json:"spec"`
	Groups int    `json:"groups"`
}

// mcastRow is one algorithm's outcome.
type mcastRow struct {
	Algorithm  string  `json:"algorithm"`
	MaxEFI     int     `json:"max_efi"`
	MeanEFI    float64 `json:"mean_efi"`
	MaxHeight  int     `json:"max_height"`
	MeanHeight float64 `json:"mean_height"`
	Seconds    float64 `json:"seconds,omitempty"` // with --timings only
}

type mcastSummary struct {
	Topology        string     `json:"topology"`
	Endpoints       int        `json:"endpoints"`
	Switches        int        `json:"switches"`
	Groups          int        `json:"groups"`
	Sets            []mcastSet `json:"sets"`
	FixedRoot       bool       `json:"fixed_root"`
	HopTableSeconds float64    `json:"hop_table_seconds,omitempty"` // with --timings only
	Results         []mcastRow `json:"results"`
}

func runMcast(e *env, c *cli.Context, format string) error {
	algos, err := parseMcastAlgos(c.String("algo"))
	if err != nil {
		return err
	}
	spec := c.String("topology")
	fab, err := topology.OpenFabric(spec)
	if err != nil {
		return asBadInput(err)
	}
	g := fab.Graph
	groups, sets, err := mcastGroups(fab, c.String("groups"), c.Uint64("seed"), c.String("mapping"))
	if err != nil {
		return err
	}
	start := time.Now()
	h, err := routing.NewHopTable(g, 0)
	if err != nil {
		return asBadInput(err)
	}
	timings := c.Bool("timings")
	hopSeconds := time.Since(start).Seconds()
	e.log.Info("hop tables built", zap.Float64("seconds", hopSeconds), zap.Int("switches", h.NumSwitches()))
	sum := mcastSummary{Topology: g.Name, Endpoints: len(g.Nodes()) + len(g.Servers()), Switches: h.NumSwitches(),
		Groups: len(groups), Sets: sets, FixedRoot: c.Bool("fixed-root")}
	if timings {
		sum.HopTableSeconds = hopSeconds
	}
	if sum.Topology == "" {
		sum.Topology = spec
	}
	for _, alg := range algos {
		bar := e.progressBar("mcast "+string(alg), 0, "")
		res, err := routing.RouteMulticast(h, groups, alg, routing.McastOptions{FixedRoot: c.Bool("fixed-root"), Progress: bar.Func()})
		bar.Done()
		if err != nil {
			return asBadInput(err)
		}
		e.log.Info("multicast routed", zap.String("algo", string(alg)), zap.Float64("seconds", res.Seconds))
		row := mcastRow{Algorithm: string(alg), MaxEFI: res.MaxEFI, MeanEFI: res.MeanEFI, MaxHeight: res.MaxHeight, MeanHeight: res.MeanHeight}
		if timings {
			row.Seconds = res.Seconds
		}
		sum.Results = append(sum.Results, row)
	}
	switch format {
	case "json", "yaml":
		return writeData(e.stdout, format, sum)
	case "csv":
		head := []string{"algo", "max_efi", "mean_efi", "max_height", "mean_height"}
		if timings {
			head = append(head, "seconds")
		}
		rows := [][]string{head}
		for _, r := range sum.Results {
			rec := []string{r.Algorithm, strconv.Itoa(r.MaxEFI), fmtFloat(r.MeanEFI, 4), strconv.Itoa(r.MaxHeight), fmtFloat(r.MeanHeight, 4)}
			if timings {
				rec = append(rec, fmtFloat(r.Seconds, 4))
			}
			rows = append(rows, rec)
		}
		return writeCSV(e.stdout, rows)
	}
	var parts []string
	for _, s := range sets {
		parts = append(parts, fmt.Sprintf("%s %d", s.Spec, s.Groups))
	}
	hop := ""
	if timings {
		hop = fmt.Sprintf("; hop tables %.3f s", sum.HopTableSeconds)
	}
	fmt.Fprintf(e.stdout, "%s: %d endpoints, %d switches; %d groups (%s)%s\n", sum.Topology, sum.Endpoints,
		sum.Switches, sum.Groups, strings.Join(parts, ", "), hop)
	t := newTable(e.stdout)
	head := []any{"algo", "max EFI", "mean EFI", "max height", "mean height"}
	if timings {
		head = append(head, "seconds")
	}
	t.row(head...)
	for _, r := range sum.Results {
		row := []any{r.Algorithm, r.MaxEFI, fmtFloat(r.MeanEFI, 2), r.MaxHeight, fmtFloat(r.MeanHeight, 2)}
		if timings {
			row = append(row, fmtFloat(r.Seconds, 3))
		}
		t.row(row...)
	}
	return t.flush()
}

func parseMcastAlgos(s string) ([]routing.McastAlgorithm, error) {
	if s == "all" {
		return routing.McastAlgorithms(), nil
	}
	var out []routing.McastAlgorithm
	for _, name := range strings.Split(s, ",") {
		a, err := routing.ParseMcastAlgorithm(strings.TrimSpace(name))
		if err != nil {
			return nil, badInput("--algo: %v", err)
		}
		out = append(out, a)
	}
	return out, nil
}

// mcastGroups generates the groups of every set in spec.
func mcastGroups(fab *topology.Fabric, spec string, seed uint64, mapAlgo string) ([]routing.McastGroup, []mcastSet, error) {
	g := fab.Graph
	nodes := g.Nodes()
	var all []routing.McastGroup
	var sets []mcastSet
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		name, arg, hasArg := strings.Cut(item, ":")
		var gs []routing.McastGroup
		var err error
		needNodes := func() error {
			if len(nodes) == 0 {
				return badInput("--groups %s: %s has no nodes", item, g.Name)
			}
			return nil
		}
		switch {
		case strings.HasPrefix(item, "@"):
			gs, err = mcastReadGroups(fab, item[1:])
		case name == "grid2d":
			if err = needNodes(); err != nil {
				return nil, nil, err
			}
			r, c := routing.GridDims2(len(nodes))
			if hasArg {
				d, derr := mcastDims(arg, 2)
				if derr != nil {
					return nil, nil, badInput("--groups %s: %v", item, derr)
				}
				r, c = d[0], d[1]
			}
			gs, err = routing.Grid2DGroups(nodes, r, c)
		case name == "grid3d" || name == "planes":
			if err = needNodes(); err != nil {
				return nil, nil, err
			}
			a, b, c := routing.GridDims3(len(nodes))
			if hasArg {
				d, derr := mcastDims(arg, 3)
				if derr != nil {
					return nil, nil, badInput("--groups %s: %v", item, derr)
				}
				a, b, c = d[0], d[1], d[2]
			}
			if name == "grid3d" {
				gs, err = routing.Grid3DGroups(nodes, a, b, c)
			} else {
				gs, err = routing.Grid3DPlaneGroups(nodes, a, b, c)
			}
		case name == "leaders":
			if err = needNodes(); err != nil {
				return nil, nil, err
			}
			k := 16
			if hasArg {
				if k, err = strconv.Atoi(arg); err != nil {
					return nil, nil, badInput("--groups %s: fanout %q is not an integer", item, arg)
				}
			}
			gs, err = routing.LeaderGroups(nodes, k)
		case name == "random":
			if err = needNodes(); err != nil {
				return nil, nil, err
			}
			n, size, ok := strings.Cut(arg, ":")
			cnt, err1 := strconv.Atoi(n)
			sz, err2 := strconv.Atoi(size)
			if !ok || err1 != nil || err2 != nil {
				return nil, nil, badInput("--groups %s: want random:N:SIZE, e.g. random:1000:16", item)
			}
			gs, err = routing.RandomGroups(nodes, cnt, sz, seed)
		case name == "servers":
			h := g.Hierarchy()
			if h == nil || len(g.Servers()) == 0 {
				return nil, nil, badInput("--groups servers: %s has no boot servers and named levels (use a machine such as sunway)", g.Name)
			}
			algo, aerr := mapping.ParseAlgo(mapAlgo, h)
			if aerr != nil {
				return nil, nil, badInput("--mapping: %v", aerr)
			}
			a, aerr := mapping.Assign(g, algo, nil, nil)
			if aerr != nil {
				return nil, nil, badInput("--mapping: %v", aerr)
			}
			gs, err = routing.ServerGroups(g, a.Server, nil)
		default:
			return nil, nil, badInput("--groups: %q is not grid2d[:RxC], grid3d[:AxBxC], planes[:AxBxC], leaders[:K], random:N:SIZE, servers or @FILE", item)
		}
		if err != nil {
			return nil, nil, asBadInput(fmt.Errorf("--groups %s: %w", item, err))
		}
		all = append(all, gs...)
		sets = append(sets, mcastSet{Spec: item, Groups: len(gs)})
	}
	return all, sets, nil
}

// mcastDims parses "RxC" or "AxBxC".
func mcastDims(s string, n int) ([]int, error) {
	f := strings.Split(s, "x")
	if len(f) != n {
		return nil, fmt.Errorf("dimensions %q: want %d sizes separated by x", s, n)
	}
	out := make([]int, n)
	for i, x := range f {
		v, err := strconv.Atoi(x)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("dimensions %q: %q is not a positive integer", s, x)
		}
		out[i] = v
	}
	return out, nil
}

// mcastReadGroups reads a groups file.
func mcastReadGroups(fab *topology.Fabric, path string) ([]routing.McastGroup, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mcastParseGroups(f, path, fab)
}

// mcastParseGroups reads groups: per line an optional "NAME:" and endpoint names or GUIDs; errors
// name the file and line.
func mcastParseGroups(r io.Reader, path string, fab *topology.Fabric) ([]routing.McastGroup, error) {
	var out []routing.McastGroup
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(text) == "" {
			continue
		}
		name := fmt.Sprintf("%s:%d", path, line)
		if n, rest, ok := strings.Cut(text, ":"); ok && !strings.ContainsAny(strings.TrimSpace(n), " \t") {
			name, text = strings.TrimSpace(n), rest
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			return nil, fmt.Errorf("%s:%d: group %s is empty", path, line, name)
		}
		gr := routing.McastGroup{Name: name}
		for _, ep := range fields {
			v, ok := fab.Lookup(ep)
			if !ok {
				return nil, fmt.Errorf("%s:%d: unknown endpoint %q", path, line, ep)
			}
			if fab.Kind(v) == topology.Switch {
				return nil, fmt.Errorf("%s:%d: %q is a switch, not an endpoint", path, line, ep)
			}
			gr.Members = append(gr.Members, v)
		}
		out = append(out, gr)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no groups", path)
	}
	return out, nil
}
