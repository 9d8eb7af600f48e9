package fabricsim

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// HealthStatus is what a health summary says about one node. The values are ordered so that
// merging two reports of the same node keeps the larger one: any report beats "unreachable"
// (the record turned up after all), and "failed" beats "healthy" (a failure reported anywhere
// stands). Taking the maximum is what makes HealthSummary.Merge commutative, associative and
// idempotent.
type HealthStatus uint8

// Health statuses, in merge order.
const (
	// HealthUnknown means the summary has no entry for the node; it is never stored.
	HealthUnknown HealthStatus = iota
	// HealthUnreachable: the node's record was lost everywhere.
	HealthUnreachable
	// HealthHealthy: the node reported itself healthy.
	HealthHealthy
	// HealthFailed: the node reported a failed health check.
	HealthFailed
)

var healthStatusNames = [...]string{"unknown", "unreachable", "healthy", "failed"}

func (s HealthStatus) String() string {
	if int(s) < len(healthStatusNames) {
		return healthStatusNames[s]
	}
	return "HealthStatus(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText writes the status's name.
func (s HealthStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a status's name.
func (s *HealthStatus) UnmarshalText(b []byte) error {
	for i, n := range healthStatusNames {
		if n == string(b) {
			*s = HealthStatus(i)
			return nil
		}
	}
	return fmt.Errorf("health status %q: want unreachable, healthy or failed", b)
}

// HealthEntry is one node's status in a summary.
type HealthEntry struct {
	Node   int          `json:"node"`
	Status HealthStatus `json:"status"`
}

// HealthCounts are a summary's totals; every node in the summary is in exactly one of them.
type HealthCounts struct {
	Healthy     int `json:"healthy"`
	Failed      int `json:"failed"`
	Unreachable int `json:"unreachable"`
}

// Total is the number of nodes counted.
func (c HealthCounts) Total() int { return c.Healthy + c.Failed + c.Unreachable }

// HealthSummary is a reduced health report: per-node status keyed by node id, and the counts
// derived from it. Counts are recomputed from the entries on every merge rather than added, so
// that merging a record twice does not count it twice. The zero value is the empty summary.
// Summaries are immutable: Merge returns a new one and never changes its operands.
type HealthSummary struct {
	// entries is sorted by node id, one entry per node, no HealthUnknown.
	entries []HealthEntry
	counts  HealthCounts
}

// NewHealthSummary builds a summary from entries in any order; entries naming the same node are
// merged, HealthUnknown entries are ignored.
func NewHealthSummary(entries ...HealthEntry) (HealthSummary, error) {
	es := make([]HealthEntry, 0, len(entries))
	for _, e := range entries {
		if e.Node < 0 {
			return HealthSummary{}, fmt.Errorf("health summary: node id %d is negative", e.Node)
		}
		if e.Status > HealthFailed {
			return HealthSummary{}, fmt.Errorf("health summary: node %d: unknown status %d", e.Node, e.Status)
		}
		if e.Status != HealthUnknown {
			es = append(es, e)
		}
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].Node < es[j].Node })
	out := es[:0]
	for _, e := range es {
		if n := len(out); n > 0 && out[n-1].Node == e.Node {
			out[n-1].Status = max(out[n-1].Status, e.Status)
			continue
		}
		out = append(out, e)
	}
	return hsFromSorted(out), nil
}

// healthRecord is the one-node summary a node's own health record stands for.
func healthRecord(node int, st HealthStatus) HealthSummary {
	return hsFromSorted([]HealthEntry{{Node: node, Status: st}})
}

func hsFromSorted(es []HealthEntry) HealthSummary {
	s := HealthSummary{entries: es}
	for _, e := range es {
		s.counts.add(e.Status)
	}
	return s
}

func (c *HealthCounts) add(st HealthStatus) {
	switch st {
	case HealthHealthy:
		c.Healthy++
	case HealthFailed:
		c.Failed++
	case HealthUnreachable:
		c.Unreachable++
	}
}

// Merge returns the union of s and o; a node in both gets the larger status (see HealthStatus).
// It runs in time linear in the two sizes.
func (s HealthSummary) Merge(o HealthSummary) HealthSummary {
	if len(o.entries) == 0 {
		return s
	}
	if len(s.entries) == 0 {
		return o
	}
	a, b := s.entries, o.entries
	out := make([]HealthEntry, 0, len(a)+len(b))
	var c HealthCounts
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var e HealthEntry
		switch {
		case j == len(b) || (i < len(a) && a[i].Node < b[j].Node):
			e = a[i]
			i++
		case i == len(a) || b[j].Node < a[i].Node:
			e = b[j]
			j++
		default:
			e = HealthEntry{Node: a[i].Node, Status: max(a[i].Status, b[j].Status)}
			i++
			j++
		}
		c.add(e.Status)
		out = append(out, e)
	}
	return HealthSummary{entries: out, counts: c}
}

// Counts returns the totals.
func (s HealthSummary) Counts() HealthCounts { return s.counts }

// Len is the number of nodes the summary speaks of.
func (s HealthSummary) Len() int { return len(s.entries) }

// Status returns node's status, HealthUnknown when the summary has no entry for it.
func (s HealthSummary) Status(node int) HealthStatus {
	i := sort.Search(len(s.entries), func(i int) bool { return s.entries[i].Node >= node })
	if i < len(s.entries) && s.entries[i].Node == node {
		return s.entries[i].Status
	}
	return HealthUnknown
}

// Entries returns a copy of the entries, sorted by node id.
func (s HealthSummary) Entries() []HealthEntry { return append([]HealthEntry(nil), s.entries...) }

// Equal reports whether both summaries hold the same entries.
func (s HealthSummary) Equal(o HealthSummary) bool {
	if len(s.entries) != len(o.entries) {
		return false
	}
	for i := range s.entries {
		if s.entries[i] != o.entries[i] {
			return false
		}
	}
	return true
}

// CoversExactly reports whether the summary has one entry for each node 0..n-1 and no other.
func (s HealthSummary) CoversExactly(n int) bool {
	if len(s.entries) != n {
		return false
	}
	for i, e := range s.entries {
		if e.Node != i {
			return false
		}
	}
	return true
}

type healthSummaryJSON struct {
	HealthCounts
	Nodes map[string]HealthStatus `json:"nodes"`
}

// MarshalJSON writes {"healthy":…,"failed":…,"unreachable":…,"nodes":{"id":"status",…}}.
func (s HealthSummary) MarshalJSON() ([]byte, error) {
	j := healthSummaryJSON{HealthCounts: s.counts, Nodes: make(map[string]HealthStatus, len(s.entries))}
	for _, e := range s.entries {
		j.Nodes[strconv.Itoa(e.Node)] = e.Status
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes; the counts are recomputed from the nodes.
func (s *HealthSummary) UnmarshalJSON(b []byte) error {
	var j healthSummaryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("health summary: %w", err)
	}
	es := make([]HealthEntry, 0, len(j.Nodes))
	for k, st := range j.Nodes {
		id, err := strconv.Atoi(k)
		if err != nil {
			return fmt.Errorf("health summary: node id %q is not an integer", k)
		}
		es = append(es, HealthEntry{Node: id, Status: st})
	}
	out, err := NewHealthSummary(es...)
	if err != nil {
		return err
	}
	*s = out
	return nil
}
