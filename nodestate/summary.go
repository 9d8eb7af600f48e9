package nodestate

import (
	"slices"
	"time"
)

// Summary counts nodes by state and aggregates their health.
type Summary struct {
	Server   string `json:"server"`
	ServerID int    `json:"server_id"`
	Nodes    int    `json:"nodes"`
	// States has every state's count, zeros included.
	States map[State]int `json:"states"`
	Health HealthSummary `json:"health"`
	// BootSeconds describes, over the nodes healthy now, the time from DISCOVER to healthy.
	BootSeconds *DurationStats `json:"boot_seconds,omitempty"`
	At          time.Time      `json:"at"`
}

// HealthSummary aggregates the nodes' health. Status is healthy when every node is healthy,
// degraded when any failed, pending when none has been seen, booting when any is booting, and
// partial when some are healthy and the others not seen yet.
type HealthSummary struct {
	Status  string `json:"status"`
	Healthy int    `json:"healthy"`
	Failed  int    `json:"failed"`
	Booting int    `json:"booting"`
	Pending int    `json:"pending"`
}

// DurationStats summarises durations in seconds.
type DurationStats struct {
	Count  int     `json:"count"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// Aggregate health statuses.
const (
	HealthHealthy  = "healthy"
	HealthDegraded = "degraded"
	HealthBooting  = "booting"
	HealthPending  = "pending"
	HealthPartial  = "partial"
)

// Summary counts the nodes by state and aggregates their health.
func (t *Tracker) Summary() Summary {
	return Summarize(t.Nodes(), t.opts.Server, t.opts.ServerID, t.now())
}

// Summarize counts nodes by state and aggregates their health. It is pure.
func Summarize(nodes []NodeStatus, server string, id int, now time.Time) Summary {
	s := Summary{Server: server, ServerID: id, Nodes: len(nodes), States: map[State]int{}, At: now.UTC()}
	for _, st := range States() {
		s.States[st] = 0
	}
	var boot []float64
	for _, n := range nodes {
		s.States[n.State]++
		switch n.State {
		case Healthy:
			s.Health.Healthy++
			if d, ok := n.Times[Discover]; ok {
				boot = append(boot, n.Times[Healthy].Sub(d).Seconds())
			}
		case Failed:
			s.Health.Failed++
		case Pending:
			s.Health.Pending++
		default:
			s.Health.Booting++
		}
	}
	switch {
	case s.Nodes > 0 && s.Health.Healthy == s.Nodes:
		s.Health.Status = HealthHealthy
	case s.Health.Failed > 0:
		s.Health.Status = HealthDegraded
	case s.Health.Pending == s.Nodes:
		s.Health.Status = HealthPending
	case s.Health.Booting == 0:
		s.Health.Status = HealthPartial // some healthy, the rest pending: nothing is booting
	default:
		s.Health.Status = HealthBooting
	}
	if len(boot) > 0 {
		slices.Sort(boot)
		med := boot[len(boot)/2]
		if len(boot)%2 == 0 {
			med = (boot[len(boot)/2-1] + boot[len(boot)/2]) / 2
		}
		s.BootSeconds = &DurationStats{Count: len(boot), Min: boot[0], Median: med, Max: boot[len(boot)-1]}
	}
	return s
}
