package fabricsim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// HealthAlgorithm names a health reduction.
//
// Health aggregation reduces every booted node's record to one summary at node 0, the root, with
// the paper's cost model (a + n·b per transfer); HealthBinomial has no replicas, HealthTask keeps a
// copy of each record at the next node and recovers from failures that a ping detector finds.
type HealthAlgorithm string

// Health reductions.
const (
	HealthBinomial HealthAlgorithm = "binomial"
	HealthTask     HealthAlgorithm = "task"
)

// HealthAlgorithms lists the reductions SimulateHealth knows.
func HealthAlgorithms() []HealthAlgorithm { return []HealthAlgorithm{HealthBinomial, HealthTask} }

// ParseHealthAlgorithm reads "binomial" or "task".
func ParseHealthAlgorithm(s string) (HealthAlgorithm, error) {
	for _, a := range HealthAlgorithms() {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("health algorithm %q: want binomial or task", s)
}

// HealthPayload says how large a partial summary is on the wire.
type HealthPayload string

// Payload models.
const (
	// HealthSparse: a partial of m records is m·RecordBytes (a list of node statuses); partials
	// grow towards the root.
	HealthSparse HealthPayload = "sparse"
	// HealthDense: every partial is a vector of Nodes·RecordBytes (one slot per node), the
	// fixed-size reduction of the paper's formulas.
	HealthDense HealthPayload = "dense"
)

// HealthStragglers are slow nodes: a fixed list and/or a random fraction of the nodes other than
// the root (drawn from the seed), each Slowdown times slower.
//
// By default a straggler's CPU is slow (interference from co-scheduled jobs): everything its CPU
// does takes Slowdown times longer: its folds, the messages and tasks it sends or receives, and
// the two-sided transfers it takes part in (binomial sends and receives, replica copies need
// both CPUs, so they run at the slower end's pace). A one-sided pull from it (the task
// algorithm) does not involve its CPU and runs at the puller's pace. With SlowNetwork the
// straggler's network is slow too, and every transfer touching it is slowed.
//
// Slowdown is each straggler's factor; when MinSlowdown is set (1 <= MinSlowdown < Slowdown)
// each straggler's factor is drawn uniformly from [MinSlowdown, Slowdown] instead, which is
// closer to interference from other jobs than identical stragglers moving in lockstep.
type HealthStragglers struct {
	Nodes       []int   `json:"nodes,omitempty"`
	Fraction    float64 `json:"fraction"`
	Slowdown    float64 `json:"slowdown"`
	MinSlowdown float64 `json:"min_slowdown,omitempty"`
	SlowNetwork bool    `json:"slow_network"`
}

// HealthFault is one node's death.
type HealthFault struct {
	Node      int     `json:"node"`
	AtSeconds float64 `json:"at_s"`
}

// HealthConfig describes one health aggregation. Times are in seconds, sizes in bytes.
type HealthConfig struct {
	Algorithm HealthAlgorithm `json:"algorithm"`
	// Nodes is the number of booted nodes, ids 0..Nodes-1; node 0 is the root.
	Nodes int `json:"nodes"`
	// RecordBytes is the size of one node's health record.
	RecordBytes float64       `json:"record_bytes"`
	Payload     HealthPayload `json:"payload"`
	// Latency is a, TransferPerByte b, CombinePerByte g in the paper's model.
	Latency         float64 `json:"latency_s"`
	TransferPerByte float64 `json:"transfer_s_per_byte"`
	CombinePerByte  float64 `json:"combine_s_per_byte"`
	// MessageTime (θ) is the time to send a reduction message or a task; QueueTime (λ) the mean
	// queueing and processing time of each at the master. Task algorithm only.
	MessageTime float64 `json:"message_s"`
	QueueTime   float64 `json:"queue_s"`
	// FailedFraction of the nodes, drawn from the seed, report a failed health check.
	FailedFraction float64          `json:"failed_fraction"`
	Stragglers     HealthStragglers `json:"stragglers"`
	// Faults nodes other than the root die at times drawn uniformly from [0, FaultWindowSeconds);
	// a zero window means the fault-free completion time of the same configuration (the paper's
	// experiment). FaultPlan, when set, lists the deaths instead and Faults must be 0.
	Faults             int           `json:"faults"`
	FaultWindowSeconds float64       `json:"fault_window_s"`
	FaultPlan          []HealthFault `json:"fault_plan,omitempty"`
	// PingPeriodSeconds and PingTimeoutSeconds make the failure detector.
	PingPeriodSeconds  float64 `json:"ping_period_s"`
	PingTimeoutSeconds float64 `json:"ping_timeout_s"`
	// PreReplicated means every raw record was copied to (i+1) mod p before the reduction
	// started (say as part of the boot's health report) instead of asynchronously from time 0
	// as in the paper; it closes the window in which a death loses a record. Task only.
	PreReplicated bool `json:"pre_replicated"`
	// Reparent makes the binomial tree adopt the children of a dead node instead of losing its
	// subtree.
	Reparent bool   `json:"reparent"`
	Seed     uint64 `json:"seed"`
}

// Defaults of DefaultHealthConfig: a 10 Gb/s Ethernet cluster like the paper's C1.
const (
	DefaultHealthRecordBytes     = 64
	DefaultHealthLatency         = 5e-6
	DefaultHealthTransferPerByte = 0.8e-9 // 10 Gb/s
	DefaultHealthCombinePerByte  = 0.5e-9
	DefaultHealthMessageTime     = 2e-6
	DefaultHealthQueueTime       = 5e-6
	DefaultHealthPingPeriod      = 100e-6
	DefaultHealthPingTimeout     = 50e-6
)

// MaxHealthNodes bounds Nodes so that a typo cannot exhaust memory.
const MaxHealthNodes = 1 << 24

// DefaultHealthConfig returns the documented defaults for nodes nodes, sparse payload, no
// stragglers and no faults.
func DefaultHealthConfig(alg HealthAlgorithm, nodes int) HealthConfig {
	return HealthConfig{
		Algorithm:          alg,
		Nodes:              nodes,
		RecordBytes:        DefaultHealthRecordBytes,
		Payload:            HealthSparse,
		Latency:            DefaultHealthLatency,
		TransferPerByte:    DefaultHealthTransferPerByte,
		CombinePerByte:     DefaultHealthCombinePerByte,
		MessageTime:        DefaultHealthMessageTime,
		QueueTime:          DefaultHealthQueueTime,
		Stragglers:         HealthStragglers{Slowdown: 1},
		PingPeriodSeconds:  DefaultHealthPingPeriod,
		PingTimeoutSeconds: DefaultHealthPingTimeout,
		// In bootfabric every node's record already travels to its boot server in the health
		// report, so the copy exists before the reduction starts.
		PreReplicated: true,
	}
}

// HealthFaultResult is what became of one fault.
type HealthFaultResult struct {
	HealthFault
	// DetectedSeconds is when the failure detector reported the death.
	DetectedSeconds float64 `json:"detected_s"`
	// Lost lists the nodes whose records were lost because of this fault (nil: recovered).
	Lost []int `json:"lost,omitempty"`
	// Recovered is set when no record was lost because of this fault.
	Recovered bool `json:"recovered"`
}

// HealthResult is one simulated aggregation.
type HealthResult struct {
	Algorithm HealthAlgorithm `json:"algorithm"`
	Nodes     int             `json:"nodes"`
	// CompletionSeconds is when the reduction is over: for binomial when the root has folded its
	// last child, for task when the master has seen the complete path and broadcast the end.
	CompletionSeconds float64 `json:"completion_s"`
	// ReferenceSeconds is the paper's cost for this configuration on an idle cluster: binomial
	// Σ_k (a + n_k b + n_k g); task Σ_k (a + n_k b + n_k g + 2θ + 2λ) + (a + 4b)·⌈lg p⌉, over the
	// ⌈lg p⌉ rounds k with n_k the payload of a round-k partial (constant with dense payload,
	// where these are equations (1) and (3)). The simulated task time on an idle cluster with p a
	// power of two is this plus θ+λ for the first post, which the formula leaves out.
	ReferenceSeconds float64       `json:"reference_s"`
	Summary          HealthSummary `json:"summary"`
	// Complete is set when every node is in the summary with its reported health (the ground
	// truth); Accounted when every node is in it exactly once (healthy, failed or unreachable).
	Complete  bool `json:"complete"`
	Accounted bool `json:"accounted"`
	// Stragglers lists the slow nodes.
	Stragglers      []int               `json:"stragglers,omitempty"`
	Faults          []HealthFaultResult `json:"faults,omitempty"`
	RecoveredFaults int                 `json:"recovered_faults"`
	// Messages counts everything sent: reduction messages and tasks (task), data transfers and
	// replica copies, and the end broadcast. Bytes is the data moved by transfers and copies.
	Messages int     `json:"messages"`
	Bytes    float64 `json:"bytes"`
	// Tasks is the number of folds executed; RecoveryMessages the single-record messages made by
	// fault recovery (task only).
	Tasks            int `json:"tasks"`
	RecoveryMessages int `json:"recovery_messages"`
}

func hsFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// check validates c and names the first bad field.
func (c *HealthConfig) check() error {
	if _, err := ParseHealthAlgorithm(string(c.Algorithm)); err != nil {
		return err
	}
	if c.Nodes < 1 || c.Nodes > MaxHealthNodes {
		return fmt.Errorf("health: nodes must be 1..%d, got %d", MaxHealthNodes, c.Nodes)
	}
	if c.Payload != HealthSparse && c.Payload != HealthDense {
		return fmt.Errorf("health: payload %q: want sparse or dense", c.Payload)
	}
	for _, v := range []struct {
		name string
		v    float64
	}{
		{"record bytes", c.RecordBytes}, {"latency", c.Latency}, {"transfer time per byte", c.TransferPerByte},
		{"combine time per byte", c.CombinePerByte}, {"message time", c.MessageTime}, {"queue time", c.QueueTime},
		{"fault window", c.FaultWindowSeconds}, {"ping timeout", c.PingTimeoutSeconds},
	} {
		if !hsFinite(v.v) || v.v < 0 {
			return fmt.Errorf("health: %s must be a non-negative number, got %v", v.name, v.v)
		}
	}
	if !hsFinite(c.FailedFraction) || c.FailedFraction < 0 || c.FailedFraction > 1 {
		return fmt.Errorf("health: failed fraction must be in [0,1], got %v", c.FailedFraction)
	}
	if err := c.checkStragglers(); err != nil {
		return err
	}
	return c.checkFaults()
}

// checkStragglers validates c.Stragglers.
func (c *HealthConfig) checkStragglers() error {
	s := c.Stragglers
	if !hsFinite(s.Fraction) || s.Fraction < 0 || s.Fraction > 1 {
		return fmt.Errorf("health: straggler fraction must be in [0,1], got %v", s.Fraction)
	}
	if (s.Fraction > 0 || len(s.Nodes) > 0) && (!hsFinite(s.Slowdown) || s.Slowdown < 1) {
		return fmt.Errorf("health: straggler slowdown must be a number >= 1, got %v", s.Slowdown)
	}
	if s.MinSlowdown != 0 && (!hsFinite(s.MinSlowdown) || s.MinSlowdown < 1 || s.MinSlowdown > s.Slowdown) {
		return fmt.Errorf("health: straggler minimum slowdown must be in [1, slowdown %v], got %v", s.Slowdown, s.MinSlowdown)
	}
	for _, n := range s.Nodes {
		if n < 0 || n >= c.Nodes {
			return fmt.Errorf("health: straggler node %d is not in 0..%d", n, c.Nodes-1)
		}
	}
	return nil
}

// checkFaults validates the fault count or plan, and the ping period that detects them.
func (c *HealthConfig) checkFaults() error {
	if c.Faults < 0 {
		return fmt.Errorf("health: fault count must be non-negative, got %d", c.Faults)
	}
	if c.Faults > c.Nodes-1 {
		return fmt.Errorf("health: %d faults for %d nodes: at most %d can fail (node 0 is the root and never fails)",
			c.Faults, c.Nodes, c.Nodes-1)
	}
	if len(c.FaultPlan) > 0 && c.Faults > 0 {
		return fmt.Errorf("health: give either a fault count (%d) or a fault plan (%d faults), not both", c.Faults, len(c.FaultPlan))
	}
	seen := map[int]bool{}
	for _, f := range c.FaultPlan {
		if f.Node < 1 || f.Node >= c.Nodes {
			return fmt.Errorf("health: fault plan: node %d is not in 1..%d (node 0 is the root and never fails)", f.Node, c.Nodes-1)
		}
		if seen[f.Node] {
			return fmt.Errorf("health: fault plan: node %d dies twice", f.Node)
		}
		seen[f.Node] = true
		if !hsFinite(f.AtSeconds) || f.AtSeconds < 0 {
			return fmt.Errorf("health: fault plan: node %d: time must be a non-negative number of seconds, got %v", f.Node, f.AtSeconds)
		}
	}
	if c.Faults > 0 || len(c.FaultPlan) > 0 {
		if !hsFinite(c.PingPeriodSeconds) || !(c.PingPeriodSeconds > 0) {
			return fmt.Errorf("health: ping period must be positive when nodes fail, got %v", c.PingPeriodSeconds)
		}
	}
	return nil
}

// hsWorld is the ground truth of one run: what every node reported, how slow it is and when it
// dies.
type hsWorld struct {
	cfg        *HealthConfig
	p          int
	truth      []HealthStatus
	slow       []float64
	stragglers []int
	death      []float64 // +Inf: never
	faults     []HealthFault
}

func (w *hsWorld) alive(n int, t float64) bool { return w.death[n] > t }

// detect is when the failure detector reports node n's death.
func (w *hsWorld) detect(n int) float64 {
	d := w.death[n]
	per := w.cfg.PingPeriodSeconds
	return (math.Floor(d/per)+1)*per + w.cfg.PingTimeoutSeconds
}

// bytes is the wire size of a partial of m records.
func (w *hsWorld) bytes(m int) float64 {
	if w.cfg.Payload == HealthDense {
		return float64(w.p) * w.cfg.RecordBytes
	}
	return float64(m) * w.cfg.RecordBytes
}

// xfer is the time of a two-sided transfer of n bytes between nodes u and v.
func (w *hsWorld) xfer(u, v int, n float64) float64 {
	if u == v {
		return 0
	}
	return (w.cfg.Latency + n*w.cfg.TransferPerByte) * max(w.slow[u], w.slow[v])
}

// pull is the time for node at to read n bytes from node from with a one-sided get.
func (w *hsWorld) pull(at, from int, n float64) float64 {
	if at == from {
		return 0
	}
	s := w.slow[at]
	if w.cfg.Stragglers.SlowNetwork {
		s = max(s, w.slow[from])
	}
	return (w.cfg.Latency + n*w.cfg.TransferPerByte) * s
}

func (w *hsWorld) fold(at int, n float64) float64 { return n * w.cfg.CombinePerByte * w.slow[at] }

// broadcast is the end announcement: 4 bytes down a binomial tree.
func (w *hsWorld) broadcast() float64 {
	return (w.cfg.Latency + 4*w.cfg.TransferPerByte) * float64(hsLog2Ceil(w.p))
}

func hsLog2Ceil(p int) int {
	k := 0
	for (1 << k) < p {
		k++
	}
	return k
}

// newHSWorld draws the ground truth from the seed in a fixed order: failed records, stragglers,
// faults. window is the fault window when the config leaves it at 0.
func newHSWorld(c *HealthConfig, window float64) *hsWorld {
	p := c.Nodes
	rng := rand.New(rand.NewPCG(c.Seed, 0x6865616c7468)) // "health"
	w := &hsWorld{cfg: c, p: p, truth: make([]HealthStatus, p), slow: make([]float64, p), death: make([]float64, p)}
	for i := range w.truth {
		w.truth[i] = HealthHealthy
		w.slow[i] = 1
		w.death[i] = math.Inf(1)
	}
	for _, n := range hsSample(rng, p, int(math.Round(c.FailedFraction*float64(p))), 0) {
		w.truth[n] = HealthFailed
	}
	s := c.Stragglers
	isSlow := make(map[int]bool)
	for _, n := range s.Nodes {
		isSlow[n] = true
	}
	// Random stragglers spare the root, which hosts the master: a slow root slows both
	// reductions alike and hides the difference; list node 0 in Nodes to study that.
	for _, n := range hsSample(rng, p, int(math.Round(s.Fraction*float64(p-1))), 1) {
		isSlow[n] = true
	}
	for n := range isSlow {
		w.stragglers = append(w.stragglers, n)
	}
	sort.Ints(w.stragglers) // map order is random; draw factors in id order
	for _, n := range w.stragglers {
		w.slow[n] = s.Slowdown
		if s.MinSlowdown > 0 && s.MinSlowdown < s.Slowdown {
			w.slow[n] = s.MinSlowdown + rng.Float64()*(s.Slowdown-s.MinSlowdown)
		}
	}
	if len(c.FaultPlan) > 0 {
		w.faults = append(w.faults, c.FaultPlan...)
	} else if c.Faults > 0 {
		for _, n := range hsSample(rng, p, c.Faults, 1) {
			w.faults = append(w.faults, HealthFault{Node: n, AtSeconds: rng.Float64() * window})
		}
	}
	sort.Slice(w.faults, func(i, j int) bool {
		if w.faults[i].AtSeconds != w.faults[j].AtSeconds {
			return w.faults[i].AtSeconds < w.faults[j].AtSeconds
		}
		return w.faults[i].Node < w.faults[j].Node
	})
	for _, f := range w.faults {
		w.death[f.Node] = f.AtSeconds
	}
	return w
}

// hsSample draws k distinct ids from lo..p-1 (partial Fisher-Yates for large k, rejection for
// small k so that a few draws out of many nodes stay cheap).
func hsSample(rng *rand.Rand, p, k, lo int) []int {
	n := p - lo
	k = min(k, n)
	if k <= 0 {
		return nil
	}
	if k*4 < n {
		seen := make(map[int]bool, k)
		out := make([]int, 0, k)
		for len(out) < k {
			v := lo + rng.IntN(n)
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
		return out
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = lo + i
	}
	for i := 0; i < k; i++ {
		j := i + rng.IntN(n-i)
		ids[i], ids[j] = ids[j], ids[i]
	}
	return ids[:k]
}

// reference is the paper's idle-cluster cost (see HealthResult.ReferenceSeconds).
func (w *hsWorld) reference() float64 {
	c := w.cfg
	L := hsLog2Ceil(w.p)
	t := 0.0
	for k := 0; k < L; k++ {
		n := w.bytes(1 << k)
		t += c.Latency + n*c.TransferPerByte + n*c.CombinePerByte
		if c.Algorithm == HealthTask {
			t += 2*c.MessageTime + 2*c.QueueTime
		}
	}
	if c.Algorithm == HealthTask {
		t += w.broadcast()
	}
	return t
}

// SimulateHealth simulates one health aggregation. It is deterministic for a given config.
func SimulateHealth(cfg HealthConfig) (HealthResult, error) {
	c := cfg
	if c.Stragglers.Slowdown == 0 && c.Stragglers.Fraction == 0 && len(c.Stragglers.Nodes) == 0 {
		c.Stragglers.Slowdown = 1
	}
	if err := c.check(); err != nil {
		return HealthResult{}, err
	}
	window := c.FaultWindowSeconds
	if c.Faults > 0 && window == 0 {
		free := c
		free.Faults = 0
		r, err := SimulateHealth(free)
		if err != nil {
			return HealthResult{}, err
		}
		window = r.CompletionSeconds
	}
	w := newHSWorld(&c, window)
	var (
		res HealthResult
		err error
	)
	switch c.Algorithm {
	case HealthBinomial:
		res, err = hsBinomial(w)
	case HealthTask:
		res, err = hsTask(w)
	}
	if err != nil {
		return HealthResult{}, err
	}
	res.Algorithm, res.Nodes, res.Stragglers = c.Algorithm, c.Nodes, w.stragglers
	res.ReferenceSeconds = w.reference()
	res.Accounted = res.Summary.CoversExactly(w.p)
	res.Complete = res.Accounted
	for i := 0; res.Complete && i < w.p; i++ {
		res.Complete = res.Summary.entries[i].Status == w.truth[i]
	}
	for _, f := range res.Faults {
		if f.Recovered {
			res.RecoveredFaults++
		}
	}
	return res, nil
}

// faultResults turns the deaths and the records lost per dead node into the result's fault list.
// A fault that strikes after the end is listed as recovered.
func (w *hsWorld) faultResults(lostBy map[int][]int) []HealthFaultResult {
	out := make([]HealthFaultResult, 0, len(w.faults))
	for _, f := range w.faults {
		l := append([]int(nil), lostBy[f.Node]...)
		sort.Ints(l)
		l = slices.Compact(l)
		if len(l) == 0 {
			l = nil
		}
		out = append(out, HealthFaultResult{HealthFault: f, DetectedSeconds: w.detect(f.Node), Lost: l, Recovered: len(l) == 0})
	}
	return out
}

// ParseHealthStragglers reads a straggler spec: FRACTION:SLOWDOWN ("0.1:20", every straggler
// 20x slower), FRACTION:MIN-MAX ("0.1:1-20", each drawn from [1, 20]), or either with ":net"
// appended (their network is slow too). An empty string means no stragglers.
func ParseHealthStragglers(s string) (HealthStragglers, error) {
	if s == "" {
		return HealthStragglers{Slowdown: 1}, nil
	}
	bad := func(why string) (HealthStragglers, error) {
		return HealthStragglers{}, fmt.Errorf("stragglers %q: %s; want FRACTION:SLOWDOWN or FRACTION:MIN-MAX, optionally :net (e.g. 0.1:1-20)", s, why)
	}
	parts := strings.Split(s, ":")
	var st HealthStragglers
	if n := len(parts); n == 3 && parts[2] == "net" {
		st.SlowNetwork = true
		parts = parts[:2]
	} else if n != 2 {
		return bad("wrong number of fields")
	}
	f, err := strconv.ParseFloat(parts[0], 64)
	if err != nil || !hsFinite(f) || f < 0 || f > 1 {
		return bad("fraction must be a number in [0,1]")
	}
	st.Fraction = f
	if st.MinSlowdown, st.Slowdown, err = parseSlowdown(parts[1]); err != nil {
		return bad(err.Error())
	}
	return st, nil
}

// parseSlowdown reads SLOWDOWN (minimum 0: every straggler that much slower) or MIN-MAX.
func parseSlowdown(s string) (minimum, maximum float64, err error) {
	lo, hi, ranged := strings.Cut(s, "-")
	sd, err := strconv.ParseFloat(lo, 64)
	if err != nil || !hsFinite(sd) || sd < 1 {
		return 0, 0, errors.New("slowdown must be a number >= 1")
	}
	if !ranged {
		return 0, sd, nil
	}
	mx, err := strconv.ParseFloat(hi, 64)
	if err != nil || !hsFinite(mx) || mx < sd {
		return 0, 0, errors.New("slowdown range must be MIN-MAX with 1 <= MIN <= MAX")
	}
	return sd, mx, nil
}
