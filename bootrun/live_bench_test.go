package bootrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/power"
)

// liveBenchWindow is how long each path's run goes on: long enough for many polls and for
// nodes to move through every state, short enough that the benchmark's default run (setup and
// both paths) stays under a minute.
const liveBenchWindow = 8 * time.Second

// liveBenchMinPolls is how many reads (the run's start and its polls) the progress path's run
// makes at least, and liveBenchMaxRun bounds how long it waits past the window for them.
const (
	liveBenchMinPolls = 2
	liveBenchMaxRun   = 90 * time.Second
)

// liveBenchReads is how many polls are timed alone after each run.
const liveBenchReads = 1

// liveBenchReadServers is how many of the 160 servers the reads alone are timed on (8,192
// nodes): a fifth of the machine, per node the same, and the old path's read of all of it takes
// half a minute on a loaded 2-core machine.
const liveBenchReadServers = 32

// BenchmarkLiveLoopSunway drives bootctl boot's live loop (Live with HTTPServers, at its
// default poll of 1 s) against the paper's machine: 40,960 nodes on 160 boot servers as bcda
// deals them, each server a real bootsrv handler on loopback whose tracker holds its 256
// nodes, every node with a full history from earlier boots. The run re-images the machine
// (RebootHealthy): it arms and cycles the nodes the controller admits, and each node then moves
// through DHCP, nbp, kernel and initrd (with transfer bytes growing) to healthy on its server.
// Two paths in the same run: "progress" reads GET /api/v1/progress as the loop does now;
// "nodes" is the old full-status path, GET /api/v1/nodes with every node's history, read by the
// same code (a server without the progress endpoint). Each reports, per node per second of the
// loop, the CPU of the process less the simulated nodes' (the loop, its journal and the
// servers' handlers) and the bytes the loop read; then, per node, one poll's reads timed alone
// (read-*), the figure that shows the change. docs/benchmarks.md has the figures.
func BenchmarkLiveLoopSunway(b *testing.B) {
	g, a, batch := machine(b, "sunway", "bcda")
	names := make([]string, len(batch))
	h := g.Hierarchy()
	for i := range names {
		names[i] = h.NodeName(i)
	}
	lb := newLiveBench(b, names, a.Server, a.NumServers, 4) // 4 boots: 32 transitions, the history's bound
	flow := fabricsim.DefaultFlowConfig(fabricsim.TFTP)
	lim, err := ComputeLimits(g, nil, a, batch, flow, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{"progress", "nodes"} {
		b.Run(path, func(b *testing.B) {
			var m liveFigures
			for b.Loop() {
				m = lb.run(b, path == "nodes", lim, liveBenchWindow)
			}
			m.report(b)
		})
	}
}

// TestLiveBenchSmall is the benchmark's harness on 128 nodes over 2 servers, in seconds: the
// loop follows the nodes to healthy through the progress endpoint, and reads there a small part
// of what the old path reads per node (no history, no zero counts).
func TestLiveBenchSmall(t *testing.T) {
	const n = 128
	names, owner := make([]string, n), make([]int32, n)
	lim := &Limits{Caps: []int{n}, Nodes: make([][]int32, n)}
	for i := range names {
		names[i], owner[i], lim.Nodes[i] = fmt.Sprintf("n%03d", i), int32(i%2), []int32{0}
	}
	lb := newLiveBench(t, names, owner, 2, 4)
	m := lb.run(t, false, lim, 8*time.Second) // nodes are healthy about 4.5 s in: margin for a loaded machine
	if m.healthy == 0 || m.readNodes != n {
		t.Errorf("progress path: %d healthy, %d nodes read alone; want some healthy and every node", m.healthy, m.readNodes)
	}
	old := lb.run(t, true, lim, 2*time.Second)
	perNode, oldPerNode := m.readBytes/float64(m.readNodes), old.readBytes/float64(old.readNodes)
	if !(oldPerNode > 10*perNode) {
		t.Errorf("bytes per node and poll: progress %.0f, old path %.0f: want the old path over 10x", perNode, oldPerNode)
	}
	lb.old.Store(false)
	resp, err := http.Get(lb.urls[0] + "/api/v1/progress")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("progress: %v, %v", resp.Status, err)
	}
	for _, waste := range []string{`"restarts":0`, `"gave_up":0`, `"history"`} {
		if strings.Contains(string(body), waste) {
			t.Errorf("the progress answer carries %s: %.300s", waste, body)
		}
	}
}

// liveBench is the simulated machine: boot servers with their trackers, and the nodes' boots.
type liveBench struct {
	names   []string
	servers []*bootsrv.Server
	urls    []string
	token   string
	old     atomic.Bool // the servers answer 404 to /api/v1/progress, as before it was added
	sim     *nodeSim
}

// newLiveBench starts one boot server per server index of owner (numServers of them), each
// tracking the nodes owner gives it, and ages every node by boots full boots, so that its
// history is as long as a server keeps.
func newLiveBench(tb testing.TB, names []string, owner []int32, numServers, boots int) *liveBench {
	tb.Helper()
	dir := tb.TempDir()
	testfix.BootDir(tb, dir, testfix.BootSizes{Kernel: 4096, Initrd: 4096, NBP: 1024, Seed: 1}, "console=ttyS0")
	lb := &liveBench{names: names}
	csv := make([]strings.Builder, numServers)
	for i, name := range names {
		sb := &csv[owner[i]]
		if sb.Len() == 0 {
			sb.WriteString("name,mac\n")
		}
		fmt.Fprintf(sb, "%s,02:00:%02x:%02x:%02x:%02x\n", name, i>>24, (i>>16)&255, (i>>8)&255, i&255)
	}
	token := filepath.Join(dir, "operator.token")
	srvOf := map[string]*nodestate.Tracker{}
	for s := 0; s < numServers; s++ {
		sd := filepath.Join(dir, fmt.Sprintf("bs%03d", s))
		testfix.WriteFile(tb, filepath.Join(sd, "inventory.csv"), []byte(csv[s].String()))
		// No DHCP, no TFTP: the nodes' steps are told to the tracker directly. State saves
		// batched (state_flush) and never run here: persistence is not the loop's cost.
		yaml := fmt.Sprintf("servers:\n  - {name: bs%03d, address: 127.0.0.1}\ninventory: inventory.csv\nimages: %s\nipxe_dir: %s\n"+
			"state_dir: state\nstate_flush: 1h\nhttp: {listen: \"127.0.0.1:0\", operator_token_file: %s}\ntftp: {listen: \"off\"}\ndhcp: {mode: \"off\"}\n",
			s, filepath.Join(dir, "images"), filepath.Join(dir, "ipxe"), token)
		cfgPath := testfix.WriteFile(tb, filepath.Join(sd, "serve.yaml"), []byte(yaml))
		cfg, err := bootconfig.LoadConfig(cfgPath)
		if err != nil {
			tb.Fatal(err)
		}
		srv, err := bootsrv.New(cfg, bootsrv.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { srv.Close() })
		handler := srv.Handler()
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if lb.old.Load() && r.URL.Path == "/api/v1/progress" {
				http.NotFound(w, r)
				return
			}
			handler.ServeHTTP(w, r)
		}))
		tb.Cleanup(hs.Close)
		lb.servers, lb.urls = append(lb.servers, srv), append(lb.urls, hs.URL)
		for _, n := range srv.Authority().Owned() {
			srvOf[n.Name] = srv.Tracker()
		}
	}
	tok, err := bootsrv.ReadOperatorToken(token)
	if err != nil {
		tb.Fatal(err)
	}
	lb.token = tok
	trackers := make([]*nodestate.Tracker, len(names))
	for i, name := range names {
		if trackers[i] = srvOf[name]; trackers[i] == nil {
			tb.Fatalf("node %s: no server tracks it", name)
		}
		for k := 0; k < boots; k++ {
			for _, ev := range []nodestate.Event{nodestate.EvRebootDiscover, nodestate.EvOffer, nodestate.EvAck, nodestate.EvNBP,
				nodestate.EvScript, nodestate.EvKernel, nodestate.EvInitrd, nodestate.EvDiscover, nodestate.EvHealthOK} {
				if _, _, err := trackers[i].Observe(name, ev, "an earlier boot"); err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	lb.sim = newNodeSim(names, trackers)
	return lb
}

// liveFigures are one run's measurements.
type liveFigures struct {
	nodes           int
	seconds, cpu    float64 // the loop's wall time, and the process's CPU less the nodes'
	simCPU          float64
	bytes           int64 // response bodies of the loop's reads
	polls           int
	pollSeconds     float64 // wall time inside Servers.States
	healthy, moving int     // nodes seen healthy, and loading or booted
	powered         int64   // power-ons (each after its reboot was armed on its server)
	// One poll's reads alone of readNodes nodes: CPU, wall time and bytes.
	readNodes                       int
	readCPU, readSeconds, readBytes float64
}

func (m liveFigures) report(b *testing.B) {
	ns := float64(m.nodes) * m.seconds
	b.ReportMetric(m.cpu/ns, "cpu-s/node/s")
	b.ReportMetric(float64(m.bytes)/ns, "B/node/s")
	b.ReportMetric(float64(m.bytes)/float64(max(1, m.polls))/float64(m.nodes), "B/node/poll")
	b.ReportMetric(m.pollSeconds/float64(max(1, m.polls)), "s/poll")
	b.ReportMetric(float64(m.polls), "polls")
	b.ReportMetric(m.seconds, "run-s")
	b.ReportMetric(m.cpu, "cpu-s")
	b.ReportMetric(m.simCPU, "sim-cpu-s")
	b.ReportMetric(float64(m.healthy), "healthy")
	b.ReportMetric(float64(m.powered), "powered")
	b.ReportMetric(m.readCPU/float64(m.readNodes), "read-cpu-s/node/poll")
	b.ReportMetric(m.readBytes/float64(m.readNodes), "read-B/node/poll")
	b.ReportMetric(m.readSeconds, "read-s/poll")
}

// run drives one live run for window and measures it. old: the servers answer as before the
// progress endpoint, so the loop reads their node lists.
func (lb *liveBench) run(b testing.TB, old bool, lim *Limits, window time.Duration) liveFigures {
	lb.old.Store(old)
	nodes := make([]Node, len(lb.names))
	targets := make([]power.Target, len(lb.names))
	for i, n := range lb.names {
		nodes[i] = Node{Name: n, Resources: lim.Nodes[i]}
		targets[i] = power.Target{Node: n, BMC: "bmc-" + n, Controller: simBMC{lb.sim, i}}
	}
	// As bootctl boot makes it at its defaults: deadlines from the expected phase times.
	c, err := New(Config{Caps: lim.Caps, Expect: Expect{Power: 30, Firmware: 60, Transfer: DefaultTransferSeconds, Health: 120}}, nodes)
	if err != nil {
		b.Fatal(err)
	}
	reads := &countingTransport{next: http.DefaultTransport.(*http.Transport).Clone()}
	defer reads.next.CloseIdleConnections()
	tokens := map[string]string{}
	for _, u := range lb.urls {
		tokens[u] = lb.token
	}
	srv := &timedServers{Servers: &HTTPServers{URLs: lb.urls, HTTP: &http.Client{Timeout: 30 * time.Second, Transport: reads}, Tokens: tokens}}
	j, err := CreateJournal(filepath.Join(b.TempDir(), "run.journal"), lb.names)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	l := &Live{Controller: c, Names: lb.names, Power: targets, Servers: srv, Journal: j, Poll: time.Second,
		RebootHealthy: true, PowerOpts: power.RunOptions{MinInterval: power.NoInterval}}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ons0 := lb.sim.ons.Load()
	simDone := make(chan float64)
	go func() { simDone <- lb.sim.run(ctx) }()
	runtime.GC()
	cpu0 := processCPU(b)
	start := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	go func() {
		// The window, and on the progress path as long after it as it takes to poll
		// liveBenchMinPolls times (a loaded machine can starve the loop), within liveBenchMaxRun.
		defer stop()
		end, hard := time.NewTimer(window), time.NewTimer(liveBenchMaxRun)
		defer end.Stop()
		defer hard.Stop()
		select {
		case <-end.C:
		case <-runCtx.Done():
			return
		}
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for !old && srv.calls.Load() < liveBenchMinPolls {
			select {
			case <-tick.C:
			case <-hard.C:
				return
			case <-runCtx.Done():
				return
			}
		}
	}()
	recs, err := l.Run(runCtx)
	stop()
	el := time.Since(start).Seconds()
	cpu := processCPU(b) - cpu0
	cancel()
	simCPU := <-simDone
	if err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
	m := liveFigures{nodes: len(lb.names), seconds: el, cpu: cpu - simCPU, simCPU: simCPU, bytes: reads.read.Load(), powered: lb.sim.ons.Load() - ons0}
	m.polls, m.pollSeconds = int(srv.calls.Load()), srv.seconds
	for _, r := range recs {
		switch {
		case r.Phase == Healthy && !r.Skipped:
			m.healthy++
		case r.Phase >= Loading:
			m.moving++
		}
	}
	// A run whose reads saw no node move measured nothing of a loop that follows boots. The old
	// path is not held to it: a poll of it can take the whole window on a loaded machine.
	if !old && (m.healthy+m.moving == 0 || m.polls < liveBenchMinPolls) {
		b.Fatalf("%d polls, %d nodes seen loading or later in %.1f s: the loop did not follow the boots", m.polls, m.healthy+m.moving, el)
	}
	// The reads alone, the nodes still (mid-boot as the run left them) and nothing else running:
	// what one poll costs the loop and the servers, per node. It must see every node it asks for.
	runtime.GC()
	some := &HTTPServers{URLs: lb.urls[:min(liveBenchReadServers, len(lb.urls))], HTTP: &http.Client{Timeout: 60 * time.Second, Transport: reads}}
	read0, cpu0, start := reads.read.Load(), processCPU(b), time.Now()
	seen := 0
	for k := 0; k < liveBenchReads; k++ {
		states, err := some.States(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		seen = len(states)
	}
	if want := len(some.URLs) * len(lb.names) / len(lb.urls); seen != want {
		b.Fatalf("a poll of %d servers saw %d nodes, want %d", len(some.URLs), seen, want)
	}
	m.readNodes = seen
	m.readCPU, m.readSeconds = (processCPU(b)-cpu0)/liveBenchReads, time.Since(start).Seconds()/liveBenchReads
	m.readBytes = float64(reads.read.Load()-read0) / liveBenchReads
	return m
}

// processCPU is the process's user and system CPU so far, in seconds.
func processCPU(tb testing.TB) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return tv(ru.Utime) + tv(ru.Stime)
}

// threadCPU is the calling thread's CPU so far (Linux's RUSAGE_THREAD), in seconds.
func threadCPU() float64 {
	const rusageThread = 1
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return tv(ru.Utime) + tv(ru.Stime)
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// countingTransport counts the bytes of the response bodies of GET requests: what the loop reads.
type countingTransport struct {
	next *http.Transport
	read atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// timedServers counts the polls and their wall time (States is called from the loop's
// goroutine alone; seconds is read after the run).
type timedServers struct {
	Servers
	calls   atomic.Int64 // read by the run's stopper too
	seconds float64
}

func (t *timedServers) States(ctx context.Context) (map[string]NodeState, error) {
	start := time.Now()
	defer func() { t.seconds += time.Since(start).Seconds(); t.calls.Add(1) }()
	return t.Servers.States(ctx)
}

// simBMC powers a simulated node: on or cycled, the node boots again (its server decides
// whether that is a new attempt, as for a real one: armed, or not yet booted).
type simBMC struct {
	s *nodeSim
	i int
}

func (m simBMC) On(context.Context) error                      { m.s.powerOn(m.i); return nil }
func (m simBMC) Cycle(context.Context) error                   { m.s.powerOn(m.i); return nil }
func (m simBMC) Off(context.Context) error                     { return nil }
func (m simBMC) Status(context.Context) (power.State, error)   { return power.On, nil }
func (m simBMC) PXENext(context.Context, power.BootMode) error { return nil }

// nodeStep is one step of a simulated boot: at after from power-on, the events the node's
// server sees, and the transfer it starts, adds to (add bytes) or ends.
type nodeStep struct {
	after  time.Duration
	events []nodestate.Event
	add    int64
	end    bool   // the current transfer is whole
	start  string // a transfer of this file begins (size bytes)
	size   int64
}

// simSteps is one boot: POST, DHCP, an nbp, a kernel and an initrd in parts (so that their
// bytes grow from poll to poll), the booted system's DHCP and its health report; about 4 s.
var simSteps = func() []nodeStep {
	const kernel, initrd = 8 << 20, 40 << 20
	d := func(ms int) time.Duration { return time.Duration(ms) * time.Millisecond / 2 }
	steps := []nodeStep{
		{after: d(1000), events: []nodestate.Event{nodestate.EvDiscover, nodestate.EvOffer, nodestate.EvAck}, start: "/boot/default/undionly.kpxe", size: 70001},
		{after: d(1300), add: 70001, end: true, events: []nodestate.Event{nodestate.EvNBP, nodestate.EvScript}, start: "/boot/default/vmlinuz", size: kernel},
	}
	for k := 1; k <= 4; k++ {
		s := nodeStep{after: d(1300 + 500*k), add: kernel / 4}
		if k == 4 {
			s.end, s.events, s.start, s.size = true, []nodestate.Event{nodestate.EvKernel}, "/boot/default/initrd.img", initrd
		}
		steps = append(steps, s)
	}
	for k := 1; k <= 4; k++ {
		s := nodeStep{after: d(3300 + 750*k), add: initrd / 4}
		if k == 4 {
			s.end, s.events = true, []nodestate.Event{nodestate.EvInitrd}
		}
		steps = append(steps, s)
	}
	return append(steps,
		nodeStep{after: d(6800), events: []nodestate.Event{nodestate.EvDiscover}},
		nodeStep{after: d(7500), events: []nodestate.Event{nodestate.EvHealthOK}})
}()

// nodeSim plays the nodes' boots on their servers' trackers. Every boot has the same steps, so
// the nodes reach each step in the order they were powered on: a queue per step holds them.
type nodeSim struct {
	names    []string
	trackers []*nodestate.Tracker
	mu       sync.Mutex
	powered  []simEntry // power-ons not yet queued
	ons      atomic.Int64
	// Below: the simulation goroutine's own.
	gen   []uint32 // each node's boot, so that a power-on mid-boot drops the old boot's steps
	xfer  []*nodestate.TransferHandle
	queue [][]simEntry
}

type simEntry struct {
	at   time.Time // power-on
	node int32
	gen  uint32
}

func newNodeSim(names []string, trackers []*nodestate.Tracker) *nodeSim {
	return &nodeSim{names: names, trackers: trackers, gen: make([]uint32, len(names)),
		xfer: make([]*nodestate.TransferHandle, len(names)), queue: make([][]simEntry, len(simSteps))}
}

func (s *nodeSim) powerOn(i int) {
	s.ons.Add(1)
	s.mu.Lock()
	s.powered = append(s.powered, simEntry{at: time.Now(), node: int32(i)})
	s.mu.Unlock()
}

// run plays the boots until ctx ends, every 20 ms, on a thread of its own so that its CPU can be
// told apart from the loop's; it returns that CPU in seconds.
func (s *nodeSim) run(ctx context.Context) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return threadCPU() - cpu0
		case now := <-t.C:
			s.step(now)
		}
	}
}

func (s *nodeSim) step(now time.Time) {
	s.mu.Lock()
	powered := s.powered
	s.powered = nil
	s.mu.Unlock()
	for _, e := range powered {
		s.gen[e.node]++
		e.gen = s.gen[e.node]
		s.queue[0] = append(s.queue[0], e)
	}
	for k, st := range simSteps {
		q := s.queue[k]
		n := 0
		for ; n < len(q) && !now.Before(q[n].at.Add(st.after)); n++ {
			e := q[n]
			if e.gen != s.gen[e.node] {
				continue // powered on again since: that boot is over
			}
			s.apply(int(e.node), st)
			if k+1 < len(simSteps) {
				s.queue[k+1] = append(s.queue[k+1], e)
			}
		}
		s.queue[k] = append(q[:0], q[n:]...)
	}
}

func (s *nodeSim) apply(i int, st nodeStep) {
	tr, name := s.trackers[i], s.names[i]
	if x := s.xfer[i]; x != nil && st.add > 0 {
		x.Add(st.add)
		if st.end {
			tr.EndTransfer(name, x, -1, -1, true)
			s.xfer[i] = nil
		}
	}
	for _, ev := range st.events {
		tr.Observe(name, ev, "simulated")
	}
	if st.start != "" {
		s.xfer[i] = tr.StartTransfer(name, st.start, st.size)
	}
}
