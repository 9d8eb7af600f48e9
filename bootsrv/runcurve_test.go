package bootsrv

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/google/go-cmp/cmp"
)

// TestRunEndpoint: a bootctl boot run's prediction is an operator request (token, this host);
// what it may carry is bounded and checked, naming what is wrong; the server keeps its own
// nodes' times and the page's curve becomes the run's.
func TestRunEndpoint(t *testing.T) {
	s := newFixture(t).server(t, nil)
	h := s.Handler()
	tok := "Bearer " + string(s.operatorToken)
	good := `{"run":"r1","elapsed_seconds":2,"nodes":[{"name":"node00","healthy_at":30}]}`
	for _, tc := range []struct {
		name, auth, remote, body string
		code                     int
		want                     string
	}{
		{"no token", "", "127.0.0.1:1", good, http.StatusUnauthorized, "operator token required"},
		{"wrong token", "Bearer 0123456789abcdef0123456789abcdef", "127.0.0.1:1", good, http.StatusUnauthorized, "operator token required"},
		{"another host", tok, "10.9.9.9:1", good, http.StatusForbidden, "this host only"},
		{"empty", tok, "127.0.0.1:1", "", http.StatusBadRequest, "empty body"},
		{"not JSON", tok, "127.0.0.1:1", "{", http.StatusBadRequest, "malformed body"},
		{"unknown field", tok, "127.0.0.1:1", `{"runs":1}`, http.StatusBadRequest, "unknown field"},
		{"two values", tok, "127.0.0.1:1", good + good, http.StatusBadRequest, "more than one JSON value"},
		{"negative age", tok, "127.0.0.1:1", `{"elapsed_seconds":-1,"nodes":[]}`, http.StatusBadRequest, "elapsed_seconds -1"},
		{"time past a week", tok, "127.0.0.1:1", `{"nodes":[{"name":"node00","healthy_at":1e9}]}`, http.StatusBadRequest, "healthy_at 1e+09: want 0 to 604800 seconds"},
		{"node twice", tok, "127.0.0.1:1", `{"nodes":[{"name":"node00","healthy_at":1},{"name":"node00","healthy_at":2}]}`, http.StatusBadRequest, "nodes[1]: node"},
		{"long name", tok, "127.0.0.1:1", fmt.Sprintf(`{"run":%q}`, strings.Repeat("r", maxRunName+1)), http.StatusBadRequest, "run: 201 bytes"},
		{"too large", tok, "127.0.0.1:1", `{"run":"` + strings.Repeat(" ", maxRunBody) + `"}`, http.StatusRequestEntityTooLarge, "body larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, bootapi.RunPath, strings.NewReader(tc.body))
			req.RemoteAddr = tc.remote
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("%d %s, want %d and %q", w.Code, w.Body, tc.code, tc.want)
			}
		})
	}
	if run := s.runs.current(); run != nil {
		t.Fatalf("refused requests left a run: %+v", run)
	}

	srv := httptest.NewServer(h)
	defer srv.Close()
	res, err := (&bootapi.Client{BaseURL: srv.URL}).AnnounceRun(context.Background(), &bootapi.RunPrediction{
		Run: "boot.journal", ElapsedSeconds: 0.5, Nodes: []bootapi.RunNode{
			{Name: "node01", HealthyAt: 40.12345}, {Name: "node00", HealthyAt: 31}, {Name: "elsewhere", HealthyAt: 5}},
	}, string(s.operatorToken))
	if err != nil || res.Accepted != 2 || res.Ignored != 1 {
		t.Fatalf("announce: %+v %v", res, err)
	}
	if _, err := s.tracker.Report("node00", nodestate.Health{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	c := buildWebView(s, s.tracker.Nodes()).Curve
	if c.Run != "boot.journal" || c.Nodes != 2 || !cmp.Equal(c.Prediction, []float64{31, 40.123}) {
		t.Fatalf("curve %+v: want the run's 2 nodes, predicted at 31 and 40.123 s", c)
	}
	if len(c.Healthy) != 1 || c.Healthy[0] < 0.5 || c.Healthy[0] > 60 {
		t.Errorf("measured %v: want node00 healthy, 0.5 s or more after the run's start", c.Healthy)
	}
}

// TestRunCurve: the run's curve counts its own nodes only, healthy since its start (a node
// healthy from before, not yet booted again, is not), failed ones, and sorts both series.
func TestRunCurve(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	node := func(name string, st nodestate.State, healthy time.Time) nodestate.NodeStatus {
		n := nodestate.NodeStatus{Name: name, State: st, Times: map[nodestate.State]time.Time{}}
		if !healthy.IsZero() {
			n.Times[nodestate.Healthy] = healthy
		}
		return n
	}
	run := &announcedRun{name: "r", start: t0, predicted: map[string]float64{"a": 20, "b": 10, "c": 30, "d": 15}}
	got := runCurve([]nodestate.NodeStatus{
		node("a", nodestate.Healthy, at(25.5)),
		node("b", nodestate.Healthy, at(-100)), // healthy before the run, not booted yet
		node("c", nodestate.Failed, time.Time{}),
		node("d", nodestate.Healthy, at(12)),
		node("x", nodestate.Healthy, at(3)), // not the run's
	}, run)
	want := WebCurve{Run: "r", Start: t0, Nodes: 4, Healthy: []float64{12, 25.5}, Failed: 1, Prediction: []float64{10, 15, 20, 30}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
