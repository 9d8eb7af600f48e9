package routing

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/topology"
)

// GroupSet is one item of a group-set list and the number of groups it gave.
type GroupSet struct {
	Spec   string `json:"spec"`
	Groups int    `json:"groups"`
}

// GroupSetOptions are what ParseGroupSets needs beyond the fabric.
type GroupSetOptions struct {
	// Seed draws the random groups.
	Seed uint64
	// ServerOf returns the boot server of every node (a mapping.Assignment's Server slice) for
	// the servers set: the mapping is the caller's to choose. Its errors are returned as they are.
	ServerOf func(g *topology.Graph) ([]int32, error)
	// Open opens the file of an @FILE item; nil means os.Open.
	Open func(path string) (io.ReadCloser, error)
}

// GroupSetError is a group-set item that is malformed or gives no groups on the fabric.
type GroupSetError struct {
	// Set is the item as given (trimmed); it is empty when the item is of no known kind, and Err
	// then quotes it.
	Set string
	Err error
}

func (e *GroupSetError) Error() string {
	if e.Set == "" {
		return e.Err.Error()
	}
	return e.Set + ": " + e.Err.Error()
}

func (e *GroupSetError) Unwrap() error { return e.Err }

// ParseGroupSets generates the groups of every item of spec, in order, and returns them with the
// count per item. A bad item is a *GroupSetError naming it (ServerOf's errors excepted).
//
// Group sets name the multicast workloads of bootctl mcast in one string: comma-separated items,
// each one kind of the FULB-MC paper's communicators over the fabric's nodes (process i on node
// i), or a file of groups.
//
//	grid2d[:RxC]      one group per row and per column of a 2-D process grid (default: most nearly square)
//	grid3d[:AxBxC]    one group per line along each axis of a 3-D grid
//	planes[:AxBxC]    one group per plane of a 3-D grid
//	leaders[:K]       hierarchical groups of K (default 16), their leaders, and so on up
//	random:N:SIZE     N groups of SIZE distinct nodes, drawn from GroupSetOptions.Seed
//	servers           one group per boot server and its nodes (GroupSetOptions.ServerOf)
//	@FILE             one group per line (ParseGroups)
func ParseGroupSets(fab *topology.Fabric, spec string, opt GroupSetOptions) ([]McastGroup, []GroupSet, error) {
	var all []McastGroup
	var sets []GroupSet
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		gs, err := groupSet(fab, item, opt)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, gs...)
		sets = append(sets, GroupSet{Spec: item, Groups: len(gs)})
	}
	return all, sets, nil
}

// groupSet generates the groups of one item.
func groupSet(fab *topology.Fabric, item string, opt GroupSetOptions) ([]McastGroup, error) {
	if path, ok := strings.CutPrefix(item, "@"); ok {
		gs, err := readGroupsFile(fab, path, opt.Open)
		if err != nil {
			return nil, &GroupSetError{Set: item, Err: err}
		}
		return gs, nil
	}
	name, arg, hasArg := strings.Cut(item, ":")
	switch name {
	case "servers":
		return serverSet(fab.Graph, item, opt.ServerOf)
	case "grid2d", "grid3d", "planes", "leaders", "random":
	default:
		return nil, &GroupSetError{Err: fmt.Errorf("%q is not grid2d[:RxC], grid3d[:AxBxC], planes[:AxBxC], leaders[:K], random:N:SIZE, servers or @FILE", item)}
	}
	g := fab.Graph
	if len(g.Nodes()) == 0 {
		return nil, &GroupSetError{Set: item, Err: fmt.Errorf("%s has no nodes", g.Name)}
	}
	gs, err := nodeSet(g.Nodes(), name, arg, hasArg, opt.Seed)
	if err != nil {
		return nil, &GroupSetError{Set: item, Err: err}
	}
	return gs, nil
}

// nodeSet generates the groups of a set of the kind name over nodes.
func nodeSet(nodes []topology.VertexID, name, arg string, hasArg bool, seed uint64) ([]McastGroup, error) {
	switch name {
	case "grid2d":
		return grid2DSet(nodes, arg, hasArg)
	case "grid3d":
		return grid3DSet(nodes, arg, hasArg, Grid3DGroups)
	case "planes":
		return grid3DSet(nodes, arg, hasArg, Grid3DPlaneGroups)
	case "leaders":
		return leadersSet(nodes, arg, hasArg)
	default:
		return randomSet(nodes, arg, seed)
	}
}

// grid2DSet is grid2d[:RxC].
func grid2DSet(nodes []topology.VertexID, arg string, hasArg bool) ([]McastGroup, error) {
	r, c := GridDims2(len(nodes))
	if hasArg {
		d, err := parseDims(arg, 2)
		if err != nil {
			return nil, err
		}
		r, c = d[0], d[1]
	}
	return Grid2DGroups(nodes, r, c)
}

// grid3DSet is grid3d[:AxBxC] or planes[:AxBxC], by the generator given.
func grid3DSet(nodes []topology.VertexID, arg string, hasArg bool, gen func([]topology.VertexID, int, int, int) ([]McastGroup, error)) ([]McastGroup, error) {
	a, b, c := GridDims3(len(nodes))
	if hasArg {
		d, err := parseDims(arg, 3)
		if err != nil {
			return nil, err
		}
		a, b, c = d[0], d[1], d[2]
	}
	return gen(nodes, a, b, c)
}

// leadersSet is leaders[:K].
func leadersSet(nodes []topology.VertexID, arg string, hasArg bool) ([]McastGroup, error) {
	k := 16
	if hasArg {
		var err error
		if k, err = strconv.Atoi(arg); err != nil {
			return nil, fmt.Errorf("fanout %q is not an integer", arg)
		}
	}
	return LeaderGroups(nodes, k)
}

// randomSet is random:N:SIZE (arg is N:SIZE).
func randomSet(nodes []topology.VertexID, arg string, seed uint64) ([]McastGroup, error) {
	n, size, ok := strings.Cut(arg, ":")
	cnt, err1 := strconv.Atoi(n)
	sz, err2 := strconv.Atoi(size)
	if !ok || err1 != nil || err2 != nil {
		return nil, fmt.Errorf("want random:N:SIZE, e.g. random:1000:16")
	}
	return RandomGroups(nodes, cnt, sz, seed)
}

// serverSet is servers: it needs boot servers and the named levels a mapping works on.
func serverSet(g *topology.Graph, item string, serverOf func(*topology.Graph) ([]int32, error)) ([]McastGroup, error) {
	if g.Hierarchy() == nil || len(g.Servers()) == 0 {
		return nil, &GroupSetError{Set: "servers", Err: fmt.Errorf("%s has no boot servers and named levels (use a machine such as sunway)", g.Name)}
	}
	if serverOf == nil {
		return nil, &GroupSetError{Set: item, Err: fmt.Errorf("no mapping of nodes to boot servers given")}
	}
	s, err := serverOf(g)
	if err != nil {
		return nil, err
	}
	gs, err := ServerGroups(g, s, nil)
	if err != nil {
		return nil, &GroupSetError{Set: item, Err: err}
	}
	return gs, nil
}

// parseDims parses "RxC" (n = 2) or "AxBxC" (n = 3).
func parseDims(s string, n int) ([]int, error) {
	f := strings.Split(s, "x")
	if len(f) != n {
		return nil, fmt.Errorf("dimensions %q: want %d sizes separated by x", s, n)
	}
	out := make([]int, n)
	for i, x := range f {
		v, err := strconv.Atoi(x)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("dimensions %q: %q is not a positive integer", s, x)
		}
		out[i] = v
	}
	return out, nil
}

// readGroupsFile opens path with open (nil: os.Open) and parses it.
func readGroupsFile(fab *topology.Fabric, path string, open func(string) (io.ReadCloser, error)) ([]McastGroup, error) {
	if open == nil {
		open = func(p string) (io.ReadCloser, error) { return os.Open(p) }
	}
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseGroups(f, path, fab)
}

// ParseGroups reads multicast groups, one per line: an optional "NAME:" (a name without blanks;
// default FILE:LINE) and the members, endpoint names or GUIDs of fab, separated by blanks; "#"
// starts a comment. Errors name the file (name) and line: an unknown endpoint, a switch as a
// member, a group without members, a file without groups.
func ParseGroups(r io.Reader, name string, fab *topology.Fabric) ([]McastGroup, error) {
	var out []McastGroup
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(text) == "" {
			continue
		}
		gr, err := parseGroupLine(text, name, line, fab)
		if err != nil {
			return nil, err
		}
		out = append(out, gr)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no groups", name)
	}
	return out, nil
}

// parseGroupLine parses one group line (comment removed, not blank).
func parseGroupLine(text, file string, line int, fab *topology.Fabric) (McastGroup, error) {
	name := fmt.Sprintf("%s:%d", file, line)
	if n, rest, ok := strings.Cut(text, ":"); ok && !strings.ContainsAny(strings.TrimSpace(n), " \t") {
		name, text = strings.TrimSpace(n), rest
	}
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return McastGroup{}, fmt.Errorf("%s:%d: group %s is empty", file, line, name)
	}
	gr := McastGroup{Name: name}
	for _, ep := range fields {
		v, ok := fab.Lookup(ep)
		if !ok {
			return McastGroup{}, fmt.Errorf("%s:%d: unknown endpoint %q", file, line, ep)
		}
		if fab.Kind(v) == topology.Switch {
			return McastGroup{}, fmt.Errorf("%s:%d: %q is a switch, not an endpoint", file, line, ep)
		}
		gr.Members = append(gr.Members, v)
	}
	return gr, nil
}
