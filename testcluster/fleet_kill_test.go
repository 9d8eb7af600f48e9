package testcluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/mapping"
)

// fleetKillServer boots every node on a power-on ramp and kills bs1 with SIGKILL once half of its
// 16 nodes are mid-boot (bound, not yet reported).
func fleetKillServer(t *testing.T, ctx context.Context, f *Fleet, fc *fleet.Client) {
	k := newServerKill(t, f, 1)
	k.bootAndKill(t, ctx)
	k.logVictimNodes(t)
	k.checkTakeover(t)
	for _, line := range takeoverLines(f, k.killWall) {
		t.Logf("server log: %s", line)
	}
	k.checkTakeoverMetrics(t, ctx)
	k.checkAddresses(t)
	fleetOneAnswerer(t, f, k.boot.Start)
	fleetRecordsHealthy(t, ctx, f, fc)
	k.comparePrediction(t, ctx)
}

// fleetRecordsHealthy waits (15 s at most) until every node's etcd record says healthy; else it
// logs the others.
func fleetRecordsHealthy(t *testing.T, ctx context.Context, f *Fleet, fc *fleet.Client) {
	t.Helper()
	recs, err := f.WaitHealthy(ctx, fc, 15*time.Second)
	if err != nil {
		for _, r := range recs {
			if r.State.String() != "healthy" {
				t.Logf("etcd record %s: %s on %s (%s)", r.Name, r.State, r.Server, r.Error)
			}
		}
		t.Errorf("etcd records: %v", err)
	}
}

// serverKill is fleetKillServer's boot: the victim, the ownership rule's assignments with every
// server live (home) and with the victim dead (after), and when the victim died.
type serverKill struct {
	f           *Fleet
	victim      string
	victimIdx   int
	victimIP    string
	home, after *mapping.Assignment
	nodes       []int // the victim's nodes (by home)

	boot     *FleetBoot
	killWall time.Time
	killAt   float64 // seconds after the batch start
}

// newServerKill plans the kill of server victimIdx: the rule's ownership before and after.
func newServerKill(t *testing.T, f *Fleet, victimIdx int) *serverKill {
	k := &serverKill{f: f, victim: f.Servers[victimIdx].Name, victimIdx: victimIdx, victimIP: f.Servers[victimIdx].IP}
	algo, batch := fleetRule(t, f)
	var err error
	if k.home, _, err = mapping.AssignOwners(f.Graph, algo, batch, nil, nil); err != nil {
		t.Fatal(err)
	}
	dead := make([]bool, len(f.Servers))
	dead[victimIdx] = true
	if k.after, _, err = mapping.AssignOwners(f.Graph, algo, batch, nil, dead); err != nil {
		t.Fatal(err)
	}
	for i := range f.Nodes {
		if int(k.home.Server[i]) == victimIdx {
			k.nodes = append(k.nodes, i)
		}
	}
	return k
}

// halfMidKiller is a boot's OnEvent that kills the victim once half of its nodes are mid-boot
// on it (bound to it, not yet reported).
type halfMidKiller struct {
	k        *serverKill
	mu       sync.Mutex
	mid      map[int]bool
	killed   bool
	killWall time.Time
	killErr  error
}

func (h *halfMidKiller) onEvent(ev NodeEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case ev.Name == "bound" && len(ev.Args) > 0 && ev.Args[0] == h.k.victimIP:
		h.mid[ev.Node] = true
	case ev.Name == "reported":
		delete(h.mid, ev.Node)
	}
	if !h.killed && len(h.mid) >= len(h.k.nodes)/2 {
		h.killed = true
		h.killWall, h.killErr = h.k.f.Kill(h.k.victim)
	}
}

// bootAndKill boots every node on the ramp, killing the victim on the way (halfMidKiller).
func (k *serverKill) bootAndKill(t *testing.T, ctx context.Context) {
	h := &halfMidKiller{k: k, mid: map[int]bool{}}
	boot, err := k.f.BootFleet(ctx, FleetBootOptions{Delays: fleetDelays(len(k.f.Nodes), fleetRamp), Timeout: 2 * time.Minute, OnEvent: h.onEvent})
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.killErr != nil {
		t.Fatal(h.killErr)
	}
	if !h.killed {
		t.Fatalf("%s never had half of its nodes mid-boot; boot: %v", k.victim, err)
	}
	if boot == nil {
		t.Fatalf("boot: %v", err) // BootFleet did not start: no timeline to check
	}
	k.boot, k.killWall = boot, h.killWall
	k.killAt = h.killWall.Sub(boot.Start).Seconds()
	if err != nil {
		t.Errorf("boot: %v", err)
	}
}

// doneAtKill says whether node i had reported health when the victim died.
func (k *serverKill) doneAtKill(i int) bool {
	e, ok := k.boot.Nodes[i].First("reported", 0)
	return ok && e.At <= k.killAt
}

// logVictimNodes logs where each of the victim's nodes was when it died.
func (k *serverKill) logVictimNodes(t *testing.T) {
	done, midBoot, notOn := 0, 0, 0
	for _, i := range k.nodes {
		if k.doneAtKill(i) {
			done++
		} else if e, ok := k.boot.Nodes[i].First("on", 0); ok && e.At <= k.killAt {
			midBoot++
		} else {
			notOn++
		}
	}
	t.Logf("kill -9 %s at %.2f s after the batch start: its %d nodes: %d done, %d mid-boot, %d not yet on",
		k.victim, k.killAt, len(k.nodes), done, midBoot, notOn)
}

// checkTakeover checks the takeover, from the kill to each taken-over node's first answer (its
// DHCP ACK, seen as udhcpc's bound) from its new owner: the rule's owner answers, within TTL + 2 s
// of the node's asking.
func (k *serverKill) checkTakeover(t *testing.T) {
	ttl := fleetTTL.Seconds()
	var lat []float64
	var rows []string
	for _, i := range k.nodes {
		if k.doneAtKill(i) {
			continue
		}
		if l, row, ok := k.checkNodeTakeover(t, i); ok {
			lat, rows = append(lat, l), append(rows, row)
		}
	}
	sort.Float64s(lat)
	if len(lat) == 0 {
		t.Fatalf("no node of %s was taken over", k.victim)
	}
	t.Logf("takeover as the clients saw it, kill to the new owner's first answer (the ACK, stamped by the node's udhcpc event script), over %d nodes: "+
		"min %.2f s, p50 %.2f s, p90 %.2f s, max %.2f s (lease TTL %.0f s; the clients ask again every 1 s, udhcpc -T 1, and a TFTP transfer cut by the death fails after curl's 4 s)",
		len(lat), lat[0], lat[len(lat)/2], lat[len(lat)*9/10], lat[len(lat)-1], ttl)
	sort.Strings(rows)
	t.Logf("per node: %s", strings.Join(rows, "; "))
	if lat[0] > ttl+2 {
		t.Errorf("the first answer to a node of %s came %.2f s after the kill, want at most TTL + 2 s = %.0f s", k.victim, lat[0], ttl+2)
	}
}

// checkNodeTakeover checks the first answer to node i after the kill: from the rule's new owner,
// at most TTL + 2 s after the node asked. It returns the seconds from the kill to the answer and
// the node's row for the log, or false when no answer came.
func (k *serverKill) checkNodeTakeover(t *testing.T, i int) (float64, string, bool) {
	tl := &k.boot.Nodes[i]
	b, ok := k.firstLiveAnswer(tl)
	if !ok {
		t.Errorf("%s: no DHCP answer from a live server after the kill", tl.Node)
		return 0, "", false
	}
	srv := k.f.ServerByIP(b.Args[0])
	if want := k.f.Servers[k.after.Server[i]].Name; srv != want {
		t.Errorf("%s: taken over by %s, the ownership rule says %s", tl.Node, srv, want)
	}
	// The node has asked since the kill, or since it powered on or its transfer from the dead
	// server failed, whichever is later: its DHCP attempt before the answer.
	asked := k.killAt
	var fails []string
	for _, e := range tl.Events {
		if e.Name == "dhcp" && e.At <= b.At {
			asked = max(k.killAt, e.At)
		}
		if e.Name == "fail" && e.At >= k.killAt-0.5 {
			fails = append(fails, fmt.Sprintf("%s at +%.2fs", strings.Join(e.Args, " "), e.At-k.killAt))
		}
	}
	row := fmt.Sprintf("%s->%s %.2fs (asking since +%.2fs, %d attempts, failed: %s)", tl.Node, srv, b.At-k.killAt, asked-k.killAt, tl.Count("dhcp"), strings.Join(fails, ", "))
	if ttl := fleetTTL.Seconds(); b.At-asked > ttl+2 {
		t.Errorf("%s: answered by %s %.2f s after it asked (%.2f s after the kill), want at most TTL + 2 s = %.0f s", tl.Node, srv, b.At-asked, b.At-k.killAt, ttl+2)
	}
	return b.At - k.killAt, row, true
}

// firstLiveAnswer is node tl's first DHCP answer after the kill from a server other than the
// victim. An ACK the victim sent just before it died can reach the node after the kill (it is
// stamped when the node's event script runs); checkAddresses checks that no answer came from the
// victim to an attempt begun after the kill.
func (k *serverKill) firstLiveAnswer(tl *FleetTimeline) (NodeEvent, bool) {
	for _, e := range tl.Events {
		if e.Name == "bound" && e.At >= k.killAt && len(e.Args) > 0 && e.Args[0] != k.victimIP {
			return e, true
		}
	}
	return NodeEvent{}, false
}

// checkTakeoverMetrics checks that the new owners' metrics count the takeover (and that /metrics
// works on a fleet member).
func (k *serverKill) checkTakeoverMetrics(t *testing.T, ctx context.Context) {
	moved := map[string]int{}
	for _, i := range k.nodes {
		moved[k.f.Servers[k.after.Server[i]].Name]++
	}
	for name, n := range moved {
		got, err := k.f.Metric(ctx, name, `bootfabric_fleet_takeover_nodes_total{from="`+k.victim+`"}`)
		if err != nil || int(got) != n {
			t.Errorf("%s: takeover metric %v (%v), want %d", name, got, err, n)
		}
		owned, err := k.f.Metric(ctx, name, "bootfabric_fleet_owned_nodes")
		if err != nil || int(owned) != len(k.nodes)+n {
			t.Errorf("%s: owns %v nodes (%v), want %d", name, owned, err, len(k.nodes)+n)
		}
	}
}

// checkAddresses checks that no address went to two MACs, every node's address is its own and
// the dead server answered nobody after the kill.
func (k *serverKill) checkAddresses(t *testing.T) {
	f := k.f
	byIP := map[string]string{}
	for i, tl := range k.boot.Nodes {
		for _, e := range tl.Events {
			if e.Name != "bound" || len(e.Args) < 2 {
				continue
			}
			if e.Args[1] != f.Nodes[i].IP {
				t.Errorf("%s (%s) got %s from %s, its reservation is %s", tl.Node, f.Nodes[i].MAC, e.Args[1], f.ServerByIP(e.Args[0]), f.Nodes[i].IP)
			}
			if o, ok := byIP[e.Args[1]]; ok && o != f.Nodes[i].MAC {
				t.Errorf("address %s given to %s and %s", e.Args[1], o, f.Nodes[i].MAC)
			}
			byIP[e.Args[1]] = f.Nodes[i].MAC
			if e.Args[0] != k.victimIP || e.At <= k.killAt {
				continue
			}
			if asked := attemptStart(&tl, e.At); asked > k.killAt {
				t.Errorf("%s: answered by the dead %s at %.2f s, to a DHCP attempt begun at %.2f s, after the kill at %.2f s", tl.Node, k.victim, e.At, asked, k.killAt)
			} else {
				t.Logf("%s: an answer of %s to its attempt of %.2f s arrived %.2f s after the kill", tl.Node, k.victim, asked, e.At-k.killAt)
			}
		}
	}
}

// attemptStart is when the DHCP attempt that ended in the answer at `at` began: the node's last
// "dhcp" event before it.
func attemptStart(tl *FleetTimeline, at float64) float64 {
	start := 0.0
	for _, e := range tl.Events {
		if e.Name == "dhcp" && e.At <= at {
			start = e.At
		}
	}
	return start
}

// firstBound returns each node's first bound time (0 when it never bound): its arrival for the
// simulator.
func firstBound(boot *FleetBoot) []float64 {
	first := make([]float64, len(boot.Nodes))
	for i := range boot.Nodes {
		if e, ok := boot.Nodes[i].First("bound", 0); ok {
			first[i] = e.At
		}
	}
	return first
}

// comparePrediction sets the batch beside `bootctl simulate --fail bs1@T --detect 3s` for the
// same cluster (and beside fabricsim.SimulateFailures, which the command must agree with within
// 1 %): within 15 %.
func (k *serverKill) comparePrediction(t *testing.T, ctx context.Context) {
	f, boot := k.f, k.boot
	first := firstBound(boot)
	// The round trip of an idle node to a live server, after the boot.
	rtt, err := f.RTT(ctx, Timeline{Node: f.Nodes[0].Name, Server: f.Servers[k.home.Server[0]].Name})
	if err != nil {
		t.Fatal(err)
	}
	pred, err := f.PredictFailures(ctx, "bcda", f.Opt.Files, rtt, first, []fabricsim.ServerFailure{{Server: k.victimIdx, Seconds: k.killAt}}, fleetTTL.Seconds())
	if err != nil {
		t.Fatal(err)
	}
	fs := pred.Failure
	for _, s := range fs.Servers {
		t.Logf("predicted takeover of %s at %.2f s, detected %.2f s: %d mid-boot, %d not started, %d done, new owners %v",
			s.Server, s.FailSeconds, s.DetectedSeconds, s.MidBoot, s.NotStarted, s.Done, s.NewOwners)
	}
	// The same prediction by the command a user runs.
	cli, cliBase, argv, err := f.SimulateCommand(ctx, f.Opt.Bootctl, "bcda", f.Opt.Files, rtt, first, fmt.Sprintf("%s@%.3fs", k.victim, k.killAt), fleetTTL)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", strings.Join(argv[1:], " "))
	if d := pctErr(cli, pred.BatchSeconds); d > 1 || d < -1 {
		t.Errorf("bootctl simulate --fail predicts %.3f s, fabricsim.SimulateFailures %.3f s", cli, pred.BatchSeconds)
	}
	e := pctErr(boot.Batch, cli)
	t.Logf("batch: measured %.2f s, bootctl simulate --fail predicts %.2f s (%+.1f%%; %.2f s without the failure; SimulateFailures %.2f s, %d taken over, %d restarted); host cpu %.0f%% of %d cores; rtt %.3f ms",
		boot.Batch, cli, e, cliBase, pred.BatchSeconds, fs.TakenOver, fs.Restarted, boot.CPU.Busy*100, boot.CPU.Cores, rtt*1000)
	if e > 15 || e < -15 {
		t.Errorf("batch with the failure: measured %.2f s vs predicted %.2f s: %+.1f%%, want within 15%%", boot.Batch, cli, e)
	}
}
