package topology

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Batch is a set of nodes that boot together.
type Batch struct {
	// Label says what the batch is, e.g. "20 boards" or "boards 64-127".
	Label string `json:"label"`
	// Nodes are node indices in increasing order.
	Nodes []int `json:"-"`
}

// UnitLevel returns the level a batch unit names: a level name (singular or plural), or "node" for
// the last level whatever its name.
func (h *Hierarchy) UnitLevel(unit string) (int, error) {
	if l, ok := h.Index(unit); ok {
		return l, nil
	}
	if unit == "node" || unit == "nodes" {
		return len(h.levels) - 1, nil
	}
	var names []string
	for _, l := range h.levels {
		names = append(names, l.Name)
	}
	return 0, fmt.Errorf("unknown unit %q (levels: %s)", unit, strings.Join(names, ", "))
}

var batchItem = regexp.MustCompile(`^(\d+(?:\.\d+)?)(?:-(\d+))?\s*([a-z]*)$`)

// ParseBatches parses a comma-separated list of batches. Each item is
//
//	COUNT[UNIT]   the first COUNT units of the machine (COUNT may be fractional, 1.25cabinets)
//	FIRST-LAST[UNIT]  units FIRST to LAST inclusive, counted from 0
//	all           the whole machine
//	@FILE         the nodes named in FILE, one per line (# starts a comment)
//
// UNIT is a level name, singular or plural; without it the item is in unit.
func (h *Hierarchy) ParseBatches(spec, unit string) ([]Batch, error) {
	defLevel, err := h.UnitLevel(unit)
	if err != nil {
		return nil, err
	}
	var out []Batch
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("batch list %q: empty item", spec)
		}
		b, err := h.parseBatch(item, defLevel)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func (h *Hierarchy) parseBatch(item string, defLevel int) (Batch, error) {
	if item == "all" {
		return Batch{Label: "whole machine", Nodes: span(0, h.NumNodes())}, nil
	}
	if file, ok := strings.CutPrefix(item, "@"); ok {
		return h.ReadBatchFile(file)
	}
	m := batchItem.FindStringSubmatch(item)
	if m == nil {
		return Batch{}, fmt.Errorf("batch %q: want COUNT[UNIT], FIRST-LAST[UNIT], all or @FILE", item)
	}
	level := defLevel
	if m[3] != "" {
		l, err := h.UnitLevel(m[3])
		if err != nil {
			return Batch{}, fmt.Errorf("batch %q: %w", item, err)
		}
		level = l
	}
	if m[2] != "" {
		return h.rangeBatch(item, m[1], m[2], level)
	}
	return h.countBatch(item, m[1], level)
}

// rangeBatch is the batch of the units FIRST-LAST of a level.
func (h *Hierarchy) rangeBatch(item, firstText, lastText string, level int) (Batch, error) {
	name, unitSpan, total := h.levels[level].Name, h.span[level], h.total[level]
	first, err1 := strconv.Atoi(firstText)
	last, err2 := strconv.Atoi(lastText)
	if err1 != nil || err2 != nil || first > last {
		return Batch{}, fmt.Errorf("batch %q: want FIRST-LAST with whole numbers, FIRST <= LAST", item)
	}
	if last >= total {
		return Batch{}, fmt.Errorf("batch %q: the machine has %d %ss (0-%d)", item, total, name, total-1)
	}
	return Batch{Label: fmt.Sprintf("%ss %d-%d", name, first, last), Nodes: span(first*unitSpan, (last+1)*unitSpan)}, nil
}

// countBatch is the batch of the first COUNT units of a level; COUNT may be a fraction when it makes
// a whole number of nodes.
func (h *Hierarchy) countBatch(item, countText string, level int) (Batch, error) {
	name, unitSpan, total := h.levels[level].Name, h.span[level], h.total[level]
	count, err := strconv.ParseFloat(countText, 64)
	if err != nil || count <= 0 {
		return Batch{}, fmt.Errorf("batch %q: count must be positive", item)
	}
	if count > float64(total) {
		return Batch{}, fmt.Errorf("batch %q: more than the machine's %d %ss", item, total, name)
	}
	nodes := count * float64(unitSpan)
	if math.Abs(nodes-math.Round(nodes)) > 1e-9 {
		return Batch{}, fmt.Errorf("batch %q: %g %ss is not a whole number of nodes (%g)", item, count, name, nodes)
	}
	n := int(math.Round(nodes))
	label := strconv.FormatFloat(count, 'f', -1, 64) + " " + name
	if count != 1 {
		label += "s"
	}
	return Batch{Label: label, Nodes: span(0, n)}, nil
}

func span(from, to int) []int {
	out := make([]int, to-from)
	for i := range out {
		out[i] = from + i
	}
	return out
}

// ReadBatchFile reads a batch from a file of node names, one per line; blank lines and text after
// # are ignored. Errors name the file and line.
func (h *Hierarchy) ReadBatchFile(path string) (Batch, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Batch{}, fmt.Errorf("batch file: %w", err)
	}
	seen := map[int]int{}
	var nodes []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		i, err := h.ParseNode(text)
		if err != nil {
			return Batch{}, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if prev, ok := seen[i]; ok {
			return Batch{}, fmt.Errorf("%s:%d: node %s already listed on line %d", path, line, text, prev)
		}
		seen[i] = line
		nodes = append(nodes, i)
	}
	if err := sc.Err(); err != nil {
		return Batch{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(nodes) == 0 {
		return Batch{}, fmt.Errorf("%s: no node names", path)
	}
	slices.Sort(nodes)
	return Batch{Label: fmt.Sprintf("%s (%d nodes)", path, len(nodes)), Nodes: nodes}, nil
}

// DefaultBatches returns the ladder `plan` uses without --batch: on a machine with cabinet and board
// levels the paper's ladder (1, 20, 21, 32 boards, 1, 1.25, 2.5, 5, 10, 20 and 40 cabinets, up to
// the machine's size); otherwise doubling counts of the unit level up to the whole machine.
func (h *Hierarchy) DefaultBatches() []Batch {
	var items []string
	cab, okc := h.Index("cabinet")
	bd, okb := h.Index("board")
	if okc && okb {
		for _, n := range []int{1, 20, 21, 32} {
			if n <= h.total[bd] {
				items = append(items, strconv.Itoa(n)+"board")
			}
		}
		for _, c := range []float64{1, 1.25, 2.5, 5, 10, 20, 40} {
			nodes := c * float64(h.span[cab])
			if c <= float64(h.total[cab]) && nodes == math.Trunc(nodes) {
				items = append(items, strconv.FormatFloat(c, 'f', -1, 64)+"cabinet")
			}
		}
	} else {
		level := len(h.levels) - 1
		if okb {
			level = bd
		} else if len(h.levels) > 1 {
			level = len(h.levels) - 2
		}
		for n := 1; n < h.total[level]; n *= 2 {
			items = append(items, strconv.Itoa(n)+h.levels[level].Name)
		}
		items = append(items, "all")
	}
	out, err := h.ParseBatches(strings.Join(items, ","), h.levels[len(h.levels)-1].Name)
	if err != nil {
		panic("default ladder does not parse: " + err.Error()) // a bug, not input
	}
	return out
}

// ClipBatches drops the positions from n on (a flat machine's spare switch ports, with no machine
// behind them) from the batches. A batch of such positions alone is an error.
func ClipBatches(batches []Batch, n int) ([]Batch, error) {
	out := make([]Batch, 0, len(batches))
	for _, b := range batches {
		k, _ := slices.BinarySearch(b.Nodes, n)
		if k == 0 {
			return nil, fmt.Errorf("%s: no node of the inventory's %d, only spare switch ports of the flat machine", b.Label, n)
		}
		out = append(out, Batch{Label: b.Label, Nodes: b.Nodes[:k]})
	}
	return out, nil
}

// FindBatch finds a batch by its label or by its position in batches (from 1).
func FindBatch(batches []Batch, s string) (int, error) {
	for i, b := range batches {
		if b.Label == s {
			return i, nil
		}
	}
	if i, err := strconv.Atoi(s); err == nil && i >= 1 && i <= len(batches) {
		return i - 1, nil
	}
	var labels []string
	for _, b := range batches {
		labels = append(labels, strconv.Quote(b.Label))
	}
	return 0, fmt.Errorf("%q is neither a batch of the ladder (%s) nor a position 1-%d", s, strings.Join(labels, ", "), len(batches))
}
