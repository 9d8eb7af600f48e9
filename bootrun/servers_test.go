package bootrun

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/bootfabric/bootfabric/nodestate"
)

// HTTPServers reads each server's progress view, and the node list of a server without one
// (an older server answers 404); of a node two servers report, the later attempt wins, and
// phaseOfNode reads a failed state without a health report as a transfer the firmware retries.
func TestHTTPServersProgress(t *testing.T) {
	newer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/progress" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"server":"bs0","nodes":[` +
			`{"name":"a","state":"failed","attempt":3,"restarts":2,"gave_up":2,"last_gave_up":{"file":"/boot/p/initrd","sent":10,"size":100,"seconds":8,"rate_mbps":0.00001,"outcome":"failed"}},` +
			`{"name":"b","state":"initrd","attempt":1,"restarts":0,"gave_up":0,"transfer":{"file":"/boot/p/initrd","sent":100,"size":100,"seconds":2,"rate_mbps":0.0004,"outcome":"done"}}]}`))
	}))
	defer newer.Close()
	older := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/nodes" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"server":"bs1","server_id":1,"nodes":[{"name":"b","mac":"52:54:00:00:00:02","position":"x","profile":"p","state":"failed","attempt":4,"reported":true,"times":{},"since":"2026-11-27T00:00:00Z"},` +
			`{"name":"c","mac":"52:54:00:00:00:03","position":"y","profile":"p","state":"healthy","attempt":1,"times":{},"since":"2026-11-27T00:00:00Z"}]}`))
	}))
	defer older.Close()
	h := &HTTPServers{URLs: []string{newer.URL, older.URL}}
	got, err := h.States(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		state   nodestate.State
		attempt int
		server  string
		phase   Phase
		gaveUp  int
	}{
		{"a", nodestate.Failed, 3, newer.URL, Loading, 2}, // given up, no report: still loading
		{"b", nodestate.Failed, 4, older.URL, Failed, 0},  // the older server's later attempt, reported failed
		{"c", nodestate.Healthy, 1, older.URL, Healthy, 0},
	} {
		st, ok := got[tc.name]
		p, _ := phaseOfNode(st)
		if !ok || st.State != tc.state || st.Attempt != tc.attempt || st.Server != tc.server || p != tc.phase || st.GaveUp != tc.gaveUp {
			t.Errorf("%s: %+v (phase %v), want %v attempt %d from %s, phase %v, %d given up", tc.name, st, p, tc.state, tc.attempt, tc.server, tc.phase, tc.gaveUp)
		}
	}
	if a := got["a"]; a.LastGaveUp == nil || a.LastGaveUp.Seconds != 8 || a.Restarts != 2 {
		t.Errorf("a's measurements: %+v", a)
	}
}
