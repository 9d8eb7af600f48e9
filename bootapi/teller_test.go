package bootapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestTeller: a node is told when one server takes it, with each server's own token; a node no
// server takes is an error naming it and every server's answer.
func TestTeller(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	server := func(holds, token string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.URL.Path+" "+r.Header.Get("Authorization"))
			mu.Unlock()
			if r.Header.Get("Authorization") != "Bearer "+token || !strings.Contains(r.URL.Path, "/"+holds+"/") {
				w.WriteHeader(http.StatusNotFound)
				w.Write([]byte(`{"error":"unknown node"}`))
				return
			}
			w.Write([]byte(`{"node":"` + holds + `","state":"pending"}`))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	a, b := server("n0", "ta"), server("n1", "tb")
	tl := &Teller{URLs: []string{a.URL, b.URL}, Tokens: map[string]string{a.URL: "ta", b.URL: "tb"}, HTTP: http.DefaultClient}
	for _, tc := range []struct {
		name string
		do   func(context.Context, []string) *Told
		verb string
	}{{"power off", tl.PoweredOff, "power-off"}, {"reboot", tl.ArmReboots, "reboot"}} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			got := tc.do(context.Background(), []string{"n0", "n1", "n9"})
			if got.Told != 2 || len(got.Errors) != 1 || !strings.HasPrefix(got.Errors[0], "n9: ") || strings.Count(got.Errors[0], "unknown node") != 2 {
				t.Errorf("told %+v", got)
			}
			if len(seen) != 6 || !strings.Contains(seen[0], tc.verb) {
				t.Errorf("requests %v, want 6 of %s", seen, tc.verb)
			}
		})
	}
}
