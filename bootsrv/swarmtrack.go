package bootsrv

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/anacrolix/torrent/bencode"
	"github.com/anacrolix/torrent/metainfo"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap"
)

// swarmPeer is one node's entry in a torrent's swarm.
type swarmPeer struct {
	addr netip.AddrPort
	left int64
	seen time.Time
}

type peerTable map[string]swarmPeer

// announceBucket is a node's announce allowance: a token bucket of announceBurst tokens that
// refills one per announceEvery.
type announceBucket struct {
	tokens float64
	last   time.Time
}

func (b *announceBucket) take(now time.Time) bool {
	b.tokens = min(announceBurst, b.tokens+now.Sub(b.last).Seconds()/announceEvery.Seconds())
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// announce is a parsed tracker request (BEP 3); the peer's address is the request's source, never
// a parameter, so that a node cannot send others to a third host.
type announce struct {
	hash    metainfo.Hash
	node    string
	port    uint16
	left    int64
	event   string
	numWant int
}

// parseAnnounce checks a tracker request's parameters.
func parseAnnounce(r *http.Request) (announce, error) {
	q := r.URL.Query()
	var a announce
	ih := q.Get("info_hash")
	if len(ih) != len(a.hash) {
		return a, fmt.Errorf("info_hash: %d bytes, want %d", len(ih), len(a.hash))
	}
	copy(a.hash[:], ih)
	if a.node = q.Get("node"); a.node == "" {
		return a, fmt.Errorf("node: missing (the announce URL names the node: ?node=NAME&token=TOKEN)")
	}
	port, err := strconv.ParseUint(q.Get("port"), 10, 16)
	if err != nil || port == 0 {
		return a, fmt.Errorf("port: %q is no port 1-65535", q.Get("port"))
	}
	a.port = uint16(port)
	if a.left, err = strconv.ParseInt(q.Get("left"), 10, 64); err != nil || a.left < 0 {
		return a, fmt.Errorf("left: %q is no byte count", q.Get("left"))
	}
	switch a.event = q.Get("event"); a.event {
	case "", "started", "completed", "stopped", "empty":
	default:
		return a, fmt.Errorf("event: %q is none of started, completed, stopped", a.event)
	}
	if nw := q.Get("numwant"); nw != "" {
		if a.numWant, err = strconv.Atoi(nw); err != nil {
			return a, fmt.Errorf("numwant: %q is no number", nw)
		}
	}
	return a, nil
}

// announceAnswer is the tracker's answer: compact peers (BEP 23) and IPv6 peers (BEP 7).
type announceAnswer struct {
	FailureReason string `bencode:"failure reason,omitempty"`
	Interval      int    `bencode:"interval,omitempty"`
	MinInterval   int    `bencode:"min interval,omitempty"`
	Complete      int    `bencode:"complete"`
	Incomplete    int    `bencode:"incomplete"`
	Peers         []byte `bencode:"peers"`
	Peers6        []byte `bencode:"peers6,omitempty"`
}

// handleAnnounce answers a node's tracker request: only inventory nodes with their boot token, from
// their own address, at a bounded rate, about a torrent this server made.
func (s *Server) handleAnnounce(w http.ResponseWriter, r *http.Request) {
	a, err := parseAnnounce(r)
	if err != nil {
		s.swarm.m.announces.WithLabelValues("bad").Inc()
		writeBencode(w, http.StatusBadRequest, announceAnswer{FailureReason: "bad announce: " + err.Error()})
		return
	}
	st, ok := s.tracker.Node(a.node)
	if ok {
		err = CheckNode(a.node, s.nodeCheck(r, a.node, st))
	} else {
		err = fmt.Errorf("node %s is not in this server's inventory", a.node)
	}
	if err != nil {
		s.swarm.m.announces.WithLabelValues("refused").Inc()
		s.reqLog(r, a.node).Info("announce refused", zap.Error(err))
		writeBencode(w, http.StatusForbidden, announceAnswer{FailureReason: err.Error()})
		return
	}
	ans, result := s.swarm.answer(a, netip.AddrPortFrom(remoteAddr(r), a.port))
	s.swarm.m.announces.WithLabelValues(result).Inc()
	writeBencode(w, http.StatusOK, ans)
}

// answer records the announcing peer and returns the peers it should ask, closest in the fabric
// first (mapping.PeerOrder), at most maxAnnouncePeers and at most what the node wants.
func (sw *swarm) answer(a announce, addr netip.AddrPort) (announceAnswer, string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	now := sw.now()
	if _, ok := sw.byHash[a.hash]; !ok {
		return announceAnswer{FailureReason: "unknown torrent: fetch its metainfo from this server first"}, "unknown"
	}
	b := sw.buckets[a.node]
	if b == nil {
		b = &announceBucket{tokens: announceBurst, last: now}
		sw.buckets[a.node] = b
	}
	if !b.take(now) {
		return announceAnswer{FailureReason: fmt.Sprintf("node %s announces too often (at most %d at once, then one per %s)", a.node, announceBurst, announceEvery),
			Interval: int(announceInterval.Seconds())}, "limited"
	}
	table := sw.peers[a.hash]
	if table == nil {
		table = peerTable{}
		sw.peers[a.hash] = table
	}
	if a.event == "stopped" {
		delete(table, a.node)
	} else {
		table[a.node] = swarmPeer{addr: addr, left: a.left, seen: now}
	}
	ans := announceAnswer{Interval: int(announceInterval.Seconds()), MinInterval: int(announceEvery.Seconds()), Peers: []byte{}}
	for _, p := range sw.order(table, a.node, now, wantPeers(a.numWant)) {
		if ip := p.addr.Addr(); ip.Is4() {
			ans.Peers = append(append(ans.Peers, ip.AsSlice()...), byte(p.addr.Port()>>8), byte(p.addr.Port()))
		} else {
			ans.Peers6 = append(append(ans.Peers6, ip.AsSlice()...), byte(p.addr.Port()>>8), byte(p.addr.Port()))
		}
		sw.m.peersGiven.Inc()
	}
	for _, p := range table {
		if p.left == 0 {
			ans.Complete++
		} else {
			ans.Incomplete++
		}
	}
	return ans, "ok"
}

// wantPeers bounds a node's numwant by the server's ceiling (0 or less: the ceiling).
func wantPeers(n int) int {
	if n <= 0 || n > maxAnnouncePeers {
		return maxAnnouncePeers
	}
	return n
}

// order drops the table's stale entries and returns up to max peers other than node, in
// mapping.PeerOrder's order.
func (sw *swarm) order(table peerTable, node string, now time.Time, max int) []swarmPeer {
	from, ok := sw.vertex[node]
	if !ok {
		return nil
	}
	byVertex := make(map[topology.VertexID]swarmPeer, len(table))
	var vs []topology.VertexID
	for name, p := range table {
		if now.Sub(p.seen) > peerTTL {
			delete(table, name)
			continue
		}
		if v, ok := sw.vertex[name]; ok && name != node {
			byVertex[v] = p
			vs = append(vs, v)
		}
	}
	order := mapping.PeerOrder(sw.g, from, vs)
	out := make([]swarmPeer, 0, min(max, len(order)))
	for _, v := range order[:min(max, len(order))] {
		out = append(out, byVertex[v])
	}
	return out
}

// writeBencode writes a bencoded body; a failure reason goes with 200 for announces a client can
// act on, and with the given status otherwise (BEP 3 clients read the reason either way).
func writeBencode(w http.ResponseWriter, code int, v any) {
	data, err := bencode.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(code)
	w.Write(data)
}
