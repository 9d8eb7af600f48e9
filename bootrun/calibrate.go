package bootrun

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/nodestate"
)

// MinCalibrationNodes is the fewest nodes, booted to healthy by the runs, that a calibration
// fits the plant from: a median of one or two boots says more of those nodes than of the plant.
const MinCalibrationNodes = 3

// Calibration is the plant as past runs' journals measured it: each phase's time over the
// nodes the runs booted to healthy, in their last attempt.
type Calibration struct {
	// Nodes is how many node boots the fit is made of, Runs how many journals.
	Nodes int `json:"nodes"`
	Runs  int `json:"runs"`
	// Post is the firmware's time from the BMC's answer to the first DHCP request; DHCP from
	// there to the first file the servers saw delivered (the NBP, or the kernel when a poll
	// missed it); Transfer from there to the last file; Health from the last file to the
	// health report. Every time is as the servers dated it, or where they did not (an older
	// server), as the run's polls saw it: within a poll interval.
	Post     PhaseFit `json:"post"`
	DHCP     PhaseFit `json:"dhcp"`
	Transfer PhaseFit `json:"transfer"`
	Health   PhaseFit `json:"health"`
	// TransferMbps is each node's kernel + initrd over its transfer time, when the image size
	// is known: what a node got of its link, contention included.
	TransferMbps *PhaseFit `json:"transfer_mbps,omitempty"`
	// MakespanSeconds is the longest run's makespan: its last healthy node from its first
	// BMC answer (a dry run's time 0: the model's BMCs answer at once).
	MakespanSeconds float64 `json:"makespan_seconds"`
	// LinkEfficiency is the share of their capacity the links carried to the runs' nodes, as
	// FitEfficiency finds it for a dry run of the same nodes (0: not fitted, another batch).
	LinkEfficiency float64 `json:"link_efficiency,omitempty"`
	// NodeNames are the nodes every run booted, when they booted the same (nil otherwise): a
	// dry run of these nodes can be fitted to the runs' makespan.
	NodeNames []string `json:"-"`
}

// PhaseFit is one phase's distribution: its median and the 10th and 90th percentiles (the
// spread), over Samples node boots. Samples 0: no boot showed the phase (all zero).
type PhaseFit struct {
	Samples int     `json:"samples"`
	Median  float64 `json:"median"`
	P10     float64 `json:"p10"`
	P90     float64 `json:"p90"`
}

// CalibrationRun is one journal to calibrate from, with the name its errors give.
type CalibrationRun struct {
	Name     string
	Contents *JournalContents
}

// Calibrate fits the plant's phase times from past runs' journals. imageBytes (0: unknown) turns
// the transfer times into rates. A version 1 journal (no phase times), a journal whose times go
// back, or too few healthy boots in all is an error naming the journal.
func Calibrate(runs []CalibrationRun, imageBytes float64) (*Calibration, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("calibration: no journal")
	}
	var post, dhcp, xfer, health, mbps []float64
	out := &Calibration{Runs: len(runs)}
	for _, r := range runs {
		c := r.Contents
		if c.Version < 2 {
			return nil, fmt.Errorf("journal %s: format version %d records no phase times; calibrate from runs of a bootctl that writes version %d", r.Name, c.Version, JournalVersion)
		}
		start := firstAnswer(c)
		for i, last := range c.Last {
			if last == nil || last.Record.Skipped || last.Record.Phase != Healthy {
				continue
			}
			b, err := nodeBoot(c, i)
			if err != nil {
				return nil, fmt.Errorf("journal %s: node %s: %w", r.Name, c.Nodes[i], err)
			}
			out.Nodes++
			out.MakespanSeconds = max(out.MakespanSeconds, b.health-start)
			post, dhcp = span(post, b.answer, b.load), span(dhcp, b.load, b.first)
			xfer, health = span(xfer, b.first, b.files), span(health, b.files, b.health)
			if d := b.files - b.first; imageBytes > 0 && d > 0 {
				mbps = append(mbps, imageBytes*8/1e6/d)
			}
		}
	}
	if out.Nodes < MinCalibrationNodes {
		names := make([]string, len(runs))
		for i, r := range runs {
			names[i] = r.Name
		}
		return nil, fmt.Errorf("journal %s: %d nodes booted to healthy in all; a calibration needs at least %d", strings.Join(names, ", "), out.Nodes, MinCalibrationNodes)
	}
	out.Post, out.DHCP, out.Transfer, out.Health = fitPhase(post), fitPhase(dhcp), fitPhase(xfer), fitPhase(health)
	out.NodeNames = sameNodes(runs)
	if len(mbps) > 0 {
		f := fitPhase(mbps)
		out.TransferMbps = &f
	}
	return out, nil
}

// firstAnswer is when the run's first BMC answered (its first firmware entry), or 0.
func firstAnswer(c *JournalContents) float64 {
	t := math.Inf(1)
	for _, e := range c.Entries {
		if e.Event == EntryPhase && e.Record.Phase == Firmware {
			t = min(t, e.At)
		}
	}
	if math.IsInf(t, 1) {
		return 0
	}
	return t
}

// sameNodes is the runs' nodes when every run had the same, else nil.
func sameNodes(runs []CalibrationRun) []string {
	for _, r := range runs[1:] {
		if !slices.Equal(r.Contents.Nodes, runs[0].Contents.Nodes) {
			return nil
		}
	}
	return runs[0].Contents.Nodes
}

// bootTimes are one node's last attempt's times, in seconds from its run's start: the BMC's
// answer, the first DHCP request, the first file delivered, the last file and the health
// report. NaN: no poll saw the node there (it went through the phase between two polls).
type bootTimes struct {
	answer, load, first, files, health float64
}

// nodeBoot reads node i's last attempt from the journal's entries: the phase entries' times
// (firmware: the BMC answered; loading: its first DHCP; booted: its last file; healthy) and the
// servers' first file delivered.
func nodeBoot(c *JournalContents, i int) (bootTimes, error) {
	nan := math.NaN()
	b := bootTimes{nan, nan, nan, nan, nan}
	attempts := c.Last[i].Record.Attempts
	at := map[Phase]*float64{Firmware: &b.answer, Loading: &b.load, Booted: &b.files, Healthy: &b.health}
	for _, e := range c.Entries {
		if e.Node != i || e.Record.Attempts != attempts {
			continue
		}
		if p, ok := at[e.Record.Phase]; ok && e.Event == EntryPhase && math.IsNaN(*p) {
			// The record's own time of the phase, as the run's summary has it; the entry's
			// (when it was written) for the BMC's answer, which the record does not keep.
			*p = cmp.Or(map[Phase]float64{Loading: e.Record.LoadAt, Booted: e.Record.BootAt, Healthy: e.Record.HealthAt}[e.Record.Phase], e.At)
		}
		// Before this attempt's DHCP request the servers still show the last one's state (a node
		// the run cycled or evicted mid-transfer): only a file after it is this attempt's.
		if math.IsNaN(b.first) && !math.IsNaN(b.load) && e.Server != nil && e.Server.State >= nodestate.NBP && e.Server.State < nodestate.Initrd {
			// The server's date of the state where it gave one (a poll sees it up to a poll late).
			b.first = max(b.load, cmp.Or(e.Server.Since, e.At))
		}
	}
	if math.IsNaN(b.files) && !math.IsNaN(b.first) {
		// Its files and its health report came between the same two polls (no poll saw it
		// booted): the healthy poll's time is the files' too, within a poll as every time here.
		// Left out, a plant whose nodes all report within a poll fitted no health time at all,
		// and the dry run kept its default of two minutes.
		b.files = b.health
	}
	return b, b.check()
}

// check refuses times that no run writes: no health time for a healthy node, or phases out of
// order.
func (b bootTimes) check() error {
	if math.IsNaN(b.health) {
		return fmt.Errorf("healthy, with no phase entry saying when: a damaged journal")
	}
	last := math.Inf(-1)
	for _, t := range []float64{b.answer, b.load, b.first, b.files, b.health} {
		if t < last || math.IsInf(t, 0) {
			return fmt.Errorf("phase times out of order (BMC answer %.3f s, DHCP %.3f s, first file %.3f s, files %.3f s, healthy %.3f s): a damaged journal",
				b.answer, b.load, b.first, b.files, b.health)
		}
		if !math.IsNaN(t) {
			last = t
		}
	}
	return nil
}

// span appends to xs the time from a to b when a poll saw both.
func span(xs []float64, a, b float64) []float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return xs
	}
	return append(xs, b-a)
}

// fitPhase is the median and 10th and 90th percentiles of xs (nearest rank on the sorted
// samples, so that the same samples give the same fit in any order).
func fitPhase(xs []float64) PhaseFit {
	if len(xs) == 0 {
		return PhaseFit{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	at := func(q float64) float64 {
		return s[int(math.Round(q*float64(len(s)-1)))]
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return PhaseFit{Samples: len(s), Median: med, P10: at(0.1), P90: at(0.9)}
}

// CalibrateJournals reads the journals at paths and fits the plant from them (Calibrate).
func CalibrateJournals(paths []string, imageBytes float64) (*Calibration, error) {
	runs := make([]CalibrationRun, len(paths))
	for i, p := range paths {
		j, err := ReadJournal(p)
		if err != nil {
			return nil, err
		}
		runs[i] = CalibrationRun{Name: p, Contents: j}
	}
	return Calibrate(runs, imageBytes)
}
