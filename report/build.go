package report

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// FlowFunc runs the flow-level model for one batch (node indices) under assignment a with an image
// of imageBytes bytes. Build calls it for every batch, algorithm and scenario; nil leaves the flow
// model out of the report.
type FlowFunc func(g *topology.Graph, a *mapping.Assignment, batch []int, imageBytes float64) (*FlowOutcome, error)

// FlowOutcome is what the report needs from a flow-level simulation.
type FlowOutcome struct {
	// BatchSeconds is when the last node finished.
	BatchSeconds float64
	// NodeSeconds are the nodes' completion times (any order).
	NodeSeconds []float64
	// Limit names what bounded most nodes longest (a segment or a protocol cap; empty: unknown).
	Limit string
}

// Config is what a report is made of.
type Config struct {
	// Machine is the baseline machine description.
	Machine *topology.Machine
	Algos   []mapping.Algo
	// Batches is the ladder of batches, smallest first for the plots to read well.
	Batches    []topology.Batch
	ImageBytes float64
	// Absent marks the baseline's boot servers never up, by index (nil: none).
	Absent    []bool
	Scenarios []*Scenario
	// DistBatch is the index in Batches of the batch whose node completion times are shown; -1
	// picks the largest batch.
	DistBatch int
	// Flow is the flow-level model; nil leaves it out.
	Flow FlowFunc
	// FlowName says which flow model Flow is, for the report's text.
	FlowName string
	// Delivery p2p adds each baseline row's boot with peer delivery: P2PServerBytes of the image
	// from the servers, the rest by peers (fabricsim.PlanP2P).
	Delivery       fabricsim.Delivery
	P2PServerBytes float64
	// UpgradeFactor is how much a segment upgrade multiplies its capacity (0: 10, one Ethernet
	// generation: 1 -> 10 Gb/s).
	UpgradeFactor float64
	// Progress, when set, is told how many rows (batch, algorithm, baseline or scenario) are
	// computed of all, after each row and possibly from several goroutines at once: with the
	// flow model a report takes seconds, and a row is the unit of that work.
	Progress func(done, total int)
}

// Row is one batch under one algorithm.
type Row struct {
	Batch string `json:"batch"`
	Algo  string `json:"algo"`
	fabricsim.Analysis
	// SpeedupVsSCDA is the analytic bandwidth over scda's for the same batch (0 without scda).
	SpeedupVsSCDA float64 `json:"speedup_vs_scda,omitempty"`
	// FlowSpeedupVsSCDA is scda's end-to-end time over this one's for the same batch (0 without
	// scda or the flow model): the ratio of the end-to-end times shown, which protocol caps and
	// fixed times make differ from the bandwidth ratio.
	FlowSpeedupVsSCDA float64 `json:"flow_speedup_vs_scda,omitempty"`
	// FlowSeconds is the flow model's batch time (0 without the flow model).
	FlowSeconds float64 `json:"flow_seconds,omitempty"`
	// FlowSpreadSeconds is the flow model's last minus first node completion time.
	FlowSpreadSeconds float64 `json:"flow_spread_seconds,omitempty"`
	// FlowLimit is what bounded most nodes in the flow model (a segment or "tftp cap").
	FlowLimit string `json:"flow_limit,omitempty"`

	// P2P is the boot with peer delivery beside this one by servers (Config.Delivery p2p).
	P2P *fabricsim.P2PPlan `json:"p2p,omitempty"`

	// nodeSeconds are the flow model's node completion times, kept for the distribution plot.
	nodeSeconds []float64
}

// Case is the baseline or one scenario, computed over the whole ladder.
type Case struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Changes     []string `json:"changes,omitempty"`
	Servers     int      `json:"servers"`
	Failed      int      `json:"failed_servers"`
	ImageBytes  float64  `json:"image_bytes"`
	// Rows are batches outermost, algorithms in Report.Algos order.
	Rows []Row `json:"rows"`
}

// row returns the row of batch i and algorithm j.
func (c *Case) row(i, j, algos int) *Row { return &c.Rows[i*algos+j] }

// LevelSummary is one hierarchy level of the machine.
type LevelSummary struct {
	Name         string  `json:"name"`
	PerParent    int     `json:"per_parent"`
	Total        int     `json:"total"`
	NodesEach    int     `json:"nodes_each"`
	Segment      string  `json:"segment,omitempty"`
	CapacityMbps float64 `json:"capacity_mbps,omitempty"`
}

// SegmentSummary is one segment: its capacity and where it is.
type SegmentSummary struct {
	Name         string  `json:"name"`
	Link         string  `json:"link"`
	CapacityMbps float64 `json:"capacity_mbps"`
	Links        int     `json:"links"`
}

// MachineSummary describes the baseline machine.
type MachineSummary struct {
	Name        string           `json:"name"`
	Description string           `json:"description,omitempty"`
	Nodes       int              `json:"nodes"`
	Switches    int              `json:"switches"`
	Servers     int              `json:"servers"`
	PerCascade  int              `json:"servers_per_cascade"`
	Cascades    int              `json:"cascades"`
	Failed      []string         `json:"failed_servers,omitempty"`
	Levels      []LevelSummary   `json:"levels"`
	Segments    []SegmentSummary `json:"segments"`
}

// Dist is the completion-time distribution of one algorithm on the chosen batch.
type Dist struct {
	Algo string `json:"algo"`
	// Percentiles holds the nearest-rank percentiles listed in Distribution.Ranks.
	Percentiles []float64 `json:"percentiles_seconds"`
	Mean        float64   `json:"mean_seconds"`
	// CDF is the fraction of nodes done (Y) by each time (X), at most 101 points.
	CDFSeconds  []float64 `json:"cdf_seconds"`
	CDFFraction []float64 `json:"cdf_fraction"`
}

// distPercentiles returns the percentiles tabled for completion times.
func distPercentiles() []float64 { return []float64{0, 10, 50, 90, 99, 100} }

// Distribution is the node completion times of one batch for every algorithm.
type Distribution struct {
	Batch string `json:"batch"`
	Nodes int    `json:"nodes"`
	// Model is "flow" or, without a flow model, "analytic" (each node at its own path's bandwidth).
	Model string `json:"model"`
	// Ranks are the percentiles in each Dist's Percentiles (0 is the first node, 100 the last).
	Ranks []float64 `json:"percentile_ranks"`
	Algos []Dist    `json:"algos"`
}

// BatchInfo is one batch of the ladder.
type BatchInfo struct {
	Label string `json:"label"`
	Nodes int    `json:"nodes"`
}

// Report is everything a report shows; the writers only format it.
type Report struct {
	Machine    MachineSummary `json:"machine"`
	ImageBytes float64        `json:"image_bytes"`
	Segments   []string       `json:"segments"`
	Algos      []string       `json:"algos"`
	Batches    []BatchInfo    `json:"batches"`
	// Delivery is "p2p" when the rows have their boot by peers beside the one by servers.
	Delivery string `json:"delivery,omitempty"`
	// FlowModel names the flow model, empty when the report has only the analytic one.
	FlowModel      string         `json:"flow_model,omitempty"`
	Baseline       *Case          `json:"baseline"`
	Scenarios      []*Case        `json:"scenarios,omitempty"`
	Distribution   *Distribution  `json:"distribution,omitempty"`
	Recommendation Recommendation `json:"recommendation"`
	// Headline is the boot time of every batch under the recommended mapping, end to end first.
	Headline Headline `json:"headline"`
}

// Build computes a report: it checks the configuration and the scenarios, runs the models over
// the ladder (the baseline first: its results choose the mapping), then derives the distribution,
// the recommendation and the headline from the results.
func Build(cfg Config) (*Report, error) {
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	g, err := cfg.Machine.Build()
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	sortBatches(&cfg)
	rep := newReport(cfg, g)
	// Scenarios are checked against the machine before any work, so that bad input fails at once.
	inputs, applied, err := applyScenarios(cfg)
	if err != nil {
		return nil, err
	}
	bestJ, err := rep.runModels(cfg, g, inputs, applied)
	if err != nil {
		return nil, err
	}
	if cfg.DistBatch < 0 {
		cfg.DistBatch = widestSpread(rep.Baseline, len(cfg.Batches), len(cfg.Algos))
	}
	if rep.Distribution, err = distribution(cfg, g, rep.Baseline); err != nil {
		return nil, err
	}
	if rep.Recommendation, err = recommend(cfg, rep, bestJ); err != nil {
		return nil, err
	}
	rep.Headline = headline(rep, bestJ)
	return rep, nil
}

// checkConfig rejects a configuration the models cannot run and fills in the default upgrade
// factor.
func checkConfig(cfg *Config) error {
	if cfg.Machine == nil {
		return fmt.Errorf("report: no machine")
	}
	if len(cfg.Algos) == 0 || len(cfg.Batches) == 0 {
		return fmt.Errorf("report: need at least one algorithm and one batch")
	}
	if !(cfg.ImageBytes > 0) {
		return fmt.Errorf("report: image size must be positive, got %v", cfg.ImageBytes)
	}
	if cfg.UpgradeFactor == 0 {
		cfg.UpgradeFactor = 10
	}
	if !(cfg.UpgradeFactor > 1) {
		return fmt.Errorf("report: upgrade factor must be above 1, got %v", cfg.UpgradeFactor)
	}
	return nil
}

// sortBatches orders the ladder smallest batch first, because plots read left to right (stable, so
// equal sizes keep their order), and moves DistBatch with its batch.
func sortBatches(cfg *Config) {
	var dist *topology.Batch
	if cfg.DistBatch >= 0 && cfg.DistBatch < len(cfg.Batches) {
		dist = &cfg.Batches[cfg.DistBatch]
	}
	batches := slices.Clone(cfg.Batches)
	slices.SortStableFunc(batches, func(a, b topology.Batch) int { return len(a.Nodes) - len(b.Nodes) })
	if dist != nil {
		cfg.DistBatch = slices.IndexFunc(batches, func(b topology.Batch) bool { return b.Label == dist.Label && len(b.Nodes) == len(dist.Nodes) })
	}
	cfg.Batches = batches
}

// newReport is the report's description of its inputs, before any model runs.
func newReport(cfg Config, g *topology.Graph) *Report {
	rep := &Report{ImageBytes: cfg.ImageBytes, Segments: fabricsim.SegmentNames(g)}
	if cfg.Delivery == fabricsim.P2PDelivery {
		rep.Delivery = cfg.Delivery.String()
	}
	if cfg.Flow != nil {
		rep.FlowModel = cfg.FlowName
		if rep.FlowModel == "" {
			rep.FlowModel = "flow"
		}
	}
	for _, a := range cfg.Algos {
		rep.Algos = append(rep.Algos, a.Name)
	}
	for _, b := range cfg.Batches {
		rep.Batches = append(rep.Batches, BatchInfo{Label: b.Label, Nodes: len(b.Nodes)})
	}
	rep.Machine = summarize(cfg.Machine, g, cfg.Absent, rep.Segments)
	return rep
}

// applyScenarios applies every scenario to the machine and builds its graph.
func applyScenarios(cfg Config) ([]caseInput, []*applied, error) {
	var inputs []caseInput
	var out []*applied
	for _, s := range cfg.Scenarios {
		ap, err := s.apply(cfg.Machine, cfg.Absent, cfg.ImageBytes)
		if err != nil {
			return nil, nil, err
		}
		sg, err := ap.machine.Build()
		if err != nil {
			return nil, nil, s.errorf("", "%v", err)
		}
		out = append(out, ap)
		inputs = append(inputs, caseInput{g: sg, absent: ap.absent, image: ap.imageBytes, name: s.Name})
	}
	return inputs, out, nil
}

// runModels runs the baseline first, in both models; its results choose the mapping, whose index
// it returns. Then the scenarios: the analytic model for every algorithm, the flow model for the
// chosen mapping only, which is the one the scenarios are compared under (and keeps the whole
// report within seconds).
func (rep *Report) runModels(cfg Config, g *topology.Graph, inputs []caseInput, applied []*applied) (int, error) {
	var rowsDone atomic.Int64
	rowDone := func() {
		if cfg.Progress != nil {
			cfg.Progress(int(rowsDone.Add(1)), (1+len(inputs))*len(cfg.Algos)*len(cfg.Batches))
		}
	}
	cases, err := runCases(cfg, []caseInput{{g: g, absent: cfg.Absent, image: cfg.ImageBytes}}, func(int) bool { return true }, rowDone)
	if err != nil {
		return 0, err
	}
	rep.Baseline = cases[0]
	rep.Baseline.Name = "baseline"
	rep.Baseline.Description = cfg.Machine.Name + " as described"
	bestJ := chooseMapping(cfg, rep.Baseline)
	if cases, err = runCases(cfg, inputs, func(j int) bool { return j == bestJ }, rowDone); err != nil {
		return 0, err
	}
	for k, s := range cfg.Scenarios {
		c := cases[k]
		for i := range c.Rows {
			c.Rows[i].nodeSeconds = nil // only the baseline's feed the distribution
		}
		c.Name, c.Description, c.Changes = s.Name, s.Description, applied[k].changes
		rep.Scenarios = append(rep.Scenarios, c)
	}
	return bestJ, nil
}

func countFailed(absent []bool) int {
	n := 0
	for _, f := range absent {
		if f {
			n++
		}
	}
	return n
}

// assignments returns one assignment per algorithm for batch b (block-cyclic ones are shared by
// all batches through fixed).
func assignment(g *topology.Graph, algo mapping.Algo, fixed **mapping.Assignment, batch []int, absent []bool) (*mapping.Assignment, error) {
	if !algo.Balanced && *fixed != nil {
		return *fixed, nil
	}
	a, err := mapping.Assign(g, algo, batch, absent)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", algo.Name, err)
	}
	if !algo.Balanced {
		*fixed = a
	}
	return a, nil
}

// caseInput is the machine and plan of the baseline or one scenario.
type caseInput struct {
	g      *topology.Graph
	absent []bool
	image  float64
	name   string // of the scenario, for errors
}

// runCases runs the analytic model over the ladder for every case and algorithm, and the flow
// model (when there is one) for the algorithms flowFor accepts. Each (case, algorithm) is a task
// with its own analyzer; tasks run side by side on the cores there are, and results land by index,
// so the output does not depend on scheduling. rowDone is called after each row.
func runCases(cfg Config, in []caseInput, flowFor func(j int) bool, rowDone func()) ([]*Case, error) {
	na := len(cfg.Algos)
	type task struct {
		rows []Row
		err  error
	}
	tasks := make([]task, len(in)*na)
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	for k := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ci, j := in[k/na], k%na
			tasks[k].rows, tasks[k].err = runAlgo(cfg, ci.g, ci.absent, ci.image, j, cfg.Flow != nil && flowFor(j), rowDone)
		}()
	}
	wg.Wait()
	out := make([]*Case, len(in))
	for c, ci := range in {
		cs := &Case{Servers: len(ci.g.Servers()), Failed: countFailed(ci.absent), ImageBytes: ci.image}
		for j := 0; j < na; j++ {
			if err := tasks[c*na+j].err; err != nil {
				if ci.name != "" {
					return nil, fmt.Errorf("scenario %q: %w", ci.name, err)
				}
				return nil, err
			}
		}
		// Batches outermost, then the ratio to scda within each batch.
		for i := range cfg.Batches {
			first := len(cs.Rows)
			for j := 0; j < na; j++ {
				cs.Rows = append(cs.Rows, tasks[c*na+j].rows[i])
			}
			setSpeedups(cs.Rows[first:])
		}
		out[c] = cs
	}
	return out, nil
}

// setSpeedups sets the ratios to scda of one batch's rows, in each model from that model's figures.
func setSpeedups(rows []Row) {
	for _, s := range rows {
		if s.Algo != "scda" {
			continue
		}
		for k := range rows {
			r := &rows[k]
			if s.BandwidthMbps > 0 {
				r.SpeedupVsSCDA = r.BandwidthMbps / s.BandwidthMbps
			}
			if s.FlowSeconds > 0 && r.FlowSeconds > 0 {
				r.FlowSpeedupVsSCDA = s.FlowSeconds / r.FlowSeconds
			}
		}
	}
}

// runAlgo runs algorithm j over the ladder on g: the analytic model, and the flow model when flow
// is set; rowDone is called after each row.
func runAlgo(cfg Config, g *topology.Graph, absent []bool, image float64, j int, flow bool, rowDone func()) ([]Row, error) {
	an, err := fabricsim.NewAnalyzer(g, nil)
	if err != nil {
		return nil, err
	}
	algo := cfg.Algos[j]
	var fixed *mapping.Assignment
	rows := make([]Row, 0, len(cfg.Batches))
	for _, b := range cfg.Batches {
		a, err := assignment(g, algo, &fixed, b.Nodes, absent)
		if err != nil {
			return nil, err
		}
		res, err := an.Analyze(a, b.Nodes, image)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", b.Label, algo.Name, err)
		}
		r := Row{Batch: b.Label, Algo: algo.Name, Analysis: *res}
		if cfg.Delivery == fabricsim.P2PDelivery && len(b.Nodes) > 0 {
			server := cfg.P2PServerBytes
			if image != cfg.ImageBytes { // a scenario's image: the split of its size
				server, _ = fabricsim.P2PSplit(image)
			}
			if r.P2P, err = fabricsim.PlanP2P(g, nil, a, b.Nodes, res, image, server, 0); err != nil {
				return nil, fmt.Errorf("%s, %s: %w", b.Label, algo.Name, err)
			}
		}
		if flow {
			fo, err := cfg.Flow(g, a, b.Nodes, image)
			if err != nil {
				return nil, fmt.Errorf("flow model, %s, %s: %w", b.Label, algo.Name, err)
			}
			r.FlowSeconds, r.FlowLimit = fo.BatchSeconds, fo.Limit
			if len(fo.NodeSeconds) > 0 {
				r.FlowSpreadSeconds = slices.Max(fo.NodeSeconds) - slices.Min(fo.NodeSeconds)
			}
			r.nodeSeconds = fo.NodeSeconds
		}
		rows = append(rows, r)
		rowDone()
	}
	return rows, nil
}

func summarize(m *topology.Machine, g *topology.Graph, absent []bool, order []string) MachineSummary {
	h := g.Hierarchy()
	s := MachineSummary{Name: m.Name, Description: m.Description, Nodes: len(g.Nodes()), Servers: len(g.Servers()),
		Switches: g.NumVertices() - len(g.Nodes()) - len(g.Servers()), PerCascade: m.Servers.PerCascade}
	if s.PerCascade > 0 {
		s.Cascades = (s.Servers + s.PerCascade - 1) / s.PerCascade
	}
	for i, f := range absent {
		if f {
			s.Failed = append(s.Failed, fmt.Sprintf("bs%d", i))
		}
	}
	last := len(m.Levels) - 1
	where := map[string]string{}
	for i, l := range m.Levels {
		ls := LevelSummary{Name: l.Name, PerParent: l.Count, Total: h.Total(i), NodesEach: h.Span(i)}
		if l.Uplink != nil {
			ls.Segment, ls.CapacityMbps = l.Uplink.Segment, l.Uplink.CapacityMbps
			if i == last {
				where[l.Uplink.Segment] = l.Name + " NIC"
			} else {
				where[l.Uplink.Segment] = l.Name + " switch uplink"
			}
		}
		s.Levels = append(s.Levels, ls)
	}
	where[m.Servers.NIC.Segment] = "boot server NIC"
	if m.Servers.CascadeUplink != nil {
		where[m.Servers.CascadeUplink.Segment] = "cascade switch uplink to core"
	}
	count := make([]int, len(g.Segments()))
	for l := 0; l < g.NumLinks(); l++ {
		count[g.Link(topology.LinkID(l)).Segment]++
	}
	for _, name := range order {
		idx := slices.Index(g.Segments(), name)
		s.Segments = append(s.Segments, SegmentSummary{Name: name, Link: where[name], CapacityMbps: segmentCapacity(m, name), Links: count[idx]})
	}
	return s
}

// widestSpread returns the batch whose flow-model completion times spread most (relative to the
// batch time) under any algorithm; the largest batch when none spreads.
func widestSpread(c *Case, batches, algos int) int {
	best, bestSpread := -1, 1e-6
	for i := 0; i < batches; i++ {
		for j := 0; j < algos; j++ {
			r := c.row(i, j, algos)
			if r.FlowSeconds > 0 && r.FlowSpreadSeconds/r.FlowSeconds > bestSpread {
				best, bestSpread = i, r.FlowSpreadSeconds/r.FlowSeconds
			}
		}
	}
	return best
}

// distribution computes the node completion times of the chosen batch for every algorithm, from
// the flow model when there is one, else from each node's own analytic path bandwidth.
func distribution(cfg Config, g *topology.Graph, base *Case) (*Distribution, error) {
	bi := cfg.DistBatch
	if bi < 0 || bi >= len(cfg.Batches) {
		bi = 0
		for i, b := range cfg.Batches {
			if len(b.Nodes) > len(cfg.Batches[bi].Nodes) {
				bi = i
			}
		}
	}
	b := cfg.Batches[bi]
	d := &Distribution{Batch: b.Label, Nodes: len(b.Nodes), Model: "analytic", Ranks: distPercentiles()}
	if cfg.Flow != nil {
		d.Model = "flow"
	}
	for j, algo := range cfg.Algos {
		var times []float64
		if cfg.Flow != nil {
			// The baseline already ran the flow model on this batch.
			times = slices.Clone(base.row(bi, j, len(cfg.Algos)).nodeSeconds)
		} else {
			var fixed *mapping.Assignment
			a, err := assignment(g, algo, &fixed, b.Nodes, cfg.Absent)
			if err != nil {
				return nil, err
			}
			if times, err = NodeAnalytic(g, a, b.Nodes, cfg.ImageBytes); err != nil {
				return nil, err
			}
		}
		d.Algos = append(d.Algos, summarizeTimes(algo.Name, times))
	}
	return d, nil
}

func summarizeTimes(algo string, times []float64) Dist {
	sort.Float64s(times)
	d := Dist{Algo: algo}
	if len(times) == 0 {
		return d
	}
	sum := 0.0
	for _, t := range times {
		sum += t
	}
	d.Mean = sum / float64(len(times))
	for _, p := range distPercentiles() {
		i := int(math.Ceil(p/100*float64(len(times)))) - 1
		d.Percentiles = append(d.Percentiles, times[max(0, min(i, len(times)-1))])
	}
	// The CDF at up to 101 evenly spaced ranks, starting from no node done at the first completion
	// (so that the time axis spans the completions, not the wait before them).
	d.CDFSeconds, d.CDFFraction = []float64{times[0]}, []float64{0}
	n := len(times)
	steps := min(n, 100)
	for k := 1; k <= steps; k++ {
		i := (k*n+steps-1)/steps - 1
		d.CDFSeconds = append(d.CDFSeconds, times[i])
		d.CDFFraction = append(d.CDFFraction, float64(i+1)/float64(n))
	}
	return d
}

// NodeAnalytic returns each batch node's boot time under the analytic model when it runs at its own
// path's bandwidth (the minimum over its route of capacity/sharers) rather than the slowest node's:
// the spread of completion times the analytic model implies. Times are in batch order.
func NodeAnalytic(g *topology.Graph, a *mapping.Assignment, batch []int, imageBytes float64) ([]float64, error) {
	r := g.TreeRouter()
	if r == nil {
		return nil, fmt.Errorf("node times: %s is not a tree", g.Name)
	}
	sharers := make([]int32, g.NumChannels())
	routes := make([][]topology.Channel, len(batch))
	var buf []topology.Channel
	for k, n := range batch {
		if n < 0 || n >= len(a.Server) || a.Server[n] < 0 {
			return nil, fmt.Errorf("node times: node %d has no boot server", n)
		}
		var err error
		start := len(buf)
		if buf, err = r.Route(buf, g.Servers()[a.Server[n]], g.Nodes()[n]); err != nil {
			return nil, fmt.Errorf("node times: %w", err)
		}
		routes[k] = buf[start:len(buf):len(buf)]
		for _, c := range routes[k] {
			sharers[c]++
		}
	}
	out := make([]float64, len(batch))
	for k, route := range routes {
		bw := math.Inf(1)
		for _, c := range route {
			bw = min(bw, g.ChannelCapacity(c)/float64(sharers[c]))
		}
		out[k] = imageBytes * 8 / (bw * 1e6)
	}
	return out, nil
}
