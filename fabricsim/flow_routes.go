package fabricsim

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// simRoutes is what a simulation fixes before it runs: channels and their labels, every position's
// route, and the interned paths and limit profiles the flows share.
type simRoutes struct {
	g     *topology.Graph
	batch []int
	n     int
	// positions counts the positions: the batch's, then (with server failures) the restarts of
	// its nodes on new owners, which need routes of their own (see failState).
	positions int

	numCh     int // graph channels; server caps are virtual channels after them
	capacity  []float64
	chanLabel []uint16 // label of each channel: its segment, or the server cap
	nSeg      int
	nLabels   int
	labels    []string
	rank      []int // display position of each label

	// Per position.
	routeStart []int32
	routeCh    []int32
	nodePath   []int32
	nodeProf   []int32
	privCap    []float64
	privLabel  []uint16
	rtt        []float64

	users    []int32 // booting nodes per channel
	pathCh   [][]int32
	profiles [][]uint16
	fileMb   []float64

	// Multicast delivery (see SimulateMulticast): mc holds the trees, mcNode marks the batch
	// positions served by one, pathMC the paths that are trees (a class on one is one flow).
	mc     *MulticastTrees
	mcNode []bool
	pathMC []bool
}

func (s *sim) chLabel(c int32) uint16 { return s.chanLabel[c] }

// setupChannels sets each channel's capacity and label (server caps are virtual channels after
// the graph's, labelled "server"), the labels' display ranks and the files' sizes in Mb.
func (s *sim) setupChannels(r topology.Router) {
	g, cfg := s.g, s.cfg
	s.numCh = g.NumChannels()
	nVirt := 0
	if cfg.ServerCapMbps > 0 {
		nVirt = len(g.Servers())
	}
	s.capacity = make([]float64, s.numCh+nVirt)
	for c := 0; c < s.numCh; c++ {
		s.capacity[c] = g.ChannelCapacity(topology.Channel(c))
	}
	for c := s.numCh; c < len(s.capacity); c++ {
		s.capacity[c] = cfg.ServerCapMbps
	}
	s.nSeg = len(g.Segments())
	s.chanLabel = make([]uint16, len(s.capacity))
	for c := range s.chanLabel {
		if c < s.numCh {
			s.chanLabel[c] = uint16(g.Link(topology.Channel(c).Link()).Segment)
		} else {
			s.chanLabel[c] = uint16(s.nSeg) // server cap
		}
	}
	s.nLabels = s.nSeg + 3
	s.labels = append(slices.Clone(g.Segments()), "server", "tftp", "http")
	s.rank = make([]int, s.nLabels)
	for i, seg := range SegmentOrder(g, r) {
		s.rank[seg] = i
	}
	for l := s.nSeg; l < s.nLabels; l++ {
		s.rank[l] = l
	}
	for _, f := range cfg.Files {
		s.fileMb = append(s.fileMb, f.Bytes*8/1e6)
	}
}

// checkBatch rejects an assignment for another machine, batch nodes out of range or listed
// twice, and nodes without a boot server.
func (s *sim) checkBatch(a *mapping.Assignment) error {
	g := s.g
	if len(a.Server) != len(g.Nodes()) {
		return fmt.Errorf("assignment has %d nodes, machine %s has %d", len(a.Server), g.Name, len(g.Nodes()))
	}
	seen := make([]bool, len(g.Nodes()))
	for _, node := range s.batch {
		if node < 0 || node >= len(g.Nodes()) {
			return fmt.Errorf("batch node %d out of range (machine has %d nodes)", node, len(g.Nodes()))
		}
		if seen[node] {
			return fmt.Errorf("node %s is in the batch twice", g.VertexName(g.Nodes()[node]))
		}
		seen[node] = true
		if srv := a.Server[node]; srv < 0 || int(srv) >= len(g.Servers()) {
			return fmt.Errorf("node %s has no boot server", g.VertexName(g.Nodes()[node]))
		}
	}
	return nil
}

// setupRoutes routes every position from its server, counts the booting nodes on each channel
// and sets each position's RTT. A position served by a multicast tree takes the tree's channels,
// counted once per tree, and the pace of its farthest member.
func (s *sim) setupRoutes(r topology.Router, a *mapping.Assignment) error {
	g := s.g
	s.routeStart = make([]int32, s.positions+1)
	s.routeCh = make([]int32, 0, s.positions*6)
	s.rtt = make([]float64, s.positions)
	s.users = make([]int32, len(s.capacity))
	s.mcNode = make([]bool, s.positions)
	var mc mcRoutes
	if s.mc != nil {
		mc = mcRoutes{counted: make([]bool, len(g.Servers())), lat: make([]float64, len(g.Servers()))}
	}
	var buf []topology.Channel
	for i := 0; i < s.positions; i++ {
		var node int
		var srv int32
		if i < s.n {
			node = s.batch[i]
			srv = a.Server[node]
		} else {
			node, srv = s.fail.nodeServer(s, i)
		}
		var err error
		buf, err = r.Route(buf[:0], g.Servers()[srv], g.Nodes()[node])
		if err != nil {
			return err
		}
		if len(buf) == 0 {
			return fmt.Errorf("node %s: empty route from its server", g.VertexName(g.Nodes()[node]))
		}
		s.addRoute(i, srv, buf, &mc)
	}
	if s.fail != nil {
		s.fail.countUsers(s)
	}
	if s.mc != nil && s.cfg.RTTSeconds <= 0 {
		// A tree's members share its pace: that of its farthest member.
		for i, node := range s.batch {
			if s.mcNode[i] {
				s.rtt[i] = 2*mc.lat[a.Server[node]]*1e-6 + s.cfg.ServerSeconds
			}
		}
	}
	return nil
}

// addRoute appends position i's channels (route, from server srv) to routeCh, counts their
// users and sets its RTT.
func (s *sim) addRoute(i int, srv int32, route []topology.Channel, mc *mcRoutes) {
	lat := 0.0
	for _, c := range route {
		lat += s.g.Link(c.Link()).LatencyUS
	}
	if s.mc != nil && s.mc.Channels[srv] != nil {
		// A tree carries one copy per channel however many members it serves.
		s.mcNode[i] = true
		mc.lat[srv] = max(mc.lat[srv], lat)
		for _, c := range s.mc.Channels[srv] {
			s.routeCh = append(s.routeCh, int32(c))
			if !mc.counted[srv] {
				s.users[c]++
			}
		}
		mc.counted[srv] = true
	} else {
		for _, c := range route {
			s.routeCh = append(s.routeCh, int32(c))
			s.users[c]++
		}
	}
	if s.numCh < len(s.capacity) {
		c := int32(s.numCh) + srv // the server cap
		s.routeCh = append(s.routeCh, c)
		s.users[c]++
	}
	s.routeStart[i+1] = int32(len(s.routeCh))
	s.rtt[i] = 2*lat*1e-6 + s.cfg.ServerSeconds
	if s.cfg.RTTSeconds > 0 {
		s.rtt[i] = s.cfg.RTTSeconds
	}
}

// foldPrivate folds each position's private channels (one booting node) into its cap: the
// smallest capacity among them, ties to the label shown first.
func (s *sim) foldPrivate() {
	s.privCap = make([]float64, s.positions)
	s.privLabel = make([]uint16, s.positions)
	for i := 0; i < s.positions; i++ {
		pc, pl := math.Inf(1), uint16(0)
		for _, c := range s.routeCh[s.routeStart[i]:s.routeStart[i+1]] {
			if s.users[c] > 1 || s.mcNode[i] {
				continue
			}
			l := s.chLabel(c)
			if cp := s.capacity[c]; cp < pc || (cp == pc && s.rank[l] < s.rank[pl]) {
				pc, pl = cp, l
			}
		}
		s.privCap[i], s.privLabel[i] = pc, pl
	}
}

// internPaths gives every position its path and profile, interned. The path is its route's
// channels that take part in the sharing (in the incremental mode not those that can never be
// saturated, see flow_engine.go; all of a multicast tree's); the profile is the segment labels of
// all its route's channels, sorted (for the utilisation series).
func (s *sim) internPaths() {
	s.nodePath = make([]int32, s.positions)
	s.nodeProf = make([]int32, s.positions)
	shares := s.sharingChannels()
	pathIndex := map[string]int32{}
	mcPathIndex := map[string]int32{}
	profIndex := map[string]int32{}
	var key []int32
	var prof []uint16
	for i := 0; i < s.positions; i++ {
		key, prof = key[:0], prof[:0]
		for _, c := range s.routeCh[s.routeStart[i]:s.routeStart[i+1]] {
			prof = append(prof, s.chLabel(c))
			if s.mcNode[i] || (s.users[c] > 1 && shares[c]) {
				key = append(key, c)
			}
		}
		index := pathIndex
		if s.mcNode[i] {
			index = mcPathIndex
		}
		id, ok := index[int32Key(key)]
		if !ok {
			id = int32(len(s.pathCh))
			s.pathCh = append(s.pathCh, slices.Clone(key))
			s.pathMC = append(s.pathMC, s.mcNode[i])
			index[int32Key(s.pathCh[id])] = id
		}
		s.nodePath[i] = id
		slices.Sort(prof)
		pid, ok := profIndex[uint16Key(prof)]
		if !ok {
			pid = int32(len(s.profiles))
			s.profiles = append(s.profiles, slices.Clone(prof))
			profIndex[uint16Key(s.profiles[pid])] = pid
		}
		s.nodeProf[i] = pid
	}
}

// int32Key and uint16Key view a slice's bytes as a string for map lookups; the map keeps only
// keys built from slices that are never modified afterwards.
func int32Key(v []int32) string {
	if len(v) == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

func uint16Key(v []uint16) string {
	if len(v) == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(&v[0])), 2*len(v))
}

// limit returns the per-flow cap of batch position i fetching file f, and what sets it.
func (s *sim) limit(i int32, f int) (float64, uint16) {
	lim, label := s.privCap[i], s.privLabel[i]
	var pc float64
	var pl uint16
	switch s.cfg.Files[f].Protocol {
	case TFTP:
		pc, pl = float64(s.cfg.TFTPBlockSize*s.cfg.TFTPWindowSize)*8/s.rtt[i]/1e6, uint16(s.nSeg+1)
	case HTTP:
		pc, pl = s.cfg.HTTPWindowBytes*8/s.rtt[i]/1e6, uint16(s.nSeg+2)
	default:
		return lim, label
	}
	if s.rtt[i] > 0 && pc < lim {
		return pc, pl
	}
	return lim, label
}

// sharingChannels marks the channels that take part in the sharing: in the reference mode every
// channel, else those that could be saturated. A channel is not when all the flows that could ever
// cross it, every booting position at the largest cap of its files, fit in it: its constraint
// never binds, so leaving it out changes no rate (max-min fairness is unique, and the allocation
// without the constraint already meets it). Channels of multicast trees always take part.
func (s *sim) sharingChannels() []bool {
	shares := make([]bool, len(s.capacity))
	if s.cfg.reference {
		for c := range shares {
			shares[c] = true
		}
		return shares
	}
	demand := make([]float64, len(s.capacity))
	for i := 0; i < s.positions; i++ {
		route := s.routeCh[s.routeStart[i]:s.routeStart[i+1]]
		if s.mcNode[i] {
			for _, c := range route {
				shares[c] = true
			}
			continue
		}
		m := 0.0
		for f := range s.cfg.Files {
			if s.fileMb[f] > 0 {
				l, _ := s.limit(int32(i), f)
				m = max(m, l)
			}
		}
		for _, c := range route {
			if s.users[c] > 1 {
				demand[c] += m
			}
		}
	}
	for c := range shares {
		// A margin, so that rounding cannot hide a constraint that binds in a tie.
		shares[c] = shares[c] || !(demand[c]*(1+1e-9) < s.capacity[c])
	}
	return shares
}
