// Package delivery fetches a boot server's image files through the fabric: from the node's peers
// (BitTorrent, anacrolix/torrent) and from the server, the web seed of last resort (BEP 19), with
// the server as tracker. The peers come from the server's tracker only (no DHT, no peer exchange),
// so that the server's topology-aware order (mapping.PeerOrder) decides who fetches from whom.
//
// Every piece is checked against its SHA-1 in the metainfo before it counts (the library drops a
// piece that fails and bans the peers that sent it), and the whole file against the sha256 the
// metainfo names it by before it is written where the caller asked: a file that does not match is
// never written there.
package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/anacrolix/torrent"
	"github.com/anacrolix/torrent/metainfo"
	"github.com/anacrolix/torrent/storage"
	"golang.org/x/time/rate"
)

// Options are what one fetch is told.
type Options struct {
	// Server is the boot server's base URL (http://10.0.0.1:8080).
	Server string
	// Profile and File name the file in the server's image store.
	Profile, File string
	// Node and Token identify the node to the tracker (the token of its boot attempt).
	Node, Token string
	// Out is where the verified file goes; its directory also holds the pieces while they come.
	Out string
	// Bind is the local address to fetch and serve from ("" any); Port the peer port (0 any free).
	Bind string
	Port int
	// SeedFor is how long to keep serving the file to peers once it is complete.
	SeedFor time.Duration
	// UploadRate caps what this node sends to peers, bytes per second (0: no cap).
	UploadRate float64
	// ServerOnly fetches from the web seed alone, no tracker and no peers: the baseline.
	ServerOnly bool
	// CorruptUploads makes this node serve wrong bytes to its peers while it seeds: only for tests
	// of the other nodes' defences.
	CorruptUploads bool
	// Log takes the peer library's log; nil discards it.
	Log *slog.Logger
	// Dial opens the connections to the server (metainfo, tracker, web seed); nil dials from Bind.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Verified, when set, is called once Out is written and verified, before the seed: a node's
	// agent boots the file while this fetch goes on serving it.
	Verified func(Result)
}

// Result is what a fetch did.
type Result struct {
	Node   string `json:"node,omitempty"`
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Pieces int    `json:"pieces"`
	// Seconds is the time from the first request to the verified file.
	Seconds float64 `json:"seconds"`
	// FromPeers and FromServer are the useful bytes read from peers and from the web seed.
	FromPeers  int64 `json:"from_peers"`
	FromServer int64 `json:"from_server"`
	// Uploaded is what this node sent its peers, seeding included.
	Uploaded int64 `json:"uploaded"`
	// BadPieces counts pieces that failed their hash; BannedPeers the peers banned for them.
	BadPieces   int64    `json:"bad_pieces"`
	BannedPeers []string `json:"banned_peers,omitempty"`
	SeededFor   float64  `json:"seeded_seconds"`
}

var sha256Name = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Fetch fetches one file and keeps seeding it for SeedFor (or until ctx ends, which ends a seed
// without error but a download with one).
func Fetch(ctx context.Context, o Options) (Result, error) {
	start := time.Now()
	mi, info, err := getMetainfo(ctx, o)
	if err != nil {
		return Result{}, err
	}
	announce := mi.Announce
	if o.CorruptUploads {
		mi.Announce = "" // a hostile node gets its copy from the server and tells nobody
	}
	res := Result{Node: o.Node, File: o.File, SHA256: info.Name, Size: info.Length, Pieces: info.NumPieces()}
	stage, err := os.MkdirTemp(filepath.Dir(o.Out), ".fetch-")
	if err != nil {
		return res, fmt.Errorf("fetch %s: staging directory: %w", o.File, err)
	}
	defer os.RemoveAll(stage)
	cl, err := torrent.NewClient(clientConfig(o, stage))
	if err != nil {
		return res, fmt.Errorf("fetch %s: peer client: %w", o.File, err)
	}
	defer cl.Close()
	t, err := cl.AddTorrent(mi)
	if err != nil {
		return res, fmt.Errorf("fetch %s: %w", o.File, err)
	}
	t.DownloadAll()
	select {
	case <-t.Complete().On():
	case <-ctx.Done():
		return res, fmt.Errorf("fetch %s: %d of %d bytes missing: %w", o.File, t.BytesMissing(), info.Length, ctx.Err())
	}
	if err := writeVerified(t, o.Out, info.Name); err != nil {
		return res, err
	}
	res.Seconds = time.Since(start).Seconds()
	if o.Verified != nil {
		res.stats(cl, t)
		o.Verified(res)
	}
	seedStart := time.Now()
	if err := seed(ctx, o, t, stage, announce); err != nil {
		return res, err
	}
	res.SeededFor = time.Since(seedStart).Seconds()
	res.stats(cl, t)
	return res, nil
}

// stats fills in where the bytes came from and went, as the torrent's counters say now.
func (res *Result) stats(cl *torrent.Client, t *torrent.Torrent) {
	st := t.Stats()
	res.FromPeers, res.FromServer = st.PeerConns.BytesReadUsefulData.Int64(), st.WebSeeds.BytesReadUsefulData.Int64()
	res.Uploaded, res.BadPieces = st.BytesWrittenData.Int64(), st.PiecesDirtiedBad.Int64()
	res.BannedPeers = cl.BadPeerIPs()
}

// getMetainfo fetches the file's metainfo and points its tracker at this node's announce URL.
func getMetainfo(ctx context.Context, o Options) (*metainfo.MetaInfo, metainfo.Info, error) {
	u := fmt.Sprintf("%s/torrent/%s/%s", o.Server, url.PathEscape(o.Profile), url.PathEscape(o.File))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, metainfo.Info{}, fmt.Errorf("metainfo %s: %w", u, err)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: o.dial()}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, metainfo.Info{}, fmt.Errorf("metainfo: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, metainfo.Info{}, fmt.Errorf("metainfo %s: %s: %s", u, resp.Status, msg)
	}
	mi, err := metainfo.Load(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, metainfo.Info{}, fmt.Errorf("metainfo %s: %w", u, err)
	}
	info, err := mi.UnmarshalInfo()
	if err != nil {
		return nil, metainfo.Info{}, fmt.Errorf("metainfo %s: %w", u, err)
	}
	if !sha256Name.MatchString(info.Name) || info.Length <= 0 || len(info.Files) != 0 {
		return nil, metainfo.Info{}, fmt.Errorf("metainfo %s: not one file named by its sha256 (name %q, length %d)", u, info.Name, info.Length)
	}
	mi.AnnounceList, mi.Nodes = nil, nil
	if o.ServerOnly {
		mi.Announce = ""
	} else {
		mi.Announce += "?" + url.Values{"node": {o.Node}, "token": {o.Token}}.Encode()
	}
	return mi, info, nil
}

// dial returns Dial, or a dialer from Bind.
func (o Options) dial() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if o.Dial != nil {
		return o.Dial
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	if o.Bind != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(o.Bind)}
	}
	return d.DialContext
}

// clientConfig sets the peer client up: peers from the tracker only, TCP only, uploads capped.
func clientConfig(o Options, stage string) *torrent.ClientConfig {
	cfg := torrent.NewDefaultClientConfig()
	cfg.DataDir = stage
	cfg.DefaultStorage = storage.NewFileOpts(storage.NewFileClientOpts{ClientBaseDir: stage, PieceCompletion: storage.NewMapPieceCompletion()})
	cfg.NoDHT, cfg.DisablePEX, cfg.DisableUTP, cfg.DisableWebtorrent = true, true, true, true
	cfg.Seed = true
	cfg.Slogger = o.Log
	if cfg.Slogger == nil {
		cfg.Slogger = slog.New(slog.DiscardHandler)
	}
	cfg.ListenPort = o.Port
	if ip := net.ParseIP(o.Bind); ip != nil {
		// A bound address listens on its own family only.
		cfg.ListenHost = func(string) string { return o.Bind }
		cfg.DisableIPv6, cfg.DisableIPv4 = ip.To4() != nil, ip.To4() == nil
	}
	cfg.TrackerDialContext, cfg.HTTPDialContext = o.dial(), o.dial()
	if o.UploadRate > 0 {
		cfg.UploadRateLimiter = rate.NewLimiter(rate.Limit(o.UploadRate), 256<<10)
	}
	return cfg
}

// writeVerified copies the complete torrent's data to out through a temporary file, hashing it on
// the way, and renames it into place only when the sha256 is the one the file is named by.
func writeVerified(t *torrent.Torrent, out, wantSum string) error {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".fetch-*.part")
	if err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	r := t.NewReader()
	defer r.Close()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), r); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", out, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != wantSum {
		tmp.Close()
		return fmt.Errorf("write %s: the assembled file's sha256 is %s, not %s: not written", out, got, wantSum)
	}
	if err := errors.Join(tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}
