package routing

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/topology"
)

// DumpCheck is what CheckDump found by following the dumped files.
type DumpCheck struct {
	Paths        int64 `json:"paths"`       // endpoint pairs followed
	Unreachable  int64 `json:"unreachable"` // pairs whose walk hit a missing entry, a dead port or another endpoint
	Loops        int64 `json:"loops"`
	SLs          int   `json:"sls"`
	VLs          int   `json:"vls"`
	DeadlockFree bool  `json:"deadlock_free"`
	CyclicVLs    []int `json:"cyclic_vls,omitempty"`
}

// DumpFiles are the files bootctl route --dump writes; SL and SL2VL are nil for tables on one
// virtual channel (every path on SL 0, every lane VL 0).
type DumpFiles struct {
	LFT, SL, SL2VL io.Reader
	// Names for errors.
	LFTName, SLName, SL2VLName string
}

var (
	dumpSwitch = regexp.MustCompile(`^Unicast lids \[0-(\d+)\] of switch Lid \d+ guid 0x([0-9a-fA-F]{16}) `)
	dumpEntry  = regexp.MustCompile(`^0x([0-9a-fA-F]{4}) (\d{3}) #`)
	slLine     = regexp.MustCompile(`^0x([0-9a-fA-F]{16}) 0x([0-9a-fA-F]{4}) (\d+)$`)
	sl2vlHead  = regexp.MustCompile(`^# SL2VL table: Switch 0x([0-9a-fA-F]{16}) `)
	sl2vlLine  = regexp.MustCompile(`^ports: in +(\d+), out +(\d+): \|((?: *\d+\|){16})$`)
)

// dumpState is the forwarding state read back from the files, by vertex.
type dumpState struct {
	f      *topology.Fabric
	lft    map[topology.VertexID][]uint8 // switch -> LID -> physical port (0xff: none)
	sl     [][]uint8                     // source vertex -> destination LID -> SL (nil: all 0)
	maxLID int
	sl2vl  map[topology.VertexID]map[int]*[16]uint8
	sls    int
	byGUID map[uint64]topology.VertexID
}

// CheckDump follows every endpoint pair of f through the dumped tables as a fabric would: the
// LFT entries for the destination's LID, the path's SL from the SL file and the lane from each
// switch's SL-to-VL table, and checks that every pair arrives and that the lanes' channel
// dependency graphs are acyclic. It reads nothing the routing kept in memory, so it checks what
// is deployed.
func CheckDump(f *topology.Fabric, files DumpFiles) (*DumpCheck, error) {
	st := &dumpState{f: f, lft: map[topology.VertexID][]uint8{}, sl: make([][]uint8, f.NumVertices()),
		sl2vl: map[topology.VertexID]map[int]*[16]uint8{}, byGUID: map[uint64]topology.VertexID{}}
	for v := range topology.VertexID(f.NumVertices()) {
		st.byGUID[f.PortGUID(v)] = v
		st.maxLID = max(st.maxLID, f.LID(v))
	}
	if err := st.readLFT(files.LFT, files.LFTName); err != nil {
		return nil, err
	}
	if files.SL != nil {
		if err := st.readSL(files.SL, files.SLName); err != nil {
			return nil, err
		}
	}
	if files.SL2VL != nil {
		if err := st.readSL2VL(files.SL2VL, files.SL2VLName); err != nil {
			return nil, err
		}
	}
	return st.walk(), nil
}

func (st *dumpState) readLFT(r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	var cur []uint8
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if m := dumpSwitch.FindStringSubmatch(text); m != nil {
			maxLID, _ := strconv.Atoi(m[1])
			g, _ := strconv.ParseUint(m[2], 16, 64)
			v, ok := st.byGUID[g]
			if !ok || st.f.Kind(v) != topology.Switch || maxLID > 0xffff {
				return fmt.Errorf("%s:%d: no switch with GUID 0x%016x in the topology", name, line, g)
			}
			cur = make([]uint8, maxLID+1)
			for i := range cur {
				cur[i] = 0xff
			}
			st.lft[v] = cur
			continue
		}
		if m := dumpEntry.FindStringSubmatch(text); m != nil && cur != nil {
			lid, _ := strconv.ParseUint(m[1], 16, 16)
			port, _ := strconv.Atoi(m[2])
			if int(lid) >= len(cur) || port > 254 {
				return fmt.Errorf("%s:%d: LID or port out of range", name, line)
			}
			cur[lid] = uint8(port)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(st.lft) == 0 {
		return fmt.Errorf("%s: %w", name, errNoTables)
	}
	return nil
}

func (st *dumpState) readSL(r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		m := slLine.FindStringSubmatch(text)
		if m == nil {
			return fmt.Errorf("%s:%d: malformed line %q: want SRC_PORT_GUID DST_LID SL", name, line, text)
		}
		g, _ := strconv.ParseUint(m[1], 16, 64)
		lid, _ := strconv.ParseUint(m[2], 16, 16)
		sl, _ := strconv.Atoi(m[3])
		v, ok := st.byGUID[g]
		if !ok || sl >= MaxSL || int(lid) > st.maxLID {
			return fmt.Errorf("%s:%d: unknown port GUID or LID, or SL out of range 0..15", name, line)
		}
		if st.sl[v] == nil {
			st.sl[v] = make([]uint8, st.maxLID+1)
		}
		st.sl[v][lid] = uint8(sl)
		st.sls = max(st.sls, sl+1)
	}
	return sc.Err()
}

func (st *dumpState) readSL2VL(r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	var cur map[int]*[16]uint8
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if m := sl2vlHead.FindStringSubmatch(text); m != nil {
			g, _ := strconv.ParseUint(m[1], 16, 64)
			v, ok := st.byGUID[g]
			if !ok || st.f.Kind(v) != topology.Switch {
				return fmt.Errorf("%s:%d: no switch with GUID 0x%016x in the topology", name, line, g)
			}
			cur = map[int]*[16]uint8{}
			st.sl2vl[v] = cur
			continue
		}
		m := sl2vlLine.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		if cur == nil {
			return fmt.Errorf("%s:%d: port line before a switch", name, line)
		}
		in, _ := strconv.Atoi(m[1])
		out, _ := strconv.Atoi(m[2])
		var e [16]uint8
		for i, x := range strings.Split(strings.TrimSuffix(m[3], "|"), "|") {
			vl, err := strconv.Atoi(strings.TrimSpace(x))
			if err != nil || vl > 14 {
				return fmt.Errorf("%s:%d: VL %q out of range 0..14", name, line, x)
			}
			e[i] = uint8(vl)
		}
		cur[in<<8|out] = &e
	}
	return sc.Err()
}

// walk follows every pair and checks the lanes' dependency graph.
//
// Forwarding is by destination, and the lane at a switch depends on the input port and the SL, so
// for one destination the rest of a path is fixed by its state (switch, input port, SL): each
// state is walked once per destination (stamped with the destination's generation) and later
// paths stop where they join a walked one, taking its outcome. That keeps the check near one step
// per pair on large fabrics, with arrays rather than maps.
func (st *dumpState) walk() *DumpCheck {
	f := st.f
	rep := &DumpCheck{SLs: max(st.sls, 1), VLs: 1}
	w := newWalker(st, rep)
	var ends []topology.VertexID
	for v := range topology.VertexID(f.NumVertices()) {
		if f.Kind(v) != topology.Switch && len(f.Links(v)) > 0 {
			ends = append(ends, v)
		}
	}
	for gen, dst := range ends {
		w.gen = int32(gen + 1)
		for _, src := range ends {
			if src == dst {
				continue
			}
			rep.Paths++
			switch w.follow(src, dst) {
			case walkLoop:
				rep.Loops++
			case walkLost:
				rep.Unreachable++
			}
		}
	}
	rep.CyclicVLs = cyclicLanes(w.adj)
	rep.DeadlockFree = len(rep.CyclicVLs) == 0
	return rep
}

// newWalker indexes the dumped switches, their physical ports and SL-to-VL tables, and sizes
// the state arrays.
func newWalker(st *dumpState, rep *DumpCheck) *walker {
	f := st.f
	w := &walker{st: st, rep: rep, swIdx: map[topology.VertexID]int{}}
	for v := range st.lft {
		w.swIdx[v] = len(w.sws)
		w.sws = append(w.sws, v)
	}
	w.portLink = make([][]topology.LinkID, len(w.sws))
	w.sl2vl = make([][]*[16]uint8, len(w.sws))
	w.stride = make([]int, len(w.sws))
	for i, v := range w.sws {
		pl := make([]topology.LinkID, 256)
		for p := range pl {
			pl[p] = -1
		}
		n := 0
		for _, l := range f.Links(v) {
			pl[f.LinkPort(v, l)] = l
			n = max(n, f.LinkPort(v, l))
		}
		w.portLink[i] = pl
		if len(st.sl2vl[v]) > 0 {
			w.stride[i] = n + 1
			w.sl2vl[i] = laneTable(st.sl2vl[v], n)
		}
	}
	nstate := len(w.sws) * 256 * MaxSL
	w.stamp, w.outcome = make([]int32, nstate), make([]int8, nstate)
	w.adj = make([][]int32, 2*f.NumLinks()*MaxSL)
	return w
}

// laneTable lays a switch's SL-to-VL tables (by in<<8|out) out by in*(n+1)+out for ports up to n.
func laneTable(byPair map[int]*[16]uint8, n int) []*[16]uint8 {
	tab := make([]*[16]uint8, (n+1)*(n+1))
	for k, e := range byPair {
		if in, out := k>>8, k&0xff; in <= n && out <= n {
			tab[in*(n+1)+out] = e
		}
	}
	return tab
}

const (
	walkArrived = iota
	walkLost
	walkLoop
	walkPending
)

// walker holds the arrays of one CheckDump walk.
type walker struct {
	st       *dumpState
	rep      *DumpCheck
	sws      []topology.VertexID
	swIdx    map[topology.VertexID]int
	portLink [][]topology.LinkID // switch -> physical port -> link
	sl2vl    [][]*[16]uint8      // switch -> in*stride+out -> VL per SL (nil: all VL 0)
	stride   []int
	gen      int32
	stamp    []int32 // state (switch, in port, SL) -> generation it was walked in
	outcome  []int8
	adj      [][]int32 // lane dependency graph: node channel*16+VL -> next nodes
	path     []int     // states of the current walk
}

// follow walks one pair, adding the lane dependencies between its switch-to-switch hops, until it
// arrives, fails or joins a state walked before for this destination.
func (w *walker) follow(src, dst topology.VertexID) int {
	f, st := w.st.f, w.st
	lid := f.LID(dst)
	sl := 0
	if st.sl[src] != nil {
		sl = int(st.sl[src][lid])
	}
	l := f.Links(src)[0]
	cur := f.Other(l, src)
	in := f.LinkPort(cur, l)
	prev := int32(-1) // node of the previous switch-to-switch hop: channel*16 + VL
	w.path = w.path[:0]
	result := walkLoop
	for range len(w.sws) + 1 {
		s, ok := w.swIdx[cur]
		if !ok {
			result = walkLost
			break
		}
		state := (s*256+in)*MaxSL + sl
		if w.stamp[state] == w.gen {
			result = int(w.outcome[state]) // walkPending: this walk came back to it, a loop
			if result == walkPending {
				result = walkLoop
			}
			w.edge(prev, state, cur, lid, sl)
			break
		}
		w.stamp[state], w.outcome[state] = w.gen, walkPending
		w.path = append(w.path, state)
		next, node, r := w.hop(prev, s, cur, in, lid, sl)
		if r != walkPending {
			result = r
			break
		}
		if next == dst {
			result = walkArrived
			break
		}
		if f.Kind(next) != topology.Switch {
			result = walkLost
			break
		}
		l = w.portLink[s][st.lft[cur][lid]]
		prev, in, cur = node, f.LinkPort(next, l), next
	}
	for _, s := range w.path {
		w.outcome[s] = int8(result)
	}
	return result
}

// hop takes the table entry of switch s (vertex cur) for lid, records the dependency from prev,
// and returns the next vertex and the hop's node, or an outcome when the entry leads nowhere.
func (w *walker) hop(prev int32, s int, cur topology.VertexID, in, lid, sl int) (topology.VertexID, int32, int) {
	f := w.st.f
	tab := w.st.lft[cur]
	if lid >= len(tab) || tab[lid] == 0xff || tab[lid] == 0 {
		return 0, 0, walkLost
	}
	out := int(tab[lid])
	l := w.portLink[s][out]
	if l < 0 {
		return 0, 0, walkLost
	}
	vl := uint8(0)
	if w.sl2vl[s] != nil {
		if e := w.sl2vl[s][in*w.stride[s]+out]; e != nil {
			vl = e[sl]
		}
	}
	w.rep.VLs = max(w.rep.VLs, int(vl)+1)
	node := int32(topology.ChannelOf(l, f.Link(l).A != cur))*MaxSL + int32(vl)
	w.addEdge(prev, node)
	return f.Other(l, cur), node, walkPending
}

// edge records the dependency from prev into a state walked before (its hop's node recomputed).
func (w *walker) edge(prev int32, state int, cur topology.VertexID, lid, sl int) {
	if prev < 0 {
		return
	}
	s := state / MaxSL / 256
	in := state / MaxSL % 256
	if _, node, r := w.hop(-1, s, cur, in, lid, sl); r == walkPending {
		w.addEdge(prev, node)
	}
}

func (w *walker) addEdge(from, to int32) {
	if from < 0 {
		return
	}
	for _, x := range w.adj[from] {
		if x == to {
			return
		}
	}
	w.adj[from] = append(w.adj[from], to)
}

// cyclicLanes returns the lanes on which the dependency graph has a cycle (iterative DFS).
func cyclicLanes(adj [][]int32) []int {
	color := make([]uint8, len(adj))
	cyc := map[int]bool{}
	type frame struct {
		node int32
		next int
	}
	var stack []frame
	for start := range adj {
		if color[start] != 0 || len(adj[start]) == 0 {
			continue
		}
		color[start] = 1
		stack = append(stack[:0], frame{int32(start), 0})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next < len(adj[top.node]) {
				n := adj[top.node][top.next]
				top.next++
				switch color[n] {
				case 1:
					cyc[int(n%MaxSL)] = true
				case 0:
					color[n] = 1
					stack = append(stack, frame{n, 0})
				}
				continue
			}
			color[top.node] = 2
			stack = stack[:len(stack)-1]
		}
	}
	var out []int
	for vl := range MaxSL {
		if cyc[vl] {
			out = append(out, vl)
		}
	}
	return out
}

// ReadLFT reads an LFT dump in OpenSM's layout (OpenSM's opensm-lfts.dump, or WriteLFT's) onto
// the fabric f as tables of the engine "file": the entries for the endpoints' LIDs, their
// physical ports turned into f's ports. Entries for switch LIDs are not kept (the tables route to
// endpoints). So tables OpenSM computed can be checked and measured like bootctl's.
func ReadLFT(f *topology.Fabric, r io.Reader, name string) (*Tables, error) {
	lr := newLFTReader(f, name)
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		if err := lr.line(sc.Text(), line); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if lr.s < 0 {
		return nil, fmt.Errorf("%s: %w", name, errNoTables)
	}
	return lr.t, nil
}

// lftReader reads an LFT dump's lines into tables.
type lftReader struct {
	f         *topology.Fabric
	name      string
	t         *Tables
	byGUID    map[uint64]topology.VertexID // switches
	destOfLID map[int]int                  // endpoint LID -> destination index
	s         int                          // current switch index, -1 before the first
	graphPort []int                        // physical port -> graph port at the current switch
}

func newLFTReader(f *topology.Fabric, name string) *lftReader {
	lr := &lftReader{f: f, name: name, t: newTables(f.Graph, "file"), byGUID: map[uint64]topology.VertexID{}, destOfLID: map[int]int{}, s: -1}
	for v := range topology.VertexID(f.NumVertices()) {
		if f.Kind(v) == topology.Switch {
			lr.byGUID[f.GUID(v)] = v
		} else if d := lr.t.destIdx[v]; d >= 0 && f.HasLID(v) {
			lr.destOfLID[f.LID(v)] = int(d)
		}
	}
	return lr
}

// line takes one line: a switch header starts that switch's block, an entry for an endpoint's
// LID sets its port; other lines are skipped.
func (lr *lftReader) line(text string, line int) error {
	f, t := lr.f, lr.t
	if m := dumpSwitch.FindStringSubmatch(text); m != nil {
		g, _ := strconv.ParseUint(m[2], 16, 64)
		v, ok := lr.byGUID[g]
		if !ok {
			return fmt.Errorf("%s:%d: no switch with GUID 0x%016x in %s", lr.name, line, g, f.Name)
		}
		lr.s = int(t.swIdx[v])
		lr.graphPort = make([]int, 256)
		for p, l := range f.Links(v) {
			lr.graphPort[f.LinkPort(v, l)] = p + 1
		}
		return nil
	}
	m := dumpEntry.FindStringSubmatch(text)
	if m == nil || lr.s < 0 {
		return nil
	}
	lid, _ := strconv.ParseUint(m[1], 16, 16)
	port, _ := strconv.Atoi(m[2])
	d, ok := lr.destOfLID[int(lid)]
	if !ok || port == 0 {
		return nil // a switch's LID, or one the fabric does not have
	}
	if port > 255 || lr.graphPort[port] == 0 {
		return fmt.Errorf("%s:%d: port %d of switch %s has no link in %s", lr.name, line, port, f.Desc(t.switches[lr.s]), f.Name)
	}
	t.set(lr.s, d, lr.graphPort[port])
	return nil
}

// errNoTables says that a file given as an LFT dump has none.
var errNoTables = errors.New(`no switch tables ("Unicast lids [0-N] of switch Lid L guid 0x..." lines): want an LFT dump in OpenSM's layout`)
