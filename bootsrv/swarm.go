package bootsrv

// Peer delivery of image files (BitTorrent): the boot server makes a metainfo per store blob, tracks
// which nodes hold which blob, and stays the source of last resort as the metainfo's web seed (its
// own /blobs/sha256/ route). Nodes fetch with `bootctl fetch` (anacrolix/torrent).

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/anacrolix/torrent/bencode"
	"github.com/anacrolix/torrent/metainfo"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/promreg"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/prometheus/client_golang/prometheus"
)

// Server-side ceilings of the tracker. A node of the boot network may be hostile: it gets at most
// maxAnnouncePeers peers per answer and announceBurst announces at once, then one per
// announceEvery; entries of nodes silent for peerTTL are dropped.
const (
	maxAnnouncePeers = 30
	announceBurst    = 6
	announceEvery    = 2 * time.Second
	announceInterval = 15 * time.Second
	peerTTL          = 3 * announceInterval
)

// swarm is the tracker's state: the metainfo of each blob asked for, and the peers of each.
type swarm struct {
	g      *topology.Graph
	vertex map[string]topology.VertexID // inventory node name -> its vertex in g
	now    func() time.Time
	m      swarmMetrics

	// metaMu serializes building metainfo (a blob is hashed once however many nodes ask) without
	// holding mu, which every announce takes.
	metaMu sync.Mutex
	meta   map[string][]byte // blob sha256 -> bencoded metainfo

	mu      sync.Mutex
	byHash  map[metainfo.Hash]string    // info hash -> blob sha256: only these are tracked
	peers   map[metainfo.Hash]peerTable // info hash -> node name -> peer
	buckets map[string]*announceBucket  // node name -> its announce allowance
}

type swarmMetrics struct {
	announces  *prometheus.CounterVec
	peersGiven prometheus.Counter
}

// newSwarm places the inventory's nodes on g, the machine the server loaded (a preset, a machine
// file, or the flat machine of an inventory without topology), for the peer order.
func newSwarm(g *topology.Graph, inv *bootconfig.Inventory, reg prometheus.Registerer, now func() time.Time) (*swarm, error) {
	sw := &swarm{g: g, vertex: make(map[string]topology.VertexID, len(inv.Nodes)), now: now,
		meta: map[string][]byte{}, byHash: map[metainfo.Hash]string{}, peers: map[metainfo.Hash]peerTable{},
		buckets: map[string]*announceBucket{}}
	for _, n := range inv.Nodes {
		if n.Index >= 0 && n.Index < len(g.Nodes()) {
			sw.vertex[n.Name] = g.Nodes()[n.Index]
		}
	}
	if sw.now == nil {
		sw.now = time.Now
	}
	sw.m = swarmMetrics{
		announces: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "swarm", Name: "announces_total",
			Help: "Tracker announces by result: ok, refused (no node or token), limited (too often), bad (malformed), unknown (no such torrent).",
		}, []string{"result"}),
		peersGiven: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "swarm", Name: "peers_given_total",
			Help: "Peers handed out in tracker answers.",
		}),
	}
	if err := errors.Join(promreg.Register(reg, &sw.m.announces), promreg.Register(reg, &sw.m.peersGiven)); err != nil {
		return nil, err
	}
	return sw, nil
}

// pieceLength picks a piece size for a blob: 256 KiB, doubled until the blob has at most 2048
// pieces, so that a piece is small next to a board's share of the file and the metainfo stays small.
func pieceLength(size int64) int64 {
	pl := int64(256 << 10)
	for size/pl >= 2048 && pl < 16<<20 {
		pl *= 2
	}
	return pl
}

// buildMetainfo makes the metainfo of a blob: its name the blob's sha256 (what the node checks the
// whole file against), SHA-1 piece hashes read from the blob, the tracker's announce URL and the
// blob's URL as the web seed (BEP 19).
func buildMetainfo(blob io.Reader, b images.Blob, baseURL string) ([]byte, metainfo.Hash, error) {
	info := metainfo.Info{Name: b.SHA256, Length: b.Size, PieceLength: pieceLength(b.Size)}
	var pieces bytes.Buffer
	buf := make([]byte, info.PieceLength)
	var read int64
	for read < b.Size {
		n, err := io.ReadFull(blob, buf[:min(info.PieceLength, b.Size-read)])
		if err != nil {
			return nil, metainfo.Hash{}, fmt.Errorf("blob %s at byte %d: %w", b.SHA256, read+int64(n), err)
		}
		sum := sha1.Sum(buf[:n])
		pieces.Write(sum[:])
		read += int64(n)
	}
	info.Pieces = pieces.Bytes()
	infoBytes, err := bencode.Marshal(info)
	if err != nil {
		return nil, metainfo.Hash{}, fmt.Errorf("blob %s: metainfo: %w", b.SHA256, err)
	}
	mi := metainfo.MetaInfo{InfoBytes: infoBytes, Announce: baseURL + announcePath,
		UrlList: []string{baseURL + "/blobs/sha256/" + b.SHA256}, CreatedBy: "bootfabric"}
	out, err := bencode.Marshal(mi)
	if err != nil {
		return nil, metainfo.Hash{}, fmt.Errorf("blob %s: metainfo: %w", b.SHA256, err)
	}
	return out, mi.HashInfoBytes(), nil
}

// announcePath is the tracker's route.
const announcePath = "/api/v1/announce"

// swarmRoutes registers the metainfo and tracker routes.
func (s *Server) swarmRoutes(route func(string, http.HandlerFunc)) {
	route("GET /torrent/{profile}/{file}", s.handleMetainfo)
	route("GET "+announcePath, s.handleAnnounce)
}

// handleMetainfo serves the metainfo of a profile's file, made once per blob and kept.
func (s *Server) handleMetainfo(w http.ResponseWriter, r *http.Request) {
	prof, err := s.images.Get(r.PathValue("profile"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	b, ok := prof.Files[r.PathValue("file")]
	if !ok {
		http.Error(w, fmt.Sprintf("profile %s has no file %q", prof.Name, r.PathValue("file")), http.StatusNotFound)
		return
	}
	data, err := s.swarm.metainfo(b, func() (io.ReadCloser, error) {
		path, err := s.images.BlobPathBySum(b.SHA256)
		if err != nil {
			return nil, err
		}
		return s.files.Blob(path)
	}, s.baseURL)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-bittorrent")
	w.Write(data)
}

// metainfo returns the cached metainfo of b, building it from open's reader the first time.
// metaMu is held while hashing, so that many nodes asking at once hash the blob once; announces,
// under mu, go on meanwhile.
func (sw *swarm) metainfo(b images.Blob, open func() (io.ReadCloser, error), baseURL string) ([]byte, error) {
	sw.metaMu.Lock()
	defer sw.metaMu.Unlock()
	if data, ok := sw.meta[b.SHA256]; ok {
		return data, nil
	}
	f, err := open()
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", b.SHA256, err)
	}
	defer f.Close()
	data, ih, err := buildMetainfo(f, b, baseURL)
	if err != nil {
		return nil, err
	}
	sw.meta[b.SHA256] = data
	sw.mu.Lock()
	sw.byHash[ih] = b.SHA256
	sw.mu.Unlock()
	return data, nil
}
