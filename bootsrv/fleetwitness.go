package bootsrv

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/bootfabric/bootfabric/fleet"
)

// A fenced server (its lease renewal overdue) cannot tell from etcd alone whether etcd is down
// for everyone (nobody takes anything over: keep booting the home nodes) or only for itself
// while the others go on (they will take its nodes over after the TTL: it must fall silent).
// Its peers can tell: while fenced, it asks each of them, over the boot network they serve
// nodes on, whether their membership is valid. If one says yes, this server is the one cut
// off and answers nothing; if none says yes (none answers, or all are fenced too), etcd is
// down for all and it keeps answering its home nodes.
//
// Anyone on the boot network could answer in a peer's name, and a false yes silences a server.
// So every question carries a fresh random nonce, and an answer counts only with an HMAC-SHA256,
// under the fleet secret that every server holds, of the fleet, the peer's name, its
// answer and that nonce: an answer cannot be forged without the key, nor replayed.

// witnessEvery is how often a fenced server asks its peers. Fencing starts TTL - margin after
// the last renewal and a takeover TTL after it at the earliest, so the margin (at least 0.5 s)
// leaves time for a couple of rounds.
const witnessEvery = 200 * time.Millisecond

// MinFleetSecret is the shortest fleet secret accepted: an HMAC key of at least the hash's size.
const MinFleetSecret = 32

// maxNonce bounds the nonce a question may carry (hex).
const maxNonce = 64

// MembershipView is what GET /api/v1/fleet/membership?nonce=HEX answers: whether this server acts
// for the fleet now, and the proof that this server said so (MAC, hex; empty without a key).
type MembershipView struct {
	Server string `json:"server"`
	Valid  bool   `json:"valid"`
	Nonce  string `json:"nonce,omitempty"`
	MAC    string `json:"mac,omitempty"`
}

// witnessMAC is the proof of an answer under key.
func witnessMAC(key []byte, fleetName string, v MembershipView) string {
	h := hmac.New(sha256.New, key)
	valid := "0"
	if v.Valid {
		valid = "1"
	}
	io.WriteString(h, "bootfabric witness\x00"+fleetName+"\x00"+v.Server+"\x00"+valid+"\x00"+v.Nonce)
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Server) handleMembership(w http.ResponseWriter, r *http.Request) {
	v := MembershipView{Server: s.cfg.Servers[s.cfg.ServerID].Name}
	if s.fleet == nil {
		writeJSONBody(w, http.StatusOK, v)
		return
	}
	v.Valid = s.fleet.m.Valid()
	if v.Nonce = r.URL.Query().Get("nonce"); len(v.Nonce) > maxNonce {
		apiError(w, http.StatusBadRequest, "nonce: over %d characters", maxNonce)
		return
	}
	if key := s.fleet.opts.FleetSecret; len(key) > 0 {
		v.MAC = witnessMAC(key, s.fleet.opts.Client.Fleet(), v)
	}
	writeJSONBody(w, http.StatusOK, v)
}

// witnessPeer is a peer to ask: its name and base URL.
type witnessPeer struct{ name, url string }

// peersOf returns the other members that published a URL, from their member records.
func peersOf(me string, members []fleet.Member) []witnessPeer {
	var out []witnessPeer
	for _, mb := range members {
		if info, ok := DecodeMemberInfo(mb); ok && mb.Name != me && info.URL != "" {
			out = append(out, witnessPeer{mb.Name, info.URL})
		}
	}
	return out
}

// runWitness asks the peers, every witnessEvery while this server is fenced, whether any of them
// is a valid member, and records the answer in f.peerValid (false while this server is valid).
// Without a fleet secret nobody is asked: an unauthenticated yes could come from anyone.
func (s *Server) runWitness(ctx context.Context) {
	f := s.fleet
	if len(f.opts.FleetSecret) == 0 {
		return
	}
	hc := &http.Client{Timeout: witnessEvery}
	tick := time.NewTicker(witnessEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if f.m.Valid() {
			f.peerValid.Store(false)
			continue
		}
		var peers []witnessPeer
		if p := f.peers.Load(); p != nil {
			peers = *p
		}
		f.peerValid.Store(anyPeerValid(ctx, hc, f.opts.FleetSecret, f.opts.Client.Fleet(), peers))
	}
}

// anyPeerValid asks every peer at once and reports whether one proves that its membership is
// valid.
func anyPeerValid(ctx context.Context, hc *http.Client, key []byte, fleetName string, peers []witnessPeer) bool {
	var nonce [16]byte
	rand.Read(nonce[:])
	q := url.Values{"nonce": {hex.EncodeToString(nonce[:])}}.Encode()
	var wg sync.WaitGroup
	found := make(chan bool, len(peers))
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/api/v1/fleet/membership?"+q, nil)
			if err != nil {
				return
			}
			resp, err := hc.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var v MembershipView
			if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&v) != nil {
				return
			}
			ok := v.Valid && v.Server == p.name && v.Nonce == hex.EncodeToString(nonce[:]) &&
				hmac.Equal([]byte(v.MAC), []byte(witnessMAC(key, fleetName, v)))
			if ok {
				found <- true
			}
		}()
	}
	wg.Wait()
	close(found)
	return len(found) > 0
}
