package bootsrv

// A bootctl boot run's prediction, for the boot page: the run announces its predicted time to
// healthy of each node (POST /api/v1/run, operator token), the server keeps those of its own
// nodes in memory, and the page draws them dashed beside what the server measures for the same
// nodes since the run's start. The latest announcement replaces the one before; a restarted
// server has none until the next run announces (a prediction is the run's, not the server's state).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/nodestate"
	"go.uber.org/zap"
)

// Ceilings of an announced run: an operator's request, but a mistaken or hostile client must not
// make the server hold or draw without bound.
const (
	// maxRunBody bounds the request body: about 50 bytes a node, for 2^18 nodes.
	maxRunBody = 16 << 20
	// maxRunNodes bounds the nodes of one announcement, this server's or not.
	maxRunNodes = 1 << 18
	// maxRunSeconds bounds a predicted time and the run's age: a week.
	maxRunSeconds = 7 * 24 * 3600
	// maxRunName bounds the run's name shown on the page.
	maxRunName = 200
)

// runBoard holds the latest announced run. The zero value holds none.
type runBoard struct {
	mu  sync.Mutex
	cur *announcedRun
}

// announcedRun is a run's prediction for this server's nodes, its start on this server's clock.
type announcedRun struct {
	name      string
	start     time.Time
	predicted map[string]float64 // seconds from start to healthy, by node
}

func (b *runBoard) set(r *announcedRun) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cur = r
}

func (b *runBoard) current() *announcedRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur
}

// handleRun keeps a run's prediction for the page, once the request proves it is the operator's.
func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	if err := s.operatorAuth(r); err != nil {
		s.reqLog(r, "").Warn("operator request refused", zap.Error(err))
		refuse(w, err)
		return
	}
	var req bootapi.RunPrediction
	if !decodeRunPrediction(w, r, &req) {
		return
	}
	run, ignored := s.runOf(&req)
	s.runs.set(run)
	s.reqLog(r, "").Info("boot run prediction announced", zap.String("run", run.name),
		zap.Int("nodes", len(run.predicted)), zap.Int("other_servers_nodes", ignored))
	writeJSONBody(w, http.StatusOK, bootapi.RunResponse{Server: s.cfg.Servers[s.cfg.ServerID].Name,
		Accepted: len(run.predicted), Ignored: ignored})
}

// runOf keeps the prediction of the nodes this server tracks and places the run's start on this
// server's clock.
func (s *Server) runOf(req *bootapi.RunPrediction) (*announcedRun, int) {
	run := &announcedRun{name: req.Run, predicted: make(map[string]float64),
		start: s.tracker.Now().Add(-time.Duration(req.ElapsedSeconds * float64(time.Second)))}
	ignored := 0
	for _, n := range req.Nodes {
		if _, ok := s.tracker.State(n.Name); !ok {
			ignored++
			continue
		}
		run.predicted[n.Name] = math.Round(n.HealthyAt*1000) / 1000 // the page's bytes need no more
	}
	return run, ignored
}

// decodeRunPrediction reads and checks a run's prediction, or answers why it cannot.
func decodeRunPrediction(w http.ResponseWriter, r *http.Request, req *bootapi.RunPrediction) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRunBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(req)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		apiError(w, http.StatusRequestEntityTooLarge, "body larger than %d bytes", maxRunBody)
		return false
	case errors.Is(err, io.EOF):
		apiError(w, http.StatusBadRequest, `empty body: want JSON like {"run": "NAME", "elapsed_seconds": 0, "nodes": [{"name": "node00", "healthy_at": 30}]}`)
		return false
	case err != nil:
		apiError(w, http.StatusBadRequest, "malformed body: %v", err)
		return false
	case dec.More():
		apiError(w, http.StatusBadRequest, "malformed body: more than one JSON value")
		return false
	}
	if err := checkRunPrediction(req); err != nil {
		apiError(w, http.StatusBadRequest, "%v", err)
		return false
	}
	return true
}

// checkRunPrediction checks what the page would draw: bounded counts and finite times.
func checkRunPrediction(req *bootapi.RunPrediction) error {
	if len(req.Run) > maxRunName {
		return fmt.Errorf("run: %d bytes, at most %d", len(req.Run), maxRunName)
	}
	if !finiteIn(req.ElapsedSeconds) {
		return fmt.Errorf("elapsed_seconds %v: want 0 to %d", req.ElapsedSeconds, maxRunSeconds)
	}
	if len(req.Nodes) > maxRunNodes {
		return fmt.Errorf("nodes: %d, at most %d", len(req.Nodes), maxRunNodes)
	}
	seen := make(map[string]bool, len(req.Nodes))
	for i, n := range req.Nodes {
		if seen[n.Name] {
			return fmt.Errorf("nodes[%d]: node %q twice", i, n.Name)
		}
		seen[n.Name] = true
		if !finiteIn(n.HealthyAt) {
			return fmt.Errorf("nodes[%d] (%q): healthy_at %v: want 0 to %d seconds", i, n.Name, n.HealthyAt, maxRunSeconds)
		}
	}
	return nil
}

func finiteIn(v float64) bool { return v >= 0 && v <= maxRunSeconds && !math.IsNaN(v) }

// runCurve is the run's curve: its nodes on this server, healthy since its start as measured,
// and their predicted times.
func runCurve(nodes []nodestate.NodeStatus, run *announcedRun) WebCurve {
	c := WebCurve{Run: run.name, Start: run.start.UTC(), Healthy: []float64{}, Prediction: []float64{}}
	for _, n := range nodes {
		at, ok := run.predicted[n.Name]
		if !ok {
			continue
		}
		c.Nodes++
		c.Prediction = append(c.Prediction, at)
		switch n.State {
		case nodestate.Healthy:
			if t, ok := n.Times[nodestate.Healthy]; ok && !t.Before(run.start) {
				c.Healthy = append(c.Healthy, t.Sub(run.start).Round(time.Millisecond).Seconds())
			}
		case nodestate.Failed:
			c.Failed++
		}
	}
	slices.Sort(c.Healthy)
	slices.Sort(c.Prediction)
	return c
}
