package topology

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Level is one named level of a hierarchical machine, such as cabinet or board.
type Level struct {
	Name string
	// Prefix starts the level's part of a node name, e.g. "b" in "c0-s1-b7-n3".
	Prefix string
	// Count is the number of elements of this level in each element of the level above.
	Count int
}

// Hierarchy is the named levels of a hierarchical machine, outermost first; the last level is the
// compute nodes. Node indices run in position order, so the block of node i at level l is
// i / Hierarchy.Span(l).
type Hierarchy struct {
	levels []Level
	span   []int // nodes in one element of each level
	total  []int // elements of each level in the machine
	// names, when set, name the first nodes instead of their positions (Machine.NodeNames);
	// byName indexes them.
	names  []string
	byName map[string]int
}

// NewHierarchy checks the levels and returns the hierarchy.
func NewHierarchy(levels []Level) (*Hierarchy, error) {
	if len(levels) == 0 {
		return nil, fmt.Errorf("a hierarchy needs at least one level")
	}
	h := &Hierarchy{levels: append([]Level(nil), levels...), span: make([]int, len(levels)), total: make([]int, len(levels))}
	seen := map[string]bool{}
	seenPrefix := map[string]bool{}
	for i, l := range levels {
		if l.Name == "" {
			return nil, fmt.Errorf("level %d: name is empty", i+1)
		}
		if seen[l.Name] {
			return nil, fmt.Errorf("level %q: name used twice", l.Name)
		}
		seen[l.Name] = true
		if l.Prefix == "" || strings.IndexFunc(l.Prefix, func(r rune) bool { return r < 'a' || r > 'z' }) >= 0 {
			return nil, fmt.Errorf("level %q: prefix %q must be lower-case letters a-z", l.Name, l.Prefix)
		}
		if seenPrefix[l.Prefix] {
			return nil, fmt.Errorf("level %q: prefix %q used twice", l.Name, l.Prefix)
		}
		seenPrefix[l.Prefix] = true
		if l.Count < 1 {
			return nil, fmt.Errorf("level %q: count must be at least 1, got %d", l.Name, l.Count)
		}
	}
	n := 1
	for i := len(levels) - 1; i >= 0; i-- {
		if n > maxNodes/levels[i].Count {
			return nil, fmt.Errorf("level %q: machine larger than %d nodes", levels[i].Name, maxNodes)
		}
		n *= levels[i].Count
		h.span[i] = n / levels[i].Count
	}
	for i := range levels {
		h.total[i] = n / h.span[i]
	}
	return h, nil
}

// maxNodes bounds a machine so that a typo in a count cannot exhaust memory.
const maxNodes = 1 << 24

// Levels returns the levels, outermost first.
func (h *Hierarchy) Levels() []Level { return h.levels }

// NumNodes returns the number of compute nodes.
func (h *Hierarchy) NumNodes() int { return h.total[len(h.total)-1] }

// Index returns the index of the level with the given name (a trailing "s" is accepted: "boards").
func (h *Hierarchy) Index(name string) (int, bool) {
	for i, l := range h.levels {
		if l.Name == name || l.Name+"s" == name {
			return i, true
		}
	}
	return 0, false
}

// Span returns the number of nodes in one element of level l.
func (h *Hierarchy) Span(l int) int { return h.span[l] }

// Total returns the number of elements of level l in the machine.
func (h *Hierarchy) Total(l int) int { return h.total[l] }

// Block returns the machine-wide index of the level-l element that holds node i.
func (h *Hierarchy) Block(i, l int) int { return i / h.span[l] }

// NodeName returns the name of node i, e.g. "c3-s1-b7-n2", or the name it was given.
func (h *Hierarchy) NodeName(i int) string {
	if i < len(h.names) {
		return h.names[i]
	}
	return h.name(i, len(h.levels)-1)
}

// setNames names the first len(names) nodes; the rest keep their positions' names, which no given
// name may take (a name must find one node).
func (h *Hierarchy) setNames(names []string) error {
	if len(names) == 0 {
		return nil
	}
	if len(names) > h.NumNodes() {
		return fmt.Errorf("%d node names for %d nodes", len(names), h.NumNodes())
	}
	byName := make(map[string]int, len(names))
	for i, n := range names {
		if n == "" {
			return fmt.Errorf("node %d: empty name", i)
		}
		if j, dup := byName[n]; dup {
			return fmt.Errorf("node name %q given to nodes %d and %d", n, j, i)
		}
		byName[n] = i
	}
	for i := len(names); i < h.NumNodes(); i++ {
		if j, clash := byName[h.name(i, len(h.levels)-1)]; clash {
			return fmt.Errorf("node name %q is also the position of node %d", names[j], i)
		}
	}
	h.names, h.byName = slices.Clone(names), byName
	return nil
}

// BlockName returns the name of block b of level l, e.g. "c3-s1" for a supernode.
func (h *Hierarchy) BlockName(b, l int) string { return h.name(b*h.span[l], l) }

func (h *Hierarchy) name(i, last int) string {
	var sb strings.Builder
	for l := 0; l <= last; l++ {
		if l > 0 {
			sb.WriteByte('-')
		}
		sb.WriteString(h.levels[l].Prefix)
		sb.WriteString(strconv.Itoa(i / h.span[l] % h.levels[l].Count))
	}
	return sb.String()
}

// ParseNode returns the index of the node with the given name.
func (h *Hierarchy) ParseNode(name string) (int, error) {
	if i, ok := h.byName[name]; ok {
		return i, nil
	}
	parts := strings.Split(name, "-")
	if len(parts) != len(h.levels) {
		return 0, fmt.Errorf("node name %q: want %d parts like %q", name, len(h.levels), h.NodeName(0))
	}
	i := 0
	for l, p := range parts {
		lv := h.levels[l]
		num, ok := strings.CutPrefix(p, lv.Prefix)
		k, err := strconv.Atoi(num)
		if !ok || err != nil || k < 0 || num != strconv.Itoa(k) {
			return 0, fmt.Errorf("node name %q: part %q is not %s followed by a %s number", name, p, lv.Prefix, lv.Name)
		}
		if k >= lv.Count {
			return 0, fmt.Errorf("node name %q: %s %d out of range (0..%d)", name, lv.Name, k, lv.Count-1)
		}
		i += k * h.span[l]
	}
	return i, nil
}
