package bootsrv

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/nodestate"
)

// TestPowerOffEndpoint: bootctl power off tells the server, which takes the operator token and
// this host only, as for a reboot; a healthy node it was told of is pending and powered off, no
// longer healthy (issue 37: it stayed healthy and bootctl boot skipped it).
func TestPowerOffEndpoint(t *testing.T) {
	s := newFixture(t).server(t, nil)
	if _, err := s.tracker.Report("node00", nodestate.Health{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	tok := "Bearer " + string(s.operatorToken)
	for _, tc := range []struct {
		name, path, auth, remote string
		code                     int
	}{
		{"no token", "/api/v1/nodes/node00/power-off", "", "127.0.0.1:1", http.StatusUnauthorized},
		{"wrong token", "/api/v1/nodes/node00/power-off", "Bearer 0123456789abcdef0123456789abcdef", "127.0.0.1:1", http.StatusUnauthorized},
		{"another host", "/api/v1/nodes/node00/power-off", tok, "10.9.9.9:1", http.StatusForbidden},
		{"unknown node", "/api/v1/nodes/node99/power-off", tok, "127.0.0.1:1", http.StatusNotFound},
		{"GET", "/api/v1/nodes/node00/power-off", tok, "127.0.0.1:1", http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := http.MethodPost
			if tc.name == "GET" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, tc.path, nil)
			req.RemoteAddr = tc.remote
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.code {
				t.Errorf("%d %s, want %d", w.Code, w.Body, tc.code)
			}
		})
	}
	if n := nodeAt(t, s, "node00"); n.State != nodestate.Healthy || n.PoweredOff {
		t.Fatalf("after refused requests: %v powered off %v", n.State, n.PoweredOff)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := &bootapi.Client{BaseURL: srv.URL}
	res, err := c.PowerOff(context.Background(), "node00", string(s.operatorToken))
	if err != nil || res.State != nodestate.Pending || !res.PoweredOff || res.Node != "node00" {
		t.Fatalf("power-off: %+v %v", res, err)
	}
	if n := nodeAt(t, s, "node00"); n.State != nodestate.Pending || !n.PoweredOff || n.AttemptOpen() {
		t.Errorf("after power-off: %v powered off %v attempt open %v", n.State, n.PoweredOff, n.AttemptOpen())
	}
	if _, err := c.PowerOff(context.Background(), "node99", string(s.operatorToken)); err == nil || !strings.Contains(err.Error(), `unknown node "node99"`) {
		t.Errorf("power-off of an unknown node: %v", err)
	}
}
