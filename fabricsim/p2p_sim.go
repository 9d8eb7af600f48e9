package fabricsim

import (
	"context"
	"fmt"
	"slices"

	"github.com/bootfabric/bootfabric/mapping"
)

// P2PBoot is a simulated boot with peer delivery of the root image.
type P2PBoot struct {
	// RootFile is the file peers deliver (RootFile of the boot's files); Root its stage.
	RootFile string       `json:"root_file"`
	Root     *P2PAnalysis `json:"root"`
	// ServerBatchSeconds is when the last node had the servers' files.
	ServerBatchSeconds float64 `json:"server_batch_seconds"`
	// Result is the whole boot: its node times end with the root stage and the health report;
	// its files, segments, links and series are those of the servers' files alone.
	Result *FlowResult `json:"-"`
}

// SimulateP2P runs the boot under assignment a with the root image delivered by peers in pieces
// of pieceBytes (0: DefaultPieceBytes). The other files flow from the servers as in Simulate (the
// same caps, arrivals and sharing); then each board (each server's swarm, in the swarm schedule)
// takes the root stage of AnalyzeP2P, starting when its last node has the servers' files if its
// nodes relay to each other (else each node on its own), and each node reports health. The root stage's time is that of every board
// of the batch at once, so with spread power-on it is an upper bound.
func (b *BootSim) SimulateP2P(ctx context.Context, a *mapping.Assignment, pieceBytes float64) (*P2PBoot, error) {
	if b.Failures != nil {
		return nil, fmt.Errorf("peer delivery: server failures are simulated with server delivery only")
	}
	if b.Config.Admit != nil {
		return nil, fmt.Errorf("peer delivery: an admitter is simulated with server delivery only")
	}
	root, err := RootFile(b.Config.Files)
	if err != nil {
		return nil, err
	}
	cfg := b.Config
	cfg.Files = slices.Delete(slices.Clone(cfg.Files), root, root+1)
	cfg.HealthSeconds = 0
	res, err := Simulate(ctx, b.Graph, nil, a, b.Batch, cfg)
	if err != nil {
		return nil, err
	}
	an, st, err := analyzeP2P(&P2PInput{Graph: b.Graph, Assign: a, Batch: b.Batch, RootBytes: b.Config.Files[root].Bytes, PieceBytes: pieceBytes})
	if err != nil {
		return nil, err
	}
	out := &P2PBoot{RootFile: b.Config.Files[root].Name, Root: an, ServerBatchSeconds: res.BatchSeconds, Result: res}
	done := make([]float64, len(b.Batch))
	for _, group := range p2pGroups(st, an) {
		relay := an.Schedule == "swarm" || min(an.CopiesPerBoard, len(group)) < len(group)
		last := 0.0
		for _, p := range group {
			last = max(last, res.NodeResults[p].DoneSeconds)
		}
		for _, p := range group {
			start := res.NodeResults[p].DoneSeconds
			if relay {
				start = last
			}
			done[p] = start + an.Seconds + b.Config.HealthSeconds
		}
	}
	setDone(res, done)
	return out, nil
}

// p2pGroups are the nodes (batch positions) that exchange pieces in an's schedule: each board's,
// or each server's swarm's.
func p2pGroups(st *p2pState, an *P2PAnalysis) [][]int {
	var out [][]int
	if an.Schedule != "swarm" {
		for _, bd := range st.boards {
			out = append(out, bd.nodes)
		}
		return out
	}
	for _, sw := range st.swarms() {
		var nodes []int
		for _, bd := range sw {
			nodes = append(nodes, bd.nodes...)
		}
		out = append(out, nodes)
	}
	return out
}

// setDone sets the nodes' finishing times (batch order) and what follows from them.
func setDone(res *FlowResult, done []float64) {
	dur := make([]float64, len(done))
	res.BatchSeconds = 0
	for i, d := range done {
		res.NodeResults[i].DoneSeconds = d
		dur[i] = d - res.NodeResults[i].ArrivalSeconds
		res.BatchSeconds = max(res.BatchSeconds, d)
	}
	res.Completion = distribution(slices.Clone(done))
	res.Duration = distribution(dur)
}
