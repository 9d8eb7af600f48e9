package bootsrv

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
)

// TestAnyPeerValidAnswered: a witness round tells "a peer proved it is valid", "the peers that
// answered said they are not" and "nobody answered" apart. The last used to count as "not valid",
// so a fenced server whose peer was too slow to answer (a loaded host: the fleet soak under
// attack) kept answering the nodes that peer had taken over; runWitness now keeps its last verdict
// then.
func TestAnyPeerValidAnswered(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	peer := func(name string, valid bool, macKey []byte, delay time.Duration) witnessPeer {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
			v := bootapi.MembershipView{Server: name, Valid: valid, Nonce: r.URL.Query().Get("nonce")}
			v.MAC = witnessMAC(macKey, "test", v)
			json.NewEncoder(w).Encode(v)
		}))
		t.Cleanup(srv.Close)
		return witnessPeer{name, srv.URL}
	}
	forger := []byte("another key, not the fleet's secret")
	for _, tc := range []struct {
		name            string
		peers           []witnessPeer
		valid, answered bool
	}{
		{"a valid peer", []witnessPeer{peer("bs0", true, key, 0)}, true, true},
		{"a valid peer and a silent one", []witnessPeer{peer("bs0", true, key, 0), peer("bs2", true, key, time.Minute)}, true, true},
		{"peers that are not valid either", []witnessPeer{peer("bs0", false, key, 0), peer("bs2", false, key, 0)}, false, true},
		{"no peer answers in time", []witnessPeer{peer("bs0", true, key, time.Minute)}, false, false},
		{"a forged yes counts as no answer", []witnessPeer{peer("bs0", true, forger, 0)}, false, false},
		{"no peers", nil, false, false},
	} {
		hc := &http.Client{Timeout: 2 * time.Second} // a peer that answers does so under -race on a loaded host
		valid, answered := anyPeerValid(context.Background(), hc, key, "test", tc.peers)
		if valid != tc.valid || answered != tc.answered {
			t.Errorf("%s: valid %v, answered %v; want %v, %v", tc.name, valid, answered, tc.valid, tc.answered)
		}
	}
}
