package report

import (
	"strconv"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// minEndToEndGain is the least end-to-end speed-up an upgrade must bring for the report to say it
// shortens the boot: below it the change is within what the model's fixed times round away.
const minEndToEndGain = 1.01

// EndToEndGain is how many times faster the batch boots end to end after the upgrade (1 without
// the flow model).
func (u Upgrade) EndToEndGain() float64 {
	if !(u.EndToEndAfterSeconds > 0) {
		return 1
	}
	return u.EndToEndBeforeSeconds / u.EndToEndAfterSeconds
}

// capped reports whether the flow model ran and says the upgrade leaves the end-to-end boot
// where it was: a protocol cap or the fixed times hold it, whatever the bandwidth model gains.
func (u Upgrade) capped() bool {
	return u.EndToEndAfterSeconds > 0 && u.EndToEndGain() < minEndToEndGain
}

// upgraded is m with the upgrade's capacities.
func upgraded(m *topology.Machine, u Upgrade) *topology.Machine {
	for k, s := range u.Segments {
		m, _ = withCapacity(m, s, u.CapacityMbps[k])
	}
	return m
}

// endToEnd runs the flow model, when the report has one, before and after every upgrade it
// recommends: the bandwidth model alone would promise a speed-up on a segment while a protocol cap
// (TFTP's lock step) keeps the boot where it is. The path's steps are cumulative, as upgrades are.
func (ev *evaluator) endToEnd(rec *Recommendation, li int) error {
	if ev.cfg.Flow == nil {
		return nil
	}
	for k := range rec.PerBatch {
		if u := rec.PerBatch[k].Best; u != nil {
			if err := ev.fillFlow(ev.cfg.Machine, u, k); err != nil {
				return err
			}
		}
	}
	for k := range rec.Singles {
		if err := ev.fillFlow(ev.cfg.Machine, &rec.Singles[k], li); err != nil {
			return err
		}
	}
	m := ev.cfg.Machine
	for k := range rec.Steps {
		if err := ev.fillFlow(m, &rec.Steps[k], li); err != nil {
			return err
		}
		m = upgraded(m, rec.Steps[k])
	}
	return nil
}

// fillFlow sets u's end-to-end times on batch i: on m, then on m with u.
func (ev *evaluator) fillFlow(m *topology.Machine, u *Upgrade, i int) error {
	before, err := ev.flow(m, i)
	if err != nil {
		return err
	}
	after, err := ev.flow(upgraded(m, *u), i)
	if err != nil {
		return err
	}
	u.EndToEndBeforeSeconds, u.EndToEndAfterSeconds, u.EndToEndLimitAfter = before.BatchSeconds, after.BatchSeconds, after.Limit
	return nil
}

// flow runs the flow model on batch i of m with the evaluator's algorithm, once per machine and
// batch.
func (ev *evaluator) flow(m *topology.Machine, i int) (*FlowOutcome, error) {
	key := machineKey(m) + "#" + strconv.Itoa(i)
	if r, ok := ev.flows[key]; ok {
		return r, nil
	}
	g, err := m.Build()
	if err != nil {
		return nil, err
	}
	var fixed *mapping.Assignment
	b := ev.cfg.Batches[i]
	a, err := assignment(g, ev.algo, &fixed, b.Nodes, ev.cfg.Absent)
	if err != nil {
		return nil, err
	}
	out, err := ev.cfg.Flow(g, a, b.Nodes, ev.cfg.ImageBytes)
	if err != nil {
		return nil, err
	}
	ev.flows[key] = out
	return out, nil
}
