package fabricsim

import (
	"fmt"
	"math"
	"strings"

	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
)

// Delivery is how a node gets its root image.
type Delivery uint8

const (
	// ServerDelivery: every node pulls every byte from its boot server.
	ServerDelivery Delivery = iota
	// P2PDelivery: the kernel and agent from the boot server, the root image in pieces from
	// the peers of the node's board and from the server, the source of last resort.
	P2PDelivery
)

func (d Delivery) String() string {
	switch d {
	case ServerDelivery:
		return "server"
	case P2PDelivery:
		return "p2p"
	}
	return fmt.Sprintf("delivery(%d)", uint8(d))
}

// MarshalText writes the delivery's name.
func (d Delivery) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a delivery's name.
func (d *Delivery) UnmarshalText(b []byte) error {
	v, err := ParseDelivery(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDelivery parses server or p2p.
func ParseDelivery(s string) (Delivery, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "server":
		return ServerDelivery, nil
	case "p2p":
		return P2PDelivery, nil
	}
	return 0, fmt.Errorf("unknown delivery %q: want server or p2p", s)
}

// DefaultPieceBytes is the piece size of the peer path: 256 KiB, a common BitTorrent piece
// length for images of tens of megabytes.
const DefaultPieceBytes = 256 << 10

// RootFile is the index of the file of files that peer delivery carries: the largest one after
// the first (the first is the network boot program, which PXE firmware fetches by TFTP from the
// server), the last of equals. It is an error when there is no such file.
func RootFile(files []File) (int, error) {
	root := -1
	for i := 1; i < len(files); i++ {
		if root < 0 || files[i].Bytes >= files[root].Bytes {
			root = i
		}
	}
	if root < 0 || files[root].Bytes <= 0 {
		return 0, fmt.Errorf("peer delivery: no root image among the files after the network boot program")
	}
	return root, nil
}

// P2PInput is one batch's root image delivered by peers.
type P2PInput struct {
	Graph *topology.Graph
	// Router gives the server-to-node routes; nil: the graph's tree routes.
	Router topology.Router
	Assign *mapping.Assignment
	Batch  []int
	// RootBytes is the root image; PieceBytes its piece size (0: DefaultPieceBytes).
	RootBytes, PieceBytes float64
}

// P2PTerm is one segment's time in the root stage: the most loaded of its channels' bytes over
// capacity. The node links are split by direction ("N1 up": what nodes upload to peers).
type P2PTerm struct {
	Name       string  `json:"name"`
	Seconds    float64 `json:"seconds"`
	Bottleneck bool    `json:"bottleneck"`
}

// P2PAnalysis is the root stage of a peer delivery.
//
// The model (what it assumes): the peers of a node are ordered as mapping.PeerOrder orders them,
// its own board (leaf switch) first, and each boot server is the tracker and source of last
// resort of the nodes it boots. Two schedules, the shorter wins. Board: the server puts m copies
// of every piece into each board (each node gets m/k of the image from the server, striped), and
// each node relays what it got to the board's other nodes; m runs from 1 to the board's size,
// where there are no relays and it is server delivery, so peer delivery is never slower. Swarm
// (on tree routes): one copy from the server for all its nodes, exchanged across its boards and
// then within each board (evaluateSwarm). Every flow runs at its bytes over T, the constant-rate
// schedule of the fluid model (Kumar and Ross, "Peer-to-peer file distribution"), so T is the
// largest bytes over capacity of any channel; a relay lags the piece it forwards, and after T
// the last pieces are still relayed (PipelineSeconds). Not modelled: swarms across servers,
// protocol caps on peers, peers that fail or cheat.
type P2PAnalysis struct {
	// RootSeconds is the constant-rate schedule's time; PipelineSeconds the last pieces' relay
	// after it, at the node link's rate: k-1 pieces in the board schedule, B-1 + 2(k-1) in the
	// swarm schedule (B boards of at most k nodes).
	RootSeconds     float64 `json:"root_seconds"`
	PipelineSeconds float64 `json:"pipeline_seconds"`
	Seconds         float64 `json:"seconds"`
	// Schedule is "board" (the servers seed every board) or "swarm" (one copy per server,
	// exchanged across its boards; see evaluateSwarm), whichever is shorter.
	Schedule string `json:"schedule"`
	// CopiesPerBoard is how many copies of each piece the server sends into a board (at most the
	// board's booting nodes; 0 for the swarm schedule); ServerCopies is how many whole root images
	// the servers send.
	CopiesPerBoard int       `json:"copies_per_board"`
	ServerCopies   float64   `json:"server_copies"`
	Boards         int       `json:"boards"`
	Terms          []P2PTerm `json:"terms"`
	Bottlenecks    []string  `json:"bottlenecks"`
}

// p2pBoard is one leaf switch's booting nodes (batch positions) and its slowest node link.
type p2pBoard struct {
	leaf    topology.VertexID
	nodes   []int
	linkMin float64 // Mb/s, the slowest direction of the slowest node link
}

// p2pState is what AnalyzeP2P evaluates each m on.
type p2pState struct {
	g      *topology.Graph
	in     *P2PInput
	boards []p2pBoard
	board  []int                // batch position -> board
	routes [][]topology.Channel // batch position -> server-to-node route
	up     []topology.Channel   // batch position -> the node's upload channel
	load   []float64            // bytes by channel
	order  []topology.SegmentID // display order of the terms
	// tree is set when the routes are the graph's tree routes, on which the swarm schedule's
	// traffic between boards is counted (see evaluateSwarm).
	tree bool
}

// AnalyzeP2P predicts the root stage of a peer delivery (see P2PAnalysis).
func AnalyzeP2P(in P2PInput) (*P2PAnalysis, error) {
	res, _, err := analyzeP2P(&in)
	return res, err
}

// analyzeP2P is AnalyzeP2P with the state it was evaluated on (the boards).
func analyzeP2P(in *P2PInput) (*P2PAnalysis, *p2pState, error) {
	if !finite(in.RootBytes) || in.RootBytes <= 0 {
		return nil, nil, fmt.Errorf("peer delivery: root image must be a positive number of bytes, got %v", in.RootBytes)
	}
	if in.PieceBytes == 0 {
		in.PieceBytes = DefaultPieceBytes
	}
	if !finite(in.PieceBytes) || in.PieceBytes < 0 {
		return nil, nil, fmt.Errorf("peer delivery: piece size must be a positive number of bytes, got %v", in.PieceBytes)
	}
	if in.Graph == nil || in.Assign == nil {
		return nil, nil, fmt.Errorf("peer delivery: no machine or no assignment")
	}
	st, err := newP2PState(in)
	if err != nil {
		return nil, nil, err
	}
	if len(in.Batch) == 0 {
		return &P2PAnalysis{}, st, nil
	}
	var best *P2PAnalysis
	for _, m := range st.candidates() {
		res := st.evaluate(m)
		if best == nil || res.Seconds < best.Seconds {
			best = res
		}
	}
	if st.tree {
		if res := st.evaluateSwarm(); res.Seconds < best.Seconds {
			best = res
		}
	}
	return best, st, nil
}

// newP2PState routes the batch and groups it by leaf switch, boards in order of first node.
func newP2PState(in *P2PInput) (*p2pState, error) {
	g := in.Graph
	r := in.Router
	if r == nil {
		if r = g.TreeRouter(); r == nil {
			return nil, fmt.Errorf("peer delivery: %s is not a tree; a router is needed", g.Name)
		}
	}
	st := &p2pState{g: g, in: in, board: make([]int, len(in.Batch)), routes: make([][]topology.Channel, len(in.Batch)),
		up: make([]topology.Channel, len(in.Batch)), load: make([]float64, g.NumChannels())}
	byLeaf := map[topology.VertexID]int{}
	for p, n := range in.Batch {
		if n < 0 || n >= len(g.Nodes()) {
			return nil, fmt.Errorf("peer delivery: node %d out of range", n)
		}
		v := g.Nodes()[n]
		if n >= len(in.Assign.Server) || in.Assign.Server[n] < 0 {
			return nil, fmt.Errorf("peer delivery: node %s has no boot server", g.VertexName(v))
		}
		links := g.Links(v)
		if len(links) != 1 {
			return nil, fmt.Errorf("peer delivery: node %s has %d links, the model needs one", g.VertexName(v), len(links))
		}
		l := links[0]
		leaf := g.Other(l, v)
		b, ok := byLeaf[leaf]
		if !ok {
			b = len(st.boards)
			byLeaf[leaf] = b
			st.boards = append(st.boards, p2pBoard{leaf: leaf, linkMin: math.Inf(1)})
		}
		st.board[p] = b
		st.boards[b].nodes = append(st.boards[b].nodes, p)
		st.boards[b].linkMin = min(st.boards[b].linkMin, g.Link(l).CapacityMbps)
		st.up[p] = topology.ChannelOf(l, g.Link(l).A != v)
		route, err := r.Route(nil, g.Servers()[in.Assign.Server[n]], v)
		if err != nil {
			return nil, fmt.Errorf("peer delivery: %w", err)
		}
		st.routes[p] = route
	}
	st.order = SegmentOrder(g, r)
	st.tree = in.Router == nil
	return st, nil
}

// candidates are the copies per board to try: every count up to the largest board when that is
// at most 64, else 1..64 and then doubling (boards of hundreds of nodes behind one switch).
func (st *p2pState) candidates() []int {
	largest := 0
	for _, b := range st.boards {
		largest = max(largest, len(b.nodes))
	}
	var out []int
	for m := 1; ; {
		out = append(out, m)
		if m >= largest {
			return out
		}
		if m < 64 {
			m++
		} else {
			m = min(2*m, largest)
		}
	}
}

// evaluate is the schedule with m copies of each piece per board (see P2PAnalysis).
func (st *p2pState) evaluate(m int) *P2PAnalysis {
	clear(st.load)
	F, P := st.in.RootBytes, st.in.PieceBytes
	res := &P2PAnalysis{Schedule: "board", CopiesPerBoard: m, Boards: len(st.boards)}
	for _, b := range st.boards {
		k := len(b.nodes)
		mb := min(m, k)
		res.ServerCopies += float64(mb)
		fromServer, relayed := float64(mb)*F/float64(k), float64(k-mb)*F/float64(k)
		for _, p := range b.nodes {
			for _, c := range st.routes[p] {
				st.load[c] += fromServer
			}
			if relayed > 0 {
				st.load[st.up[p]] += relayed
				st.load[st.up[p]^1] += relayed // the node's download channel
			}
		}
		if mb < k {
			res.PipelineSeconds = max(res.PipelineSeconds, float64(k-1)*P*8/(b.linkMin*1e6))
		}
	}
	st.finish(res)
	return res
}

// finish sets res's terms, bottlenecks and times from the channel loads.
func (st *p2pState) finish(res *P2PAnalysis) {
	res.Terms = st.terms()
	for _, t := range res.Terms {
		res.RootSeconds = max(res.RootSeconds, t.Seconds)
	}
	for i, t := range res.Terms {
		// A relative tolerance, as the analytic model's, so that equal bounds count together.
		if t.Seconds >= res.RootSeconds*(1-1e-9) {
			res.Terms[i].Bottleneck = true
			res.Bottlenecks = append(res.Bottlenecks, t.Name)
		}
	}
	res.Seconds = res.RootSeconds + res.PipelineSeconds
}

// terms is each segment's largest bytes over capacity, in segment order, the node links split
// into "down" and "up".
func (st *p2pState) terms() []P2PTerm {
	g := st.g
	segs := len(g.Segments())
	secs := make([]float64, 3*segs) // by segment: other links, node down, node up
	for c, bytes := range st.load {
		if bytes == 0 {
			continue
		}
		ch := topology.Channel(c)
		lk := g.Link(ch.Link())
		slot := int(lk.Segment) * 3
		if from := g.ChannelFrom(ch); g.Kind(from) == topology.Node {
			slot += 2
		} else if g.Kind(g.ChannelTo(ch)) == topology.Node {
			slot++
		}
		secs[slot] = max(secs[slot], bytes*8/(g.ChannelCapacity(ch)*1e6))
	}
	var out []P2PTerm
	for _, s := range st.order {
		name := g.Segment(s)
		for i, suffix := range []string{"", " down", " up"} {
			if v := secs[int(s)*3+i]; v > 0 {
				out = append(out, P2PTerm{Name: name + suffix, Seconds: v})
			}
		}
	}
	return out
}

// Seeding says in words what the servers send in a's schedule: "1 copy per board", "3 copies
// per board" or "1 copy per server".
func (a *P2PAnalysis) Seeding() string {
	if a.Schedule == "swarm" {
		return "1 copy per server"
	}
	if a.CopiesPerBoard == 1 {
		return "1 copy per board"
	}
	return fmt.Sprintf("%d copies per board", a.CopiesPerBoard)
}
