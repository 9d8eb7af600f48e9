package bootsrv

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
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

// witnessEvery is how often a fenced server asks its peers. Fencing starts TTL - margin after
// the last renewal and a takeover TTL after it at the earliest, so the margin (at least 0.5 s)
// leaves time for a couple of rounds.
const witnessEvery = 200 * time.Millisecond

// MembershipView is what GET /api/v1/fleet/membership answers: whether this server acts for
// the fleet now.
type MembershipView struct {
	Server string `json:"server"`
	Valid  bool   `json:"valid"`
}

func (s *Server) handleMembership(w http.ResponseWriter, _ *http.Request) {
	v := MembershipView{Server: s.cfg.Servers[s.cfg.ServerID].Name}
	if s.fleet != nil {
		if m := s.fleet.m.Load(); m != nil {
			v.Valid = m.Valid()
		}
	}
	writeJSONBody(w, http.StatusOK, v)
}

// peerURLs returns the base URLs of the other members, from their member records.
func peerURLs(me string, members []fleet.Member) []string {
	var out []string
	for _, mb := range members {
		var info MemberInfo
		if mb.Name != me && json.Unmarshal(mb.Info, &info) == nil && info.URL != "" {
			out = append(out, info.URL)
		}
	}
	return out
}

// runWitness asks the peers, every witnessEvery while this server is fenced, whether any of them
// is a valid member, and records the answer in f.peerValid (false while this server is valid).
func (s *Server) runWitness(ctx context.Context) {
	f := s.fleet
	hc := &http.Client{Timeout: witnessEvery}
	tick := time.NewTicker(witnessEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m := f.m.Load()
		if m == nil || m.Valid() {
			f.peerValid.Store(false)
			continue
		}
		var peers []string
		if p := f.peers.Load(); p != nil {
			peers = *p
		}
		f.peerValid.Store(anyPeerValid(ctx, hc, peers))
	}
}

// anyPeerValid asks every peer at once and reports whether one says its membership is valid.
func anyPeerValid(ctx context.Context, hc *http.Client, peers []string) bool {
	var wg sync.WaitGroup
	found := make(chan bool, len(peers))
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, p+"/api/v1/fleet/membership", nil)
			if err != nil {
				return
			}
			resp, err := hc.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var v MembershipView
			if resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&v) == nil && v.Valid {
				found <- true
			}
		}()
	}
	wg.Wait()
	close(found)
	return len(found) > 0
}
