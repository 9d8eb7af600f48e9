package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/bootfabric/bootfabric/units"
)

// Upgrade is the effect of raising the capacity of one or more segments on one batch.
type Upgrade struct {
	Segments []string `json:"segments"`
	// CapacityMbps is each segment's capacity after the upgrade.
	CapacityMbps  []float64 `json:"capacity_mbps"`
	BeforeSeconds float64   `json:"before_seconds"`
	AfterSeconds  float64   `json:"after_seconds"`
	// Bottlenecks are the limiting segments after the upgrade.
	Bottlenecks []string `json:"bottlenecks_after"`
	// EndToEndBeforeSeconds and EndToEndAfterSeconds are the same batch's boot in the end-to-end
	// flow model (0 without it), and EndToEndLimitAfter what bounds it after the upgrade.
	EndToEndBeforeSeconds float64 `json:"end_to_end_before_seconds,omitempty"`
	EndToEndAfterSeconds  float64 `json:"end_to_end_after_seconds,omitempty"`
	EndToEndLimitAfter    string  `json:"end_to_end_limit_after,omitempty"`
}

// Gain is how many times faster the batch boots after the upgrade.
func (u Upgrade) Gain() float64 {
	if !(u.AfterSeconds > 0) {
		return 1
	}
	return u.BeforeSeconds / u.AfterSeconds
}

// BatchUpgrade is the best first upgrade for one batch of the ladder.
type BatchUpgrade struct {
	Batch       string   `json:"batch"`
	Nodes       int      `json:"nodes"`
	Bottlenecks []string `json:"bottlenecks"`
	BootSeconds float64  `json:"boot_seconds"`
	// Best is the upgrade that cuts the boot time most; nil when none helps.
	Best *Upgrade `json:"best,omitempty"`
}

// Recommendation is computed from the results: the mapping to use and the segments to upgrade.
type Recommendation struct {
	Mapping string `json:"mapping"`
	// Wins counts, per algorithm in Report.Algos order, the batches where it is fastest or tied.
	Wins []int `json:"wins"`
	// TotalSeconds is each algorithm's boot time summed over the ladder.
	TotalSeconds []float64 `json:"total_seconds"`
	// Factor is the capacity multiplier of an upgrade.
	Factor float64 `json:"factor"`
	// Batch is the batch the upgrade path is computed for (the largest of the ladder).
	Batch string `json:"batch"`
	// Singles are the effects of upgrading each segment alone on Batch.
	Singles []Upgrade `json:"singles"`
	// Steps is the upgrade path: at each step the upgrade (one segment, or the segments that bind
	// together) that cuts Batch's boot time most, each segment upgraded at most once.
	Steps []Upgrade `json:"steps"`
	// PerBatch is the best first upgrade for every batch of the ladder.
	PerBatch []BatchUpgrade `json:"per_batch"`
	// Text is the recommendation in sentences.
	Text []string `json:"text"`
}

const relTol = 1e-9

func sameTime(a, b float64) bool { return math.Abs(a-b) <= relTol*math.Max(math.Abs(a), math.Abs(b)) }

// chooseMapping picks the mapping with the most batches where it is fastest and returns its index
// in cfg.Algos. Ties, as on the paper's machine where bcda, ncda and balanced give the same
// bandwidth on every batch, go to the simplest mapping to run: the smallest total over the ladder,
// then a static block-cyclic mapping before balanced (which needs the batch in advance and
// re-plans every batch), then the coarsest blocks (one server per board rather than per node: the
// fewest blocks to deal, and the fewest block moves when a server fails).
func chooseMapping(cfg Config, base *Case) int {
	wins, total := mappingScores(cfg, base)
	better := func(j, k int) bool { // is algorithm j a better choice than k?
		if wins[j] != wins[k] {
			return wins[j] > wins[k]
		}
		if !sameTime(total[j], total[k]) {
			return total[j] < total[k]
		}
		aj, ak := cfg.Algos[j], cfg.Algos[k]
		if aj.Balanced != ak.Balanced {
			return !aj.Balanced
		}
		return !aj.Balanced && aj.Level < ak.Level
	}
	bestJ := 0
	for j := 1; j < len(cfg.Algos); j++ {
		if better(j, bestJ) {
			bestJ = j
		}
	}
	return bestJ
}

// mappingScores counts, per algorithm, the batches where it is fastest or tied, and sums its boot
// times over the ladder.
func mappingScores(cfg Config, base *Case) ([]int, []float64) {
	na := len(cfg.Algos)
	wins, total := make([]int, na), make([]float64, na)
	for i := range cfg.Batches {
		best := math.Inf(1)
		for j := 0; j < na; j++ {
			best = min(best, base.row(i, j, na).BootSeconds)
		}
		for j := 0; j < na; j++ {
			t := base.row(i, j, na).BootSeconds
			total[j] += t
			if sameTime(t, best) {
				wins[j]++
			}
		}
	}
	return wins, total
}

// recommend explains the choice of mapping bestJ, then re-runs the analytic model with segment
// capacities raised to find what to upgrade first and what that buys.
func recommend(cfg Config, rep *Report, bestJ int) (Recommendation, error) {
	rec := Recommendation{Factor: cfg.UpgradeFactor}
	rec.Wins, rec.TotalSeconds = mappingScores(cfg, rep.Baseline)
	rec.Mapping = cfg.Algos[bestJ].Name
	rec.Text = append(rec.Text, mappingText(cfg, rep, rec, bestJ)...)

	// Upgrades, judged with the recommended mapping.
	ev := &evaluator{cfg: cfg, algo: cfg.Algos[bestJ], cache: map[string][]*fabricsim.Analysis{}, flows: map[string]*FlowOutcome{}}
	base, err := ev.run(cfg.Machine)
	if err != nil {
		return rec, err
	}
	if rec.PerBatch, err = ev.perBatch(rep.Segments, base); err != nil {
		return rec, err
	}
	// The upgrade path for the largest batch.
	li := largestBatch(cfg.Batches)
	rec.Batch = cfg.Batches[li].Label
	for _, seg := range rep.Segments {
		u, err := ev.upgrade(cfg.Machine, []string{seg}, li, base[li].BootSeconds)
		if err != nil {
			return rec, err
		}
		rec.Singles = append(rec.Singles, u)
	}
	if rec.Steps, err = ev.path(rep.Segments, li, base[li]); err != nil {
		return rec, err
	}
	if err := ev.endToEnd(&rec, li); err != nil {
		return rec, err
	}
	rec.Text = append(rec.Text, upgradeText(rep, rec, cfg.Batches[li], base[li])...)
	return rec, nil
}

// perBatch is the best upgrade of each batch: of one segment, or of the segments that bind
// together.
func (ev *evaluator) perBatch(segs []string, base []*fabricsim.Analysis) ([]BatchUpgrade, error) {
	var out []BatchUpgrade
	for i, b := range ev.cfg.Batches {
		bu := BatchUpgrade{Batch: b.Label, Nodes: len(b.Nodes), Bottlenecks: base[i].Bottlenecks, BootSeconds: base[i].BootSeconds}
		cands := singleSets(segs)
		if len(base[i].Bottlenecks) > 1 {
			cands = append(cands, base[i].Bottlenecks)
		}
		var err error
		if bu.Best, err = ev.best(ev.cfg.Machine, cands, i, base[i].BootSeconds); err != nil {
			return nil, err
		}
		out = append(out, bu)
	}
	return out, nil
}

// best is the candidate upgrade that gains most on batch i of m, nil when none gains.
func (ev *evaluator) best(m *topology.Machine, cands [][]string, i int, now float64) (*Upgrade, error) {
	var best *Upgrade
	for _, set := range cands {
		u, err := ev.upgrade(m, set, i, now)
		if err != nil {
			return nil, err
		}
		if u.Gain() > 1+1e-6 && (best == nil || betterUpgrade(u, *best)) {
			best = &u
		}
	}
	return best, nil
}

// largestBatch is the index of the first batch with the most nodes.
func largestBatch(batches []topology.Batch) int {
	li := 0
	for i, b := range batches {
		if len(b.Nodes) > len(batches[li].Nodes) {
			li = i
		}
	}
	return li
}

// path is up to three upgrades of batch li, each the best on the machine the ones before it left.
func (ev *evaluator) path(segs []string, li int, base *fabricsim.Analysis) ([]Upgrade, error) {
	m, now, bott := ev.cfg.Machine, base.BootSeconds, base.Bottlenecks
	var steps []Upgrade
	var done []string
	for step := 0; step < 3; step++ {
		best, err := ev.best(m, pathCandidates(segs, done, bott), li, now)
		if err != nil {
			return nil, err
		}
		if best == nil {
			break
		}
		steps = append(steps, *best)
		done = append(done, best.Segments...)
		for k, s := range best.Segments {
			m, _ = withCapacity(m, s, best.CapacityMbps[k])
		}
		now, bott = best.AfterSeconds, best.Bottlenecks
	}
	return steps, nil
}

// pathCandidates are the upgrades left after done: each segment not yet upgraded, and the
// remaining bottlenecks together when more than one binds.
func pathCandidates(segs, done, bott []string) [][]string {
	var cands [][]string
	for _, s := range singleSets(segs) {
		if !slices.Contains(done, s[0]) {
			cands = append(cands, s)
		}
	}
	var joint []string
	for _, s := range bott {
		if !slices.Contains(done, s) {
			joint = append(joint, s)
		}
	}
	if len(joint) > 1 {
		cands = append(cands, joint)
	}
	return cands
}

func singleSets(segs []string) [][]string {
	out := make([][]string, len(segs))
	for i, s := range segs {
		out[i] = []string{s}
	}
	return out
}

// betterUpgrade prefers the larger cut, then fewer segments to change.
func betterUpgrade(u, v Upgrade) bool {
	if !sameTime(u.AfterSeconds, v.AfterSeconds) {
		return u.AfterSeconds < v.AfterSeconds
	}
	return len(u.Segments) < len(v.Segments)
}

// evaluator re-runs the analytic model on machines with raised capacities, caching by machine.
type evaluator struct {
	cfg   Config
	algo  mapping.Algo
	cache map[string][]*fabricsim.Analysis
	flows map[string]*FlowOutcome // flow model runs by machine and batch
}

// machineKey identifies a machine by its link capacities (the only thing upgrades change).
func machineKey(m *topology.Machine) string {
	var b strings.Builder
	for _, l := range links(m) {
		fmt.Fprintf(&b, "%s=%g;", l.Segment, l.CapacityMbps)
	}
	return b.String()
}

// run analyses every batch of the ladder on m with the evaluator's algorithm.
func (ev *evaluator) run(m *topology.Machine) ([]*fabricsim.Analysis, error) {
	key := machineKey(m)
	if r, ok := ev.cache[key]; ok {
		return r, nil
	}
	g, err := m.Build()
	if err != nil {
		return nil, fmt.Errorf("upgrade: %w", err)
	}
	an, err := fabricsim.NewAnalyzer(g, nil)
	if err != nil {
		return nil, err
	}
	var fixed *mapping.Assignment
	out := make([]*fabricsim.Analysis, len(ev.cfg.Batches))
	for i, b := range ev.cfg.Batches {
		a, err := assignment(g, ev.algo, &fixed, b.Nodes, ev.cfg.Absent)
		if err != nil {
			return nil, err
		}
		if out[i], err = an.Analyze(a, b.Nodes, ev.cfg.ImageBytes); err != nil {
			return nil, err
		}
	}
	ev.cache[key] = out
	return out, nil
}

// upgrade raises the segments of set by the factor on m and reports the effect on batch i.
func (ev *evaluator) upgrade(m *topology.Machine, set []string, i int, before float64) (Upgrade, error) {
	u := Upgrade{Segments: slices.Clone(set), BeforeSeconds: before}
	for _, s := range set {
		c := segmentCapacity(m, s) * ev.cfg.UpgradeFactor
		u.CapacityMbps = append(u.CapacityMbps, c)
		m, _ = withCapacity(m, s, c)
	}
	res, err := ev.run(m)
	if err != nil {
		return u, err
	}
	u.AfterSeconds, u.Bottlenecks = res[i].BootSeconds, res[i].Bottlenecks
	return u, nil
}

func mappingText(cfg Config, rep *Report, rec Recommendation, bestJ int) []string {
	na := len(cfg.Algos)
	nb := len(cfg.Batches)
	var out []string
	s := fmt.Sprintf("Use %s: it is the fastest mapping (or tied) on %d of %d batches, %s s of boot time summed over the ladder (%s).",
		rec.Mapping, rec.Wins[bestJ], nb, fmtSig(rec.TotalSeconds[bestJ]), BandwidthModel)
	if cfg.Algos[bestJ].Balanced {
		s += " It needs the batch in advance (it assigns per batch)."
	}
	out = append(out, s)
	if t := tieText(cfg, rep.Baseline, bestJ); t != "" {
		out = append(out, t)
	}
	sj := slices.IndexFunc(cfg.Algos, func(a mapping.Algo) bool { return a.Name == "scda" })
	if sj < 0 {
		return out
	}
	// One sentence per distinct speed-up profile: mappings that tie say it once, together.
	last := nb - 1
	var said []string
	var names [][]string
	for j := 0; j < na; j++ {
		if j == sj {
			continue
		}
		best, at := 0.0, []string{}
		for i := 0; i < nb; i++ {
			r := rep.Baseline.row(i, j, na).SpeedupVsSCDA
			switch {
			case r > best*(1+relTol):
				best, at = r, []string{cfg.Batches[i].Label}
			case sameTime(r, best):
				at = append(at, cfg.Batches[i].Label)
			}
		}
		tail := fmt.Sprintf("up to %sx scda (at %s) and %sx at %s.", fmtSig(best), strings.Join(at, ", "),
			fmtSig(rep.Baseline.row(last, j, na).SpeedupVsSCDA), cfg.Batches[last].Label)
		if k := slices.Index(said, tail); k >= 0 {
			names[k] = append(names[k], cfg.Algos[j].Name)
			continue
		}
		said, names = append(said, tail), append(names, []string{cfg.Algos[j].Name})
	}
	for k, tail := range said {
		verb := "is"
		if len(names[k]) > 1 {
			verb = "are"
		}
		out = append(out, fmt.Sprintf("%s %s %s", joinAnd(names[k]), verb, tail))
	}
	return out
}

// tieText explains a recommendation among mappings that tie on every batch of the ladder: which
// tie, that they tie because they put as many booting nodes behind every bottleneck, and why the
// recommended one is picked (chooseMapping's tie-breaks). Empty when nothing ties.
func tieText(cfg Config, base *Case, bestJ int) string {
	tied := tiedMappings(cfg, base, bestJ)
	if len(tied) == 0 {
		return ""
	}
	best := cfg.Algos[bestJ]
	verb := "ties"
	if len(tied) > 1 {
		verb = "tie"
	}
	var names []string
	balanced, finer := false, false
	for _, a := range tied {
		names = append(names, a.Name)
		balanced = balanced || a.Balanced
		finer = finer || !a.Balanced && a.Level > best.Level
	}
	s := fmt.Sprintf("%s %s with %s on every batch: each puts as many booting nodes behind every bottleneck link, so each node gets the same bandwidth.",
		joinAnd(names), verb, best.Name)
	var why []string
	if balanced && !best.Balanced {
		why = append(why, "it is static, while balanced needs the batch in advance and re-plans every batch")
	}
	if finer && !best.Balanced {
		level := fmt.Sprintf("level %d", best.Level)
		if best.Level >= 0 && best.Level < len(cfg.Machine.Levels) {
			level = cfg.Machine.Levels[best.Level].Name
		}
		why = append(why, fmt.Sprintf("it deals the coarsest blocks (a whole %s to one server): the fewest blocks to deal, and the fewest block moves when a server fails", level))
	}
	if len(why) == 0 {
		return s + fmt.Sprintf(" %s is listed first among them.", capitalize(best.Name))
	}
	return s + fmt.Sprintf(" %s is the simplest of them: %s.", capitalize(best.Name), strings.Join(why, "; "))
}

// tiedMappings are the algorithms other than bestJ with bestJ's boot time on every batch.
func tiedMappings(cfg Config, base *Case, bestJ int) []mapping.Algo {
	na := len(cfg.Algos)
	var tied []mapping.Algo
	for j := 0; j < na; j++ {
		if j == bestJ {
			continue
		}
		same := true
		for i := range cfg.Batches {
			same = same && sameTime(base.row(i, j, na).BootSeconds, base.row(i, bestJ, na).BootSeconds)
		}
		if same {
			tied = append(tied, cfg.Algos[j])
		}
	}
	return tied
}

// joinAnd writes a, b and c.
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func describeUpgrade(u Upgrade) string {
	var parts []string
	for k, s := range u.Segments {
		parts = append(parts, fmt.Sprintf("%s at %s", s, fmtRate(u.CapacityMbps[k])))
	}
	if len(parts) > 1 {
		return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	return strings.Join(parts, "")
}

func upgradeText(rep *Report, rec Recommendation, b topology.Batch, base *fabricsim.Analysis) []string {
	var out []string
	out = append(out, fmt.Sprintf("At %s (%d nodes) with %s the bottleneck is %s at %s Mb/s per node: %s s to boot a %s image in the "+BandwidthModel+", which the upgrades below are computed with.",
		b.Label, len(b.Nodes), rec.Mapping, strings.Join(base.Bottlenecks, " and "), fmtSig(base.BandwidthMbps), fmtSig(base.BootSeconds), units.FormatBytes(rep.ImageBytes)))
	if len(base.Bottlenecks) > 1 {
		var none []string
		for _, u := range rec.Singles {
			if slices.Contains(base.Bottlenecks, u.Segments[0]) && u.Gain() <= 1+1e-6 {
				none = append(none, u.Segments[0])
			}
		}
		if len(none) > 1 {
			out = append(out, fmt.Sprintf("Upgrading %s alone buys nothing there: they bind together.", strings.Join(none, " or ")))
		}
	}
	if len(rec.Steps) == 0 {
		out = append(out, fmt.Sprintf("No segment upgrade of %sx shortens that boot: the limit is the nodes' own links.", fmtSig(rec.Factor)))
		return out
	}
	for k, u := range rec.Steps {
		lead := "Upgrade first"
		if k > 0 {
			lead = "Then"
		}
		out = append(out, stepText(lead, u, b.Label))
	}
	return out
}

// stepText is one step of the upgrade path. With the flow model it is judged end to end: a step
// that the bandwidth model says is faster but a protocol cap holds is said to buy nothing.
func stepText(lead string, u Upgrade, batch string) string {
	bw := fmt.Sprintf("from %s s to %s s", fmtSig(u.BeforeSeconds), fmtSig(u.AfterSeconds))
	switch {
	case u.capped():
		return fmt.Sprintf("%s: %s would cut the bandwidth-model time of %s %s, but not the boot: end to end it stays %s s (limited by %s), so it buys nothing until that limit is raised.",
			lead, describeUpgrade(u), batch, bw, fmtFixed(u.EndToEndAfterSeconds, 3), u.EndToEndLimitAfter)
	case u.EndToEndAfterSeconds > 0:
		return fmt.Sprintf("%s: %s cuts the boot of %s from %s s to %s s end to end (%sx faster; %s in the bandwidth model; then bound by %s).",
			lead, describeUpgrade(u), batch, fmtFixed(u.EndToEndBeforeSeconds, 3), fmtFixed(u.EndToEndAfterSeconds, 3), fmtSig(u.EndToEndGain()), bw, u.EndToEndLimitAfter)
	}
	return fmt.Sprintf("%s: %s cuts the boot of %s %s (%sx faster; then bound by %s).",
		lead, describeUpgrade(u), batch, bw, fmtSig(u.Gain()), strings.Join(u.Bottlenecks, ", "))
}
