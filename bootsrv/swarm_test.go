package bootsrv

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anacrolix/torrent/bencode"
	"github.com/anacrolix/torrent/metainfo"
	"go.uber.org/zap/zaptest"
)

// swarmServer is the fixture's server (node00 at 127.0.0.1, nodeNN at 10.0.0.(10+NN) on the mini
// machine: index = supernode*16 + board*4 + node) with a clock the test moves.
func swarmServer(t *testing.T) (*Server, *fixture, *time.Time) {
	t.Helper()
	f := newFixture(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := New(f.config(t, nil), Options{Logger: zaptest.NewLogger(t), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, f, &now
}

// swarmTorrent is swarmServer with the kernel's metainfo fetched, so that announces about it count.
func swarmTorrent(t *testing.T) (*Server, http.Handler, metainfo.Hash, *time.Time) {
	t.Helper()
	s, _, now := swarmServer(t)
	h := s.Handler()
	mi, _ := fetchMetainfo(t, h)
	return s, h, mi.HashInfoBytes(), now
}

func fetchMetainfo(t *testing.T, h http.Handler) (*metainfo.MetaInfo, metainfo.Info) {
	t.Helper()
	w := do(t, h, "GET", "/torrent/default/vmlinuz", "", "")
	if w.Code != http.StatusOK {
		t.Fatalf("metainfo: %d %s", w.Code, w.Body)
	}
	mi, err := metainfo.Load(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	info, err := mi.UnmarshalInfo()
	if err != nil {
		t.Fatal(err)
	}
	return mi, info
}

// TestMetainfo checks a file's metainfo against the file: its name the blob's sha256, every piece
// hash, the tracker and the web seed at this server.
func TestMetainfo(t *testing.T) {
	s, f, _ := swarmServer(t)
	h := s.Handler()
	mi, info := fetchMetainfo(t, h)
	sum := sha256.Sum256(f.kernel)
	if info.Name != hex.EncodeToString(sum[:]) || info.Length != int64(len(f.kernel)) {
		t.Fatalf("info: name %s length %d, want %x and %d", info.Name, info.Length, sum, len(f.kernel))
	}
	for i := 0; i < info.NumPieces(); i++ {
		from := int64(i) * info.PieceLength
		h := sha1.Sum(f.kernel[from:min(from+info.PieceLength, int64(len(f.kernel)))])
		if !bytes.Equal(info.Piece(i).V1Hash().Value.Bytes(), h[:]) {
			t.Fatalf("piece %d: hash differs from the file's", i)
		}
	}
	if !strings.HasSuffix(mi.Announce, announcePath) || len(mi.UrlList) != 1 || !strings.HasSuffix(mi.UrlList[0], "/blobs/sha256/"+info.Name) {
		t.Errorf("announce %q, url-list %q", mi.Announce, mi.UrlList)
	}
	if w := do(t, h, "GET", mi.UrlList[0][strings.Index(mi.UrlList[0], "/blobs/"):], "", ""); !bytes.Equal(w.Body.Bytes(), f.kernel) {
		t.Errorf("the web seed serves %d bytes that are not the file", w.Body.Len())
	}
	again := do(t, h, "GET", "/torrent/default/vmlinuz", "", "")
	if mi2, _ := metainfo.Load(again.Body); mi2.HashInfoBytes() != mi.HashInfoBytes() {
		t.Errorf("a second fetch gave another info hash")
	}
	for _, target := range []string{"/torrent/nosuch/vmlinuz", "/torrent/default/nosuch"} {
		if w := do(t, h, "GET", target, "", ""); w.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", target, w.Code)
		}
	}
}

func nodeAddr(i int) string {
	if i == 0 {
		return "127.0.0.1"
	}
	return fmt.Sprintf("10.0.0.%d", 10+i)
}

// announceURL is node i's announce with its token; edit changes the query before it is sent.
func announceURL(s *Server, ih metainfo.Hash, i int, edit func(url.Values)) string {
	name := fmt.Sprintf("node%02d", i)
	q := url.Values{"info_hash": {string(ih[:])}, "peer_id": {"-BF0001-abcdefghijkl"}, "port": {fmt.Sprint(6000 + i)},
		"uploaded": {"0"}, "downloaded": {"0"}, "left": {"100"}, "compact": {"1"}, "node": {name}, "token": {nodeToken(s, name)}}
	if edit != nil {
		edit(q)
	}
	return announcePath + "?" + q.Encode()
}

func decodeAnswer(t *testing.T, body []byte) announceAnswer {
	t.Helper()
	var a announceAnswer
	if err := bencode.Unmarshal(body, &a); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	return a
}

// TestAnnounceRefused: the tracker answers only inventory nodes with their token, from their own
// address, about a torrent it made; everything else gets one reason and no peers.
func TestAnnounceRefused(t *testing.T) {
	s, h, ih, _ := swarmTorrent(t)
	for _, tc := range []struct {
		name   string
		target string
		from   string
		code   int
		reason string
	}{
		{"short info hash", announceURL(s, ih, 1, func(q url.Values) { q.Set("info_hash", "abc") }), nodeAddr(1), 400, "info_hash"},
		{"no node", announceURL(s, ih, 1, func(q url.Values) { q.Del("node") }), nodeAddr(1), 400, "node: missing"},
		{"bad port", announceURL(s, ih, 1, func(q url.Values) { q.Set("port", "0") }), nodeAddr(1), 400, "port"},
		{"bad left", announceURL(s, ih, 1, func(q url.Values) { q.Set("left", "-1") }), nodeAddr(1), 400, "left"},
		{"bad event", announceURL(s, ih, 1, func(q url.Values) { q.Set("event", "paused") }), nodeAddr(1), 400, "event"},
		{"unknown node", announceURL(s, ih, 1, func(q url.Values) { q.Set("node", "intruder") }), nodeAddr(1), 403, "not in this server's inventory"},
		{"wrong token", announceURL(s, ih, 1, func(q url.Values) { q.Set("token", strings.Repeat("0", 32)) }), nodeAddr(1), 403, "token"},
		{"no token", announceURL(s, ih, 1, func(q url.Values) { q.Del("token") }), nodeAddr(1), 403, "token"},
		{"another host", announceURL(s, ih, 1, nil), "10.0.0.99", 403, "not from the node's address"},
		{"unknown torrent", announceURL(s, metainfo.Hash{1, 2, 3}, 1, nil), nodeAddr(1), 200, "unknown torrent"},
	} {
		w := do(t, h, "GET", tc.target, "", tc.from+":5555")
		a := decodeAnswer(t, w.Body.Bytes())
		if w.Code != tc.code || !strings.Contains(a.FailureReason, tc.reason) || len(a.Peers) != 0 {
			t.Errorf("%s: %d %q, %d peer bytes; want %d and a reason with %q", tc.name, w.Code, a.FailureReason, len(a.Peers), tc.code, tc.reason)
		}
	}
}

// compactPeers splits a BEP 23 peer string into addresses.
func compactPeers(t *testing.T, b []byte) []netip.AddrPort {
	t.Helper()
	if len(b)%6 != 0 {
		t.Fatalf("compact peers: %d bytes", len(b))
	}
	var out []netip.AddrPort
	for i := 0; i < len(b); i += 6 {
		ip, _ := netip.AddrFromSlice(b[i : i+4])
		out = append(out, netip.AddrPortFrom(ip, uint16(b[i+4])<<8|uint16(b[i+5])))
	}
	return out
}

// TestAnnounceOrder: peers come closest first (board, supernode, the rest), at the addresses and
// ports the nodes announced from, capped by numwant; a stopped peer leaves the swarm.
func TestAnnounceOrder(t *testing.T) {
	s, h, ih, now := swarmTorrent(t)
	announce := func(i int, edit func(url.Values)) announceAnswer {
		t.Helper()
		w := do(t, h, "GET", announceURL(s, ih, i, edit), "", nodeAddr(i)+":40000")
		a := decodeAnswer(t, w.Body.Bytes())
		if w.Code != http.StatusOK || a.FailureReason != "" {
			t.Fatalf("node%02d: %d %s", i, w.Code, a.FailureReason)
		}
		return a
	}
	// node00 is s0-b0-n0: its board is node01-03, its supernode node04-15, the rest node16-31.
	for _, i := range []int{31, 17, 5, 2, 9, 1, 16, 3} {
		announce(i, nil)
	}
	tier := func(p netip.AddrPort) int {
		i := int(p.Addr().As4()[3]) - 10
		if p.Port() != uint16(6000+i) {
			t.Errorf("peer %s: port is not node%02d's", p, i)
		}
		switch {
		case i/16 != 0:
			return 2 // the other supernode
		case i/4 != 0:
			return 1 // node00's supernode
		}
		return 0 // node00's board
	}
	a := announce(0, nil)
	peers := compactPeers(t, a.Peers)
	tiers := make([]int, len(peers))
	for k, p := range peers {
		tiers[k] = tier(p)
	}
	if len(peers) != 8 || !slices.IsSorted(tiers) || tiers[0] != 0 || tiers[2] != 0 || tiers[3] != 1 || tiers[5] < 2 {
		t.Errorf("peers %v in tiers %v, want node01-03 first, then node05 and node09, then the other supernode", peers, tiers)
	}
	if a.Complete != 0 || a.Incomplete != 9 {
		t.Errorf("complete %d, incomplete %d; want 0 and 9", a.Complete, a.Incomplete)
	}
	if got := compactPeers(t, announce(0, func(q url.Values) { q.Set("numwant", "2") }).Peers); !slices.Equal(got, peers[:2]) {
		t.Errorf("numwant 2: %v, want %v", got, peers[:2])
	}
	announce(1, func(q url.Values) { q.Set("event", "stopped") })
	*now = now.Add(announceInterval)
	stopped := netip.MustParseAddrPort(nodeAddr(1) + ":6001")
	if got := compactPeers(t, announce(0, nil).Peers); len(got) != 7 || slices.Contains(got, stopped) {
		t.Errorf("after node01 stopped: %v", got)
	}
	*now = now.Add(peerTTL + time.Second)
	if got := compactPeers(t, announce(0, nil).Peers); len(got) != 0 {
		t.Errorf("after every other peer went silent for %s: %v, want none", peerTTL, got)
	}
}

// TestAnnounceRate: a node gets announceBurst answers at once, then one per announceEvery.
func TestAnnounceRate(t *testing.T) {
	s, h, ih, now := swarmTorrent(t)
	reason := func() string {
		w := do(t, h, "GET", announceURL(s, ih, 2, nil), "", nodeAddr(2)+":1")
		return decodeAnswer(t, w.Body.Bytes()).FailureReason
	}
	for k := range announceBurst {
		if r := reason(); r != "" {
			t.Fatalf("announce %d of the burst: %s", k+1, r)
		}
	}
	if r := reason(); !strings.Contains(r, "too often") {
		t.Fatalf("announce past the burst: %q, want too often", r)
	}
	*now = now.Add(announceEvery)
	if r := reason(); r != "" {
		t.Errorf("announce %s later: %s", announceEvery, r)
	}
	if r := reason(); !strings.Contains(r, "too often") {
		t.Errorf("second announce %s later: %q, want too often", announceEvery, r)
	}
	// Another node has its own allowance.
	w := do(t, h, "GET", announceURL(s, ih, 3, nil), "", nodeAddr(3)+":1")
	if r := decodeAnswer(t, w.Body.Bytes()).FailureReason; r != "" {
		t.Errorf("node03: %s", r)
	}
}
