package fabricsim

import (
	"math"

	"github.com/bootfabric/bootfabric/topology"
)

// p2pSwarmBoard is the nodes (batch positions) of one server's swarm behind one leaf switch.
type p2pSwarmBoard struct {
	leaf    topology.VertexID
	nodes   []int
	linkMin float64
}

// swarms groups the batch by boot server (each server is the tracker of the nodes it boots) and
// then by board, both in order of first node.
func (st *p2pState) swarms() [][]p2pSwarmBoard {
	var out [][]p2pSwarmBoard
	bySrv := map[int32]int{}
	at := map[[2]int]int{} // (swarm, board) -> index in the swarm
	for p, n := range st.in.Batch {
		srv := st.in.Assign.Server[n]
		sw, ok := bySrv[srv]
		if !ok {
			sw = len(out)
			bySrv[srv] = sw
			out = append(out, nil)
		}
		b := st.boards[st.board[p]]
		i, ok := at[[2]int{sw, st.board[p]}]
		if !ok {
			i = len(out[sw])
			at[[2]int{sw, st.board[p]}] = i
			out[sw] = append(out[sw], p2pSwarmBoard{leaf: b.leaf, linkMin: b.linkMin})
		}
		out[sw][i].nodes = append(out[sw][i].nodes, p)
	}
	return out
}

// evaluateSwarm is the schedule that follows mapping.PeerOrder beyond the board: each server
// sends one copy of the root image to its K nodes, striped (F/K each); each node sends its stripe
// into each of the swarm's other B-1 boards once (through the switches between them), and within
// a board each node relays what it holds (F/k of the image) to its k-1 board mates. A node's link
// carries F-F/K down from peers and (B-1)F/K + (k-1)F/k up. A subtree of the tree with B_in of
// the swarm's boards and K_in of its nodes takes B_in x F x (K-K_in)/K in through its uplink and
// sends (B-B_in) x F x K_in/K out. After T the last pieces lag two relays: B-1 + 2(k-1) pieces at
// the node link's rate.
func (st *p2pState) evaluateSwarm() *P2PAnalysis {
	clear(st.load)
	F, P := st.in.RootBytes, st.in.PieceBytes
	res := &P2PAnalysis{Schedule: "swarm", Boards: len(st.boards)}
	for _, sw := range st.swarms() {
		K, B := 0, len(sw)
		for _, b := range sw {
			K += len(b.nodes)
		}
		res.ServerCopies++
		kMax, linkMin := 0, math.Inf(1)
		for _, b := range sw {
			k := len(b.nodes)
			kMax, linkMin = max(kMax, k), min(linkMin, b.linkMin)
			for _, p := range b.nodes {
				for _, c := range st.routes[p] {
					st.load[c] += F / float64(K)
				}
				st.load[st.up[p]] += float64(B-1)*F/float64(K) + float64(k-1)*F/float64(k)
				st.load[st.up[p]^1] += F - F/float64(K)
			}
		}
		st.crossBoard(sw, K)
		if K > 1 {
			res.PipelineSeconds = max(res.PipelineSeconds, float64(B-1+2*(kMax-1))*P*8/(linkMin*1e6))
		}
	}
	st.finish(res)
	return res
}

// crossBoard adds the swarm's traffic between its boards to the switch links of the tree.
func (st *p2pState) crossBoard(sw []p2pSwarmBoard, K int) {
	g, F, B := st.g, st.in.RootBytes, len(sw)
	type inside struct{ boards, nodes int }
	below := map[topology.LinkID]inside{}
	var order []topology.LinkID
	for _, b := range sw {
		for v := b.leaf; ; {
			parent, l, ok := g.Parent(v)
			if !ok {
				break
			}
			in, seen := below[l]
			if !seen {
				order = append(order, l)
			}
			below[l] = inside{in.boards + 1, in.nodes + len(b.nodes)}
			v = parent
		}
	}
	for _, l := range order {
		in := below[l]
		// In a tree A is the child: A to B leaves the subtree.
		st.load[topology.ChannelOf(l, true)] += float64(in.boards) * F * float64(K-in.nodes) / float64(K)
		st.load[topology.ChannelOf(l, false)] += float64(B-in.boards) * F * float64(in.nodes) / float64(K)
	}
}
