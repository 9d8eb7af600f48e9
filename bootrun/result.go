package bootrun

import (
	"context"
	"time"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// RunResult is what a run came to, as `bootctl boot` and `bootctl boot status` report it.
type RunResult struct {
	Nodes   int `json:"nodes"`
	Healthy int `json:"healthy"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	Pending int `json:"pending"`
	// MakespanSeconds is when the last node powered by the run became healthy, from the
	// run's start; PredictedSeconds what the dry run of the same nodes says.
	MakespanSeconds  float64 `json:"makespan_seconds"`
	PredictedSeconds float64 `json:"predicted_seconds,omitempty"`
	// SkippedReason says why the skipped nodes were not powered, and how to boot them.
	SkippedReason string `json:"skipped_reason,omitempty"`
	Paused        string `json:"paused,omitempty"`
	// JournalVersion and Events come from a journal (boot status): the run's start, pauses,
	// resumes, abort and end.
	JournalVersion int        `json:"journal_version,omitempty"`
	Events         []RunEvent `json:"run_events,omitempty"`
	Records        []NodeRow  `json:"nodes_detail"`
	// Links names the resources whose limits adapted, LimitChanges every move of them, and
	// PatienceSeconds the firmware's patience the run learned (a live run only).
	Links           []string      `json:"links,omitempty"`
	LimitChanges    []LimitChange `json:"limit_changes,omitempty"`
	PatienceSeconds float64       `json:"patience_seconds,omitempty"`
}

// NodeRow is one node of a run, with (from a journal) its boot as its servers last showed it
// and when its last entry was written.
type NodeRow struct {
	NodeRecord
	Server  *ServerSeen `json:"server,omitempty"`
	Changed *time.Time  `json:"changed,omitempty"`
}

// SkippedReason is the summary's word on the nodes a run did not power.
const SkippedReason = "healthy on the boot servers when the run started; --reboot-healthy boots them too"

// ResultOf sums up a run's records; pred, when not nil, is the prediction of the same nodes and
// paused why the run's admission is paused ("" when it is not).
func ResultOf(recs []NodeRecord, pred *Prediction, paused string) RunResult {
	r := RunResult{Nodes: len(recs), Paused: paused}
	if pred != nil {
		r.PredictedSeconds = pred.Makespan
	}
	r.Records = make([]NodeRow, len(recs))
	for i, x := range recs {
		r.Records[i].NodeRecord = x
		switch {
		case x.Skipped:
			r.Skipped++
		case x.Phase == Healthy:
			r.Healthy++
			r.MakespanSeconds = max(r.MakespanSeconds, x.HealthAt)
		case x.Phase == Failed:
			r.Failed++
		default:
			r.Pending++
		}
	}
	if r.Skipped > 0 {
		r.SkippedReason = SkippedReason
	}
	return r
}

// JournalResult is a run as its journal tells it: each node's last record, with its servers'
// view and when it was written, and the run's events.
func JournalResult(j *JournalContents) RunResult {
	recs := make([]NodeRecord, len(j.Nodes))
	for i, name := range j.Nodes {
		recs[i] = NodeRecord{Name: name}
		if j.Last[i] != nil {
			recs[i] = j.Last[i].Record
		}
	}
	r := ResultOf(recs, nil, j.Paused())
	r.JournalVersion, r.Events = j.Version, j.Events
	for i, e := range j.Last {
		if e != nil {
			r.Records[i].Server = e.Server
			if !e.Time.IsZero() {
				at := e.Time
				r.Records[i].Changed = &at
			}
		}
	}
	return r
}

// Plan is a dry run's output: the limits, the schedule and the predicted timeline.
type Plan struct {
	Nodes     int     `json:"nodes"`
	FloorMbps float64 `json:"floor_mbps"`
	// ImageBytes is the kernel + initrd size the model used, ImageFrom where it came from.
	ImageBytes float64 `json:"image_bytes"`
	ImageFrom  string  `json:"image_from"`
	// Model is the firmware, DHCP and health times the prediction used; Calibration what
	// --calibrate fitted them from.
	Model            PlanModel    `json:"model"`
	Calibration      *Calibration `json:"calibration,omitempty"`
	Caps             []PlanCap    `json:"caps"`
	PredictedSeconds float64      `json:"predicted_seconds"`
	PeakInFlight     int          `json:"peak_in_flight"`
	Schedule         []PlanRow    `json:"schedule"`
	P2P              *P2PPlan     `json:"p2p,omitempty"` // --delivery p2p
}

// PlanModel is the plant's times the prediction used, in seconds.
type PlanModel struct {
	PostSeconds   float64 `json:"post_seconds"`
	DHCPSeconds   float64 `json:"dhcp_seconds"`
	HealthSeconds float64 `json:"health_seconds"`
	// Assumed names the times ("post", "dhcp", "health") that are defaults: neither given nor
	// measured. NotCalibrated says why a past run's journal did not calibrate them.
	Assumed       []string `json:"assumed,omitempty"`
	NotCalibrated string   `json:"not_calibrated,omitempty"`
}

// PlanCap is a link's in-flight limit at the start (Nodes) and the nodes behind it: a limit
// below them binds; either way it adapts to what the run measures.
type PlanCap struct {
	Resource string `json:"resource"`
	Nodes    int    `json:"nodes"`
	Behind   int    `json:"behind"`
}

// PlanRow is one node of a dry run's schedule, in seconds from the run's start.
type PlanRow struct {
	Node    string  `json:"node"`
	Server  string  `json:"server"`
	PowerOn float64 `json:"power_on"`
	Files   float64 `json:"files_in"`
	Healthy float64 `json:"healthy"`
}

// NewPlan lays out prediction p of a run under limits: servers names each node's boot server,
// model the plant's times (rounded to the millisecond here).
func NewPlan(p *Prediction, limits *Limits, servers []string, model PlanModel) Plan {
	model.PostSeconds, model.DHCPSeconds, model.HealthSeconds = Round3(model.PostSeconds), Round3(model.DHCPSeconds), Round3(model.HealthSeconds)
	out := Plan{Nodes: len(servers), FloorMbps: limits.FloorMbps, PredictedSeconds: p.Makespan, PeakInFlight: p.PeakInFlight, Model: model}
	for i, name := range limits.Names {
		out.Caps = append(out.Caps, PlanCap{Resource: name, Nodes: limits.Caps[i], Behind: limits.Users[i]})
	}
	for i, r := range p.Records {
		out.Schedule = append(out.Schedule, PlanRow{Node: r.Name, Server: servers[i], PowerOn: Round3(r.PowerAt), Files: Round3(r.BootAt), Healthy: Round3(r.HealthAt)})
	}
	return out
}

// Round3 rounds v to the thousandth, as the plans show times.
func Round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// P2PPlan is a dry run's boot with peer delivery beside the same boot by the servers: the whole
// batch powered at once (after POST), with no admission, as the run's admission does not count
// peers as sources; the dry run's schedule is the servers' alone.
type P2PPlan struct {
	Delivery fabricsim.Delivery `json:"delivery"`
	// ServerSeconds and P2PSeconds are the batch times by server and by peers, POST included.
	ServerSeconds float64 `json:"server_seconds"`
	P2PSeconds    float64 `json:"p2p_seconds"`
	// RootFile is the file the peers deliver and Root its stage (fabricsim.P2PAnalysis).
	RootFile string                 `json:"root_file"`
	Root     *fabricsim.P2PAnalysis `json:"root"`
}

// PlanP2P simulates the batch booted at once by the servers and by peers under cfg (its
// admission, arrivals and progress dropped), post seconds of POST before each.
func PlanP2P(ctx context.Context, g *topology.Graph, a *mapping.Assignment, batch []int, cfg fabricsim.FlowConfig, post float64) (*P2PPlan, error) {
	cfg.Admit, cfg.Arrivals, cfg.Progress = nil, nil, nil
	sim := &fabricsim.BootSim{Graph: g, Batch: batch, Config: cfg}
	uni, err := sim.Simulate(ctx, a)
	if err != nil {
		return nil, err
	}
	p, err := sim.SimulateP2P(ctx, a, 0)
	if err != nil {
		return nil, err
	}
	return &P2PPlan{Delivery: fabricsim.P2PDelivery, ServerSeconds: Round3(post + uni.BatchSeconds), P2PSeconds: Round3(post + p.Result.BatchSeconds),
		RootFile: p.RootFile, Root: p.Root}, nil
}
