package testcluster

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap"
)

// NodeCompare is one node's measured boot beside the prediction.
type NodeCompare struct {
	Node      string             `json:"node"`
	Server    string             `json:"server"`
	Events    map[string]float64 `json:"events"`
	Measured  float64            `json:"measured_seconds"`
	Predicted float64            `json:"predicted_seconds"`
	ErrorPct  float64            `json:"error_pct"`
}

// Measurement is one batch boot under one mapping, measured and predicted.
type Measurement struct {
	Algo      string        `json:"algo"`
	Scale     float64       `json:"scale"`
	Nodes     []NodeCompare `json:"nodes"`
	Measured  float64       `json:"measured_seconds"`
	Predicted float64       `json:"predicted_seconds"`
	ErrorPct  float64       `json:"error_pct"`
	// RTTSeconds is the round trip measured from a node to its server (veth and bridges, idle).
	RTTSeconds float64 `json:"rtt_seconds"`
	// DHCPSeconds is the median time to a bound address. The prediction starts each node at its own
	// measured bound time: the simulator predicts the transfers, not the DHCP server's queue.
	DHCPSeconds float64 `json:"dhcp_seconds"`
	CPU         CPUUse  `json:"cpu"`
}

// WireEfficiency is the payload share of a full-size TCP frame on Ethernet: 1448 / 1514.
const WireEfficiency = 1448.0 / 1514.0

// ScaledMachine returns a copy of m with every capacity multiplied by f.
func ScaledMachine(m *topology.Machine, f float64) *topology.Machine {
	out := *m
	out.Levels = append([]topology.LevelSpec(nil), m.Levels...)
	scale := func(l *topology.LinkSpec) *topology.LinkSpec {
		if l == nil {
			return nil
		}
		c := *l
		c.CapacityMbps *= f
		return &c
	}
	for i := range out.Levels {
		out.Levels[i].Uplink = scale(out.Levels[i].Uplink)
	}
	out.Servers.NIC = *scale(&m.Servers.NIC)
	out.Servers.CascadeUplink = scale(m.Servers.CascadeUplink)
	return &out
}

// Measure brings up a netns cluster for spec, runs its boot servers under mapping algo, boots every
// node at once, predicts the same boot with fabricsim on the scaled machine and the measured round
// trip, and tears the cluster down whatever happens.
func Measure(ctx context.Context, spec Spec, algo string, opt ServerOptions, timeout time.Duration, log *zap.Logger) (res *Measurement, err error) {
	c, err := Up(ctx, spec, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if derr := c.Down(context.Background()); derr != nil && err == nil {
			err = derr
		}
	}()
	opt.Mapping = algo
	if err := c.StartServers(ctx, opt); err != nil {
		return nil, err
	}
	timelines, batch, cpu, err := c.BootProgress(ctx, nil, timeout, opt.Progress)
	if err != nil {
		return nil, err
	}
	rtt, err := c.RTT(ctx, timelines[0])
	if err != nil {
		return nil, err
	}
	res = &Measurement{Algo: algo, Scale: spec.Scale, Measured: batch, RTTSeconds: rtt, CPU: cpu}
	var bound []float64
	for _, t := range timelines {
		bound = append(bound, t.Events["bound"])
	}
	res.DHCPSeconds = median(bound)
	pred, err := c.Predict(ctx, algo, opt.Files, rtt, bound)
	if err != nil {
		return nil, err
	}
	res.Predicted = pred.BatchSeconds
	res.ErrorPct = pctErr(res.Measured, res.Predicted)
	byName := map[string]fabricsim.NodeResult{}
	for _, n := range pred.NodeResults {
		byName[n.Name] = n
	}
	for _, t := range timelines {
		p := byName[t.Node]
		res.Nodes = append(res.Nodes, NodeCompare{Node: t.Node, Server: t.Server, Events: t.Events, Measured: t.Seconds,
			Predicted: p.DoneSeconds, ErrorPct: pctErr(t.Seconds, p.DoneSeconds)})
		if p.Server != t.Server {
			return nil, fmt.Errorf("node %s booted from %s but the mapping assigns %s", t.Node, t.Server, p.Server)
		}
	}
	return res, nil
}

func pctErr(measured, predicted float64) float64 {
	if predicted == 0 {
		return 0
	}
	return 100 * (measured - predicted) / predicted
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	for i := range s { // small: insertion sort
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

var pingAvg = regexp.MustCompile(`= [\d.]+/([\d.]+)/`)

// RTT measures the idle round trip from a booted node to the server it booted from.
func (c *Cluster) RTT(ctx context.Context, t Timeline) (float64, error) {
	var ns, ip string
	for _, n := range c.Nodes {
		if n.Name == t.Node {
			ns = n.Namespace
		}
	}
	for _, s := range c.Servers {
		if s.Name == t.Server {
			ip = s.IP
		}
	}
	out, err := c.run.Run(ctx, "ip", "netns", "exec", ns, "busybox", "ping", "-c", "20", "-i", "0.05", "-q", ip)
	if err != nil {
		return 0, fmt.Errorf("measuring RTT: %w", err)
	}
	m := pingAvg.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("measuring RTT: cannot read ping output %q", out)
	}
	ms, _ := strconv.ParseFloat(m[1], 64)
	return ms / 1000, nil
}

// Predict runs the flow simulation of booting every node of the cluster's machine, scaled, under
// algo, with the cluster's files and the measured round trip; node i starts its first file at
// bound[i] (its measured DHCP time), or all at 0 when bound is nil.
func (c *Cluster) Predict(ctx context.Context, algo string, files BootFiles, rtt float64, bound []float64) (*fabricsim.FlowResult, error) {
	in, err := c.predictInput(algo, files, rtt, bound)
	if err != nil {
		return nil, err
	}
	return fabricsim.Simulate(ctx, in.g, nil, in.asg, in.batch, in.cfg)
}

// predictIn is what a prediction of the cluster's boot simulates.
type predictIn struct {
	g     *topology.Graph
	algo  mapping.Algo
	asg   *mapping.Assignment
	batch []int
	cfg   fabricsim.FlowConfig
}

func (c *Cluster) predictInput(algo string, files BootFiles, rtt float64, bound []float64) (*predictIn, error) {
	// tc shapes whole frames: a full TCP segment carries 1448 payload bytes in a 1514-byte frame
	// (Ethernet 14 + IP 20 + TCP with timestamps 32), so the goodput of a shaped link is 95.6% of its
	// rate. The simulator counts payload, so it gets the goodput.
	g, err := ScaledMachine(c.Machine, c.Scale*WireEfficiency).Build()
	if err != nil {
		return nil, err
	}
	a, err := mapping.ParseAlgo(algo, g.Hierarchy())
	if err != nil {
		return nil, err
	}
	asg, err := mapping.Assign(g, a, nil, nil)
	if err != nil {
		return nil, err
	}
	nbp, err := os.Stat(files.NBP)
	if err != nil {
		return nil, err
	}
	cfg := fabricsim.DefaultFlowConfig(fabricsim.HTTP)
	cfg.Files = []fabricsim.File{
		{Name: "nbp", Bytes: float64(nbp.Size()), Protocol: fabricsim.TFTP},
		{Name: "kernel", Bytes: float64(files.Kernel), Protocol: fabricsim.HTTP},
		{Name: "initrd", Bytes: float64(files.Initrd), Protocol: fabricsim.HTTP},
	}
	cfg.TFTPBlockSize = 1468
	cfg.RTTSeconds = rtt
	cfg.DHCPSeconds = 0
	cfg.Arrivals = bound
	cfg.HealthSeconds = rtt * 2
	batch := make([]int, len(g.Nodes()))
	for i := range batch {
		batch[i] = i
	}
	return &predictIn{g: g, algo: a, asg: asg, batch: batch, cfg: cfg}, nil
}
