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

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/fleet"
)

// witnessEvery is how often a fenced server asks its peers. Fencing starts TTL - margin after
// the last renewal and a takeover TTL after it at the earliest, so the margin (at least 0.5 s)
// leaves time for a couple of rounds.
const witnessEvery = 200 * time.Millisecond

// witnessWait is how long a question to the peers may take. Longer than witnessEvery: a peer
// under load (a boot storm, a host flooding its HTTP port) answered the soak's questions in more
// than 200 ms, every round timed out, and the fenced server kept answering nodes the peer had
// taken over.
const witnessWait = time.Second

// MinFleetSecret is the shortest fleet secret accepted: an HMAC key of at least the hash's size.
const MinFleetSecret = 32

// maxNonce bounds the nonce a question may carry (hex).
const maxNonce = 64

// witnessMAC is the proof of an answer under key.
//
// A fresh nonce in every question and the fleet secret make an answer impossible to forge or
// replay for a host on the boot network, where a false yes would silence a server.
func witnessMAC(key []byte, fleetName string, v bootapi.MembershipView) string {
	h := hmac.New(sha256.New, key)
	valid := "0"
	if v.Valid {
		valid = "1"
	}
	io.WriteString(h, "bootfabric witness\x00"+fleetName+"\x00"+v.Server+"\x00"+valid+"\x00"+v.Nonce)
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Server) handleMembership(w http.ResponseWriter, r *http.Request) {
	v := bootapi.MembershipView{Server: s.cfg.Servers[s.cfg.ServerID].Name}
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
// A round in which no peer answered changes nothing: a peer that proved itself valid a moment ago
// is taking this server's nodes over whether or not its next answer comes in time, and only an
// answer (every peer that answered says it is not valid either: etcd is down for all) brings the
// home nodes back. Without a fleet secret nobody is asked: an unauthenticated yes could come from
// anyone.
//
// Why: a fenced server cannot tell from etcd whether etcd is down for all (keep booting the home
// nodes) or only for itself (the others will take its nodes over: fall silent); its peers can.
func (s *Server) runWitness(ctx context.Context) {
	f := s.fleet
	if len(f.opts.FleetSecret) == 0 {
		return
	}
	hc := &http.Client{Timeout: witnessWait}
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
		if valid, answered := anyPeerValid(ctx, hc, f.opts.FleetSecret, f.opts.Client.Fleet(), peers); answered {
			f.peerValid.Store(valid)
		}
	}
}

// anyPeerValid asks every peer at once and reports whether one proves that its membership is
// valid, and whether any peer gave an authenticated answer at all.
func anyPeerValid(ctx context.Context, hc *http.Client, key []byte, fleetName string, peers []witnessPeer) (valid, answered bool) {
	var nonce [16]byte
	rand.Read(nonce[:])
	q := url.Values{"nonce": {hex.EncodeToString(nonce[:])}}.Encode()
	var wg sync.WaitGroup
	found := make(chan bool, len(peers)) // one authenticated answer per peer that gave one
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
			var v bootapi.MembershipView
			if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&v) != nil {
				return
			}
			if v.Server == p.name && v.Nonce == hex.EncodeToString(nonce[:]) && hmac.Equal([]byte(v.MAC), []byte(witnessMAC(key, fleetName, v))) {
				found <- v.Valid
			}
		}()
	}
	wg.Wait()
	close(found)
	for v := range found {
		answered = true
		valid = valid || v
	}
	return valid, answered
}
