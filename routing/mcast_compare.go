package routing

import (
	"time"

	"github.com/bootfabric/bootfabric/topology"
)

// McastRow is how one algorithm routed a set of groups.
type McastRow struct {
	Algorithm  string  `json:"algorithm"`
	MaxEFI     int     `json:"max_efi"`
	MeanEFI    float64 `json:"mean_efi"`
	MaxHeight  int     `json:"max_height"`
	MeanHeight float64 `json:"mean_height"`
	Seconds    float64 `json:"seconds,omitempty"` // with timings only
}

// McastComparison is the routing of the same groups by several algorithms.
type McastComparison struct {
	Topology        string     `json:"topology"`
	Endpoints       int        `json:"endpoints"`
	Switches        int        `json:"switches"`
	Groups          int        `json:"groups"`
	Sets            []GroupSet `json:"sets"`
	FixedRoot       bool       `json:"fixed_root"`
	HopTableSeconds float64    `json:"hop_table_seconds,omitempty"` // with timings only
	Results         []McastRow `json:"results"`
	// HopSeconds and each row's Seconds, measured even without timings, for the caller's log.
	HopSeconds float64   `json:"-"`
	RowSeconds []float64 `json:"-"`
	// Timings says the times are in the result (CompareOptions.Timings): the table and the CSV
	// then show them.
	Timings bool `json:"-"`
}

// CompareOptions are CompareMulticast's: FixedRoot as in McastOptions; Timings puts the wall-clock
// times in the result (which then differs from run to run); Progress, if not nil, gives each
// algorithm's progress callback (McastOptions.Progress) and is told when it ends (done).
type CompareOptions struct {
	FixedRoot, Timings bool
	Progress           func(alg McastAlgorithm) (report func(done, total int), done func())
}

// CompareMulticast builds g's hop tables and routes groups with each algorithm.
func CompareMulticast(g *topology.Graph, groups []McastGroup, algos []McastAlgorithm, opt CompareOptions) (*McastComparison, error) {
	start := time.Now()
	h, err := NewHopTable(g, 0)
	if err != nil {
		return nil, err
	}
	cmp := &McastComparison{Topology: g.Name, Endpoints: len(g.Nodes()) + len(g.Servers()), Switches: h.NumSwitches(),
		Groups: len(groups), FixedRoot: opt.FixedRoot, HopSeconds: time.Since(start).Seconds(), Timings: opt.Timings}
	if opt.Timings {
		cmp.HopTableSeconds = cmp.HopSeconds
	}
	for _, alg := range algos {
		mo := McastOptions{FixedRoot: opt.FixedRoot}
		done := func() {}
		if opt.Progress != nil {
			mo.Progress, done = opt.Progress(alg)
		}
		res, err := RouteMulticast(h, groups, alg, mo)
		done()
		if err != nil {
			return nil, err
		}
		row := McastRow{Algorithm: string(alg), MaxEFI: res.MaxEFI, MeanEFI: res.MeanEFI, MaxHeight: res.MaxHeight, MeanHeight: res.MeanHeight}
		if opt.Timings {
			row.Seconds = res.Seconds
		}
		cmp.Results = append(cmp.Results, row)
		cmp.RowSeconds = append(cmp.RowSeconds, res.Seconds)
	}
	return cmp, nil
}
