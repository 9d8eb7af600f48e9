package fabricsim

import (
	"math"
	"slices"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// simAccount is what a simulation counts for its result: time under each label per node, the
// nodes done, the megabytes fetched, the throughput series and the statistics.
type simAccount struct {
	// Per batch node: seconds under each label while it boots (its slot in timeSlot, into
	// timePool), then the label that bounded it longest and for how long.
	timeSlot      []int32
	timePool      []float64
	freeTimeSlots []int32
	nodeBest      []int16
	nodeBound     []float64
	doneN         int
	mbDone        float64 // Mb of the files finished, over all nodes: for Progress
	lastMb        float64
	stats         FlowStats
	touchedG      []int32   // groups whose throughput is out of thr
	thr           []float64 // throughput by segment now, kept up to date by the groups' changes
	recounted     int
	series        []float64 // flattened: time, then nSeg throughputs
	peak          []float64
	segCap        []float64
	segChans      []int
	mcBytes       []float64 // bytes the multicast trees' classes moved, by channel
}

// progress is what FlowConfig.Progress is told at now: the finished files' megabits plus what
// the active flows have fetched of theirs (never less than last time: the groups' sums round).
func (s *sim) progress(now float64) Progress {
	mb := s.mbDone
	for _, gi := range s.activeG {
		g := &s.groups[gi]
		mb += g.members*g.progressAt(now) - g.joined
	}
	mb = max(mb, s.lastMb)
	s.lastMb = mb
	total := 0.0
	for _, f := range s.fileMb {
		total += f
	}
	return Progress{Done: s.doneN, Nodes: s.n, Seconds: now, Mb: mb, TotalMb: total * float64(s.n)}
}

// record appends a point of the utilisation series: the throughput of each segment from now on.
// The throughputs are running totals that each group's change updates; rounding gathers in them,
// so they are recomputed from the groups at every event when there are few, and otherwise once
// per as many events as there are active groups (which keeps the cost per event constant).
func (s *sim) record(now float64, end bool) {
	if !end {
		if s.recounted++; len(s.activeG) <= recountSmall || s.recounted >= len(s.activeG) {
			s.recount()
			s.recounted = 0
		}
	}
	base := len(s.series)
	s.series = append(s.series, now)
	s.series = append(s.series, make([]float64, s.nSeg)...)
	thr := s.series[base+1:]
	if !end {
		for l, v := range s.thr {
			thr[l] = max(v, 0)
		}
	}
	for l, v := range thr {
		s.peak[l] = max(s.peak[l], v)
	}
	// Several events at one time (a start right after a completion) keep only the last point.
	if prev := base - (s.nSeg + 1); prev >= 0 && s.series[prev] == now {
		copy(s.series[prev:], s.series[base:])
		s.series = s.series[:base]
	}
}

// result gathers the run's outcome: every node's, the distributions, the bytes on each segment
// and the busiest links, the bottleneck attribution and the utilisation series.
func (s *sim) result(a *mapping.Assignment) *FlowResult {
	cfg := s.cfg
	res := &FlowResult{Nodes: s.n, Files: slices.Clone(cfg.Files), Stats: s.stats}
	if res.Files == nil {
		res.Files = []File{}
	}
	res.Stats.Paths = len(s.pathCh)
	res.Stats.Groups = len(s.groups)
	boundCount := s.nodeResults(a, res)
	bytes := s.channelBytes()
	segBytes := make([]float64, s.nSeg)
	for c := 0; c < s.numCh; c++ {
		if s.users[c] > 0 {
			segBytes[s.chLabel(int32(c))] += bytes[c]
		}
	}
	res.TopLinks = s.topLinks(bytes)
	shown := s.segmentUsage(res, segBytes, boundCount)
	res.Bottlenecks = []BottleneckShare{}
	for _, l := range s.byRank(s.nLabels) {
		if boundCount[l] > 0 {
			res.Bottlenecks = append(res.Bottlenecks, BottleneckShare{Limit: s.labels[l], Nodes: boundCount[l]})
		}
	}
	res.Utilisation = s.seriesResult(shown)
	if s.fail != nil {
		res.Failure = s.fail.summary(s)
	}
	return res
}

// nodeResults fills every node's outcome, the servers used and the completion and duration
// distributions, and returns how many nodes each label bounded.
func (s *sim) nodeResults(a *mapping.Assignment, res *FlowResult) []int {
	g, cfg := s.g, s.cfg
	serverName := make([]string, len(g.Servers()))
	usedServer := make([]bool, len(g.Servers()))
	boundCount := make([]int, s.nLabels)
	res.NodeResults = make([]NodeResult, s.n)
	comp := make([]float64, s.n)
	dur := make([]float64, s.n)
	var buf []int32
	for i, node := range s.batch {
		buf = s.incarnations(i, buf)
		ps := buf
		last := int(ps[len(ps)-1])
		var srv int32
		for _, p := range ps {
			srv = a.Server[node]
			if s.fail != nil {
				_, srv = s.fail.nodeServer(s, int(p))
			}
			if serverName[srv] == "" {
				serverName[srv] = g.VertexName(g.Servers()[srv])
			}
			if !usedServer[srv] {
				usedServer[srv] = true
				res.ServersUsed++
			}
		}
		arr := 0.0
		switch {
		case cfg.Arrivals != nil:
			arr = cfg.Arrivals[i]
		case s.adm != nil:
			arr = s.adm.at[i]
		}
		nr := NodeResult{Name: g.VertexName(g.Nodes()[node]), Server: serverName[srv], ArrivalSeconds: arr, DoneSeconds: s.done[last]}
		if best := s.nodeBest[i]; best >= 0 {
			nr.Bottleneck, nr.BoundSeconds = s.labels[best], s.nodeBound[i]
			boundCount[best]++
		}
		res.NodeResults[i] = nr
		comp[i], dur[i] = s.done[last], s.done[last]-arr
	}
	res.Completion = distribution(comp)
	res.Duration = distribution(dur)
	res.BatchSeconds = res.Completion.Max
	return boundCount
}

// incarnations returns the positions of batch node i's boot in buf: its own, or with failures
// each incarnation that started, the last one finishing.
func (s *sim) incarnations(i int, buf []int32) []int32 {
	if s.fail != nil {
		return s.fail.used(buf[:0], i)
	}
	return append(buf[:0], int32(i))
}

// channelBytes returns the bytes each graph channel carried: every node's whole boot crosses
// every channel of its route.
func (s *sim) channelBytes() []float64 {
	var total float64
	for _, f := range s.cfg.Files {
		total += f.Bytes
	}
	bytes := make([]float64, s.numCh)
	// A tree's class moves each of its files once over every channel of the tree.
	copy(bytes, s.mcBytes)
	for i := 0; i < s.positions; i++ {
		if s.mcNode[i] {
			continue
		}
		moved := total
		if s.fail != nil {
			// A restarted node's lost attempt carried what it had fetched when its server failed.
			if moved = s.fail.movedBytes(i, total); moved == 0 {
				continue
			}
		}
		for _, c := range s.routeCh[s.routeStart[i]:s.routeStart[i+1]] {
			if int(c) < s.numCh {
				bytes[c] += moved
			}
		}
	}
	return bytes
}

// topLinks returns the cfg.TopLinks (default 10, negative: none) busiest used channels by bytes,
// ties to the lower channel.
func (s *sim) topLinks(bytes []float64) []LinkUsage {
	ntop := s.cfg.TopLinks
	if ntop == 0 {
		ntop = 10
	}
	var top []int32
	for c := 0; c < s.numCh && ntop > 0; c++ {
		if s.users[c] == 0 || (len(top) == ntop && bytes[c] <= bytes[top[ntop-1]]) {
			continue
		}
		j, _ := slices.BinarySearchFunc(top, int32(c), func(x, c int32) int {
			switch {
			case bytes[x] > bytes[c]:
				return -1
			case bytes[x] < bytes[c]:
				return 1
			}
			return int(x - c)
		})
		top = slices.Insert(top, j, int32(c))
		if len(top) > ntop {
			top = top[:ntop]
		}
	}
	g := s.g
	out := []LinkUsage{}
	for _, c := range top {
		ch := topology.Channel(c)
		out = append(out, LinkUsage{From: g.VertexName(g.ChannelFrom(ch)), To: g.VertexName(g.ChannelTo(ch)),
			Segment: s.labels[s.chLabel(c)], CapacityMbps: s.capacity[c], Bytes: bytes[c]})
	}
	return out
}

// segmentUsage fills the usage of every segment that has used channels, in display order, and
// returns those segments.
func (s *sim) segmentUsage(res *FlowResult, segBytes []float64, boundCount []int) []int {
	var shown []int
	for _, seg := range s.byRank(s.nSeg) {
		if s.segChans[seg] == 0 {
			continue
		}
		shown = append(shown, seg)
		u := SegmentUsage{Name: s.labels[seg], Channels: s.segChans[seg], CapacityMbps: s.segCap[seg], Bytes: segBytes[seg],
			PeakMbps: s.peak[seg], BottleneckNodes: boundCount[seg]}
		u.PeakUtilisation = u.PeakMbps / u.CapacityMbps
		res.Segments = append(res.Segments, u)
	}
	return shown
}

// byRank returns the labels 0..n-1 in display order.
func (s *sim) byRank(n int) []int {
	order := make([]int, n)
	for l := range order {
		order[l] = l
	}
	slices.SortFunc(order, func(a, b int) int { return s.rank[a] - s.rank[b] })
	return order
}

// seriesResult turns the recorded steps into the per-segment series of the segments shown.
func (s *sim) seriesResult(shown []int) Series {
	w := s.nSeg + 1
	np := len(s.series) / w
	t := make([]float64, np)
	vals := make([][]float64, s.nSeg)
	for l := range vals {
		vals[l] = make([]float64, np)
	}
	for p := 0; p < np; p++ {
		t[p] = s.series[p*w]
		for l := 0; l < s.nSeg; l++ {
			vals[l][p] = s.series[p*w+1+l]
		}
	}
	maxS := s.cfg.MaxSamples
	if maxS <= 0 {
		maxS = 400
	}
	if np > maxS+1 && t[np-1] > t[0] {
		t, vals = binSeries(t, vals, maxS)
	}
	out := Series{TimeSeconds: t, Segments: []SegmentSeries{}}
	for _, l := range shown {
		util := make([]float64, len(t))
		for i, v := range vals[l] {
			util[i] = v / s.segCap[l]
		}
		out.Segments = append(out.Segments, SegmentSeries{Name: s.labels[l], Mbps: vals[l], Utilisation: util})
	}
	return out
}

// gridUp moves an event at t up to the time-step grid of step q. Event times are sums and
// quotients of floating-point numbers, so an event that is on the grid by arithmetic is often a
// hair past it (0.2 + 0.4 = 0.6000000000000001); a plain ceil would then push it a whole step late
// (0.61 s with q = 0.01). So t/q within eventTolerance (relative) of a whole number counts as on the
// grid, and the event keeps its own time: never earlier than t, as every event of the step must
// still be due when it is processed.
func gridUp(t, q float64) float64 {
	k := t / q
	if r := math.Round(k); math.Abs(k-r) <= eventTolerance*max(1, math.Abs(r)) {
		k = r
	}
	return max(t, math.Ceil(k)*q)
}
