package integration

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap/zaptest"
)

// fleetMachine is the mini machine's shape with 8 nodes per board: 2 supernodes x 4 boards x 8
// nodes = 64 nodes and 4 boot servers on 2 cascade switches, at mini's capacities. With bcda each
// server has one board in each supernode, and its 16 nodes share its NIC.
func fleetMachine() *topology.Machine {
	return &topology.Machine{
		Name:        "fleet64",
		Description: "mini with 8 nodes per board: 64 nodes, 4 boot servers",
		Levels: []topology.LevelSpec{
			{Name: "supernode", Prefix: "s", Count: 2, Uplink: &topology.LinkSpec{Segment: "N3", CapacityMbps: 2000, LatencyUS: 10}},
			{Name: "board", Prefix: "b", Count: 4, Uplink: &topology.LinkSpec{Segment: "N2", CapacityMbps: 100, LatencyUS: 10}},
			{Name: "node", Prefix: "n", Count: 8, Uplink: &topology.LinkSpec{Segment: "N1", CapacityMbps: 100, LatencyUS: 10}},
		},
		Servers: topology.ServerSpec{
			Count: 4, PerCascade: 2,
			NIC:           topology.LinkSpec{Segment: "N5", CapacityMbps: 100, LatencyUS: 10},
			CascadeUplink: &topology.LinkSpec{Segment: "N4", CapacityMbps: 2000, LatencyUS: 10},
		},
	}
}

const (
	// fleetScale shapes fleetMachine to 20 Mb/s server NICs: with 2 MB per node a server's 16
	// nodes take about 14 s.
	fleetScale = 0.2
	// fleetRamp spreads the nodes' power-on over 8 s, interleaved over the boards, so that when a
	// server dies some of its nodes are done, some mid-boot and some not yet on.
	fleetRamp = 8.0
	fleetTTL  = 3 * time.Second
)

// fleetDelays gives node i of 64 its power-on time: the boards' nodes interleaved over the ramp.
func fleetDelays(n int, ramp float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64((i%8)*(n/8)+i/8) / float64(n) * ramp
	}
	return out
}

// TestFleet is issue 12's netns fleet: 4 boot servers (`bootctl serve --etcd --name bsN` after
// `bootctl fleet apply`) and 64 container nodes under bcda on a shaped machine, etcd (three
// members) in the host's namespace on a management network of its own. One boot loses a server
// to kill -9 while about half of its nodes are mid-boot; the survivors take them over.
func TestFleet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f, fc, etcd := fleetSetup(t, ctx)
	t.Run("KillServer", func(t *testing.T) { fleetKillServer(t, ctx, f, fc) })
	t.Run("EtcdMemberKilled", func(t *testing.T) {
		fleetRestore(t, ctx, f)
		fleetEtcdMemberKilled(t, ctx, f, fc, etcd)
	})
	t.Run("EtcdDown", func(t *testing.T) {
		fleetRestore(t, ctx, f)
		fleetEtcdDown(t, ctx, f, fc, etcd)
	})
}

// fleetSpec is the fleet cluster fleetSetupSpec brings up.
type fleetSpec struct {
	Machine *topology.Machine
	Scale   float64
	TTL     time.Duration
	Files   BootFiles
}

// fleetSetup brings up the fleet cluster: fleetMachine's namespaces, the management bridge,
// etcd with three members on it, `bootctl fleet apply` and the four servers; everything is removed
// when the test ends.
func fleetSetup(t *testing.T, ctx context.Context) (*Fleet, *fleet.Client, *etcdtest.Cluster) {
	return fleetSetupSpec(t, ctx, fleetSpec{Machine: fleetMachine(), Scale: fleetScale, TTL: fleetTTL,
		Files: BootFiles{NBP: debianNBP, Kernel: 500_000, Initrd: 1_500_000}})
}

// fleetSetupSpec is fleetSetup for the machine, scale, lease TTL and files of spec.
func fleetSetupSpec(t *testing.T, ctx context.Context, spec fleetSpec) (*Fleet, *fleet.Client, *etcdtest.Cluster) {
	needRoot(t, "busybox", "curl", "udhcpc")
	testenv.NeedFile(t, debianNBP, "ipxe")
	testenv.NeedTool(t, "etcd", "etcd-server")
	began := time.Now()
	bin := buildBootctl(t)
	log := zaptest.NewLogger(t)
	c, err := Up(ctx, Spec{Name: testName(t), Machine: spec.Machine, Scale: spec.Scale, StateDir: t.TempDir()}, log)
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last registered first: the checks below after downAtCleanup's Down.
	t.Cleanup(func() {
		if exec.Command("ip", "link", "show", "dev", mgmtBridge(c.Name)).Run() == nil {
			t.Errorf("management bridge %s left after down", mgmtBridge(c.Name))
		}
		t.Logf("test took %.0f s", time.Since(began).Seconds())
	})
	downAtCleanup(t, c)
	t.Logf("cluster up: %d namespaces in %.1f s", len(c.Namespaces), time.Since(began).Seconds())
	mgmt := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 214, byte(os.Getpid() % 256), 0}), 24)
	host, err := c.AddMgmt(ctx, mgmt)
	if err != nil {
		t.Fatal(err)
	}
	etcd := etcdtest.Start(t, etcdtest.Options{Members: 3, ClientHost: host.String()})
	f, err := c.StartFleet(ctx, FleetOptions{Bootctl: bin, Mapping: "bcda", Files: spec.Files, Etcd: etcd.Endpoints, Fleet: "t", TTL: spec.TTL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range c.Servers {
				b, _ := os.ReadFile(f.LogPath(s.Name))
				t.Logf("server %s log (end):\n%s", s.Name, tail(string(b), 15))
			}
		}
	})
	fc, err := f.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fc.Close() })
	t.Logf("fleet of %d servers up (configuration by %s) at %.1f s; etcd %v", len(c.Servers), f.Applied, time.Since(began).Seconds(), etcd.Endpoints)
	return f, fc, etcd
}

// fleetRestore brings back any server a phase killed and waits until ownership is the full
// fleet's again: a returning server reclaims its nodes (none is mid-boot between phases).
func fleetRestore(t *testing.T, ctx context.Context, f *Fleet) {
	t.Helper()
	start := time.Now()
	since := map[string]time.Time{}
	for _, s := range f.Servers {
		if f.Pid(s.Name) != 0 {
			continue
		}
		since[s.Name] = time.Now().Add(-time.Millisecond)
		if err := f.StartServer(ctx, s.Name); err != nil {
			t.Fatal(err)
		}
		if err := f.WaitServer(ctx, s.Name); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s restarted", s.Name)
	}
	if err := f.WaitOwned(ctx, len(f.Nodes)/len(f.Servers), since, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("every server owns its %d nodes again after %.1f s", len(f.Nodes)/len(f.Servers), time.Since(start).Seconds())
}

// fleetBootAsync boots every node on the ramp in a goroutine; the channel gets the result.
type fleetBootResult struct {
	boot *FleetBoot
	err  error
}

func fleetBootAsync(ctx context.Context, f *Fleet, onEvent func(NodeEvent)) <-chan fleetBootResult {
	out := make(chan fleetBootResult, 1)
	go func() {
		b, err := f.BootFleet(ctx, FleetBootOptions{Delays: fleetDelays(len(f.Nodes), fleetRamp), Timeout: 90 * time.Second, OnEvent: onEvent})
		out <- fleetBootResult{b, err}
	}()
	return out
}

// fleetRule returns the fleet's mapping (bcda, as StartFleet's callers here configure it) and the
// batch of all its nodes, for mapping.AssignOwners.
func fleetRule(t *testing.T, f *Fleet) (mapping.Algo, []int) {
	t.Helper()
	algo, err := mapping.ParseAlgo("bcda", f.Graph.Hierarchy())
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]int, len(f.Nodes))
	for i := range batch {
		batch[i] = i
	}
	return algo, batch
}

// check reports the boot's error and ends the test when there is no result to check further.
func (r fleetBootResult) check(t *testing.T) {
	t.Helper()
	if r.err != nil {
		t.Errorf("boot: %v", r.err)
	}
	if r.boot == nil {
		t.FailNow()
	}
}

// afterBound returns a channel closed once n "bound" events happened (a node bound again counts
// again), and the FleetBootOptions.OnEvent that counts them.
func afterBound(n int) (<-chan struct{}, func(NodeEvent)) {
	reached := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	bound := 0
	return reached, func(ev NodeEvent) {
		if ev.Name != "bound" {
			return
		}
		mu.Lock()
		bound++
		if bound >= n {
			once.Do(func() { close(reached) })
		}
		mu.Unlock()
	}
}

// fleetNoRetries checks that every node booted at its first attempt with no failed step.
func fleetNoRetries(t *testing.T, boot *FleetBoot) {
	t.Helper()
	bad := 0
	for _, tl := range boot.Nodes {
		if tl.Count("dhcp") != 1 || tl.Count("fail") != 0 {
			bad++
			var fails []string
			for _, e := range tl.Events {
				if e.Name == "fail" {
					fails = append(fails, fmt.Sprintf("%s at %.2fs", strings.Join(e.Args, " "), e.At))
				}
			}
			t.Errorf("%s: %d boot attempts, failed steps: %s", tl.Node, tl.Count("dhcp"), strings.Join(fails, ", "))
		}
	}
	if bad == 0 {
		t.Logf("all %d nodes booted at their first attempt, no step failed; batch %.2f s", len(boot.Nodes), boot.Batch)
	}
}

// fleetSameServers checks that no server was restarted (same pids) and none took nodes over
// since t.
func fleetSameServers(t *testing.T, f *Fleet, pids map[string]int, since time.Time) {
	t.Helper()
	for name, pid := range pids {
		if got := f.Pid(name); got != pid {
			t.Errorf("server %s: pid %d, was %d", name, got, pid)
		}
	}
	for _, line := range takeoverLines(f, since) {
		if strings.Contains(line, " takeover ") {
			t.Errorf("unexpected takeover: %s", line)
		}
	}
}

// fleetOneAnswerer checks from the servers' logs that no two servers answered one node's DHCP
// within 1.5 s of each other since t (a takeover answers after the lease TTL).
func fleetOneAnswerer(t *testing.T, f *Fleet, since time.Time) {
	t.Helper()
	ans := f.DHCPAnswers(since)
	dups := DoubleAnswers(ans, 1500*time.Millisecond)
	for i, d := range dups {
		if i == 5 {
			t.Errorf("... %d more", len(dups)-5)
			break
		}
		t.Errorf("two servers answered %s: %s %s at %s, %s %s at %s", d[0].MAC, d[0].Server, d[0].Outcome, d[0].At.Format("15:04:05.000"),
			d[1].Server, d[1].Outcome, d[1].At.Format("15:04:05.000"))
	}
	if len(dups) == 0 {
		t.Logf("%d DHCP answers in the servers' logs, never two servers for one node at once", len(ans))
	}
}

func fleetPids(f *Fleet) map[string]int {
	out := map[string]int{}
	for _, s := range f.Servers {
		out[s.Name] = f.Pid(s.Name)
	}
	return out
}

// fleetEtcdMemberKilled boots every node and kills the etcd leader (SIGKILL) once half of the
// nodes are bound: the boot completes with no node failed, no server restarted or taken over.
func fleetEtcdMemberKilled(t *testing.T, ctx context.Context, f *Fleet, fc *fleet.Client, etcd *etcdtest.Cluster) {
	leader, err := etcdLeader(etcd.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	pids := fleetPids(f)
	half, onEvent := afterBound(len(f.Nodes) / 2)
	res := fleetBootAsync(ctx, f, onEvent)
	var killWall time.Time
	select {
	case <-half:
		killWall = time.Now()
		etcd.Member(leader).Kill()
	case r := <-res:
		t.Fatalf("boot ended before half of the nodes were bound: %v", r.err)
	}
	r := <-res
	r.check(t)
	t.Logf("etcd leader %s killed at %.2f s after the batch start", etcd.Member(leader).Name, killWall.Sub(r.boot.Start).Seconds())
	fleetNoRetries(t, r.boot)
	fleetOneAnswerer(t, f, r.boot.Start)
	if _, err := f.WaitHealthy(ctx, fc, 15*time.Second); err != nil {
		t.Errorf("etcd records with a member down: %v", err)
	}
	fleetSameServers(t, f, pids, killWall)
	etcd.Member(leader).Restart()
}

// fleetEtcdDown boots every node on the ramp and stops all three etcd members for 10 s once a
// few nodes are bound: the servers, fenced, keep answering their (home) nodes' DHCP with the
// reserved addresses and serve the boot; when etcd returns, every node's record says healthy,
// every server is a valid member again, and no server was restarted.
func fleetEtcdDown(t *testing.T, ctx context.Context, f *Fleet, fc *fleet.Client, etcd *etcdtest.Cluster) {
	pids := fleetPids(f)
	few, onEvent := afterBound(4)
	res := fleetBootAsync(ctx, f, onEvent)
	select {
	case <-few:
	case r := <-res:
		t.Fatalf("boot ended before 4 nodes were bound: %v", r.err)
	}
	out := stopEtcd(etcd, 10*time.Second)
	r := <-res
	r.check(t)
	out.checkBootGoesOn(t, r.boot)
	fleetNoRetries(t, r.boot)
	fleetOneAnswerer(t, f, r.boot.Start)
	out.waitServersBack(t, ctx, f, fc)
	out.checkRecordsHealthy(t, ctx, f, fc)
	out.logFleetLines(t, f)
	fleetSameServers(t, f, pids, out.down)
}

// etcdOutage is when every etcd member was stopped (down), started again (up) and answered again
// (healthy), as wall times.
type etcdOutage struct {
	down, up, healthy time.Time
}

// stopEtcd stops every member of etcd for d, then restarts them all and waits until the cluster
// answers.
func stopEtcd(etcd *etcdtest.Cluster, d time.Duration) etcdOutage {
	for _, m := range etcd.Members {
		m.Stop()
	}
	var out etcdOutage
	out.down = time.Now()
	time.Sleep(d)
	out.up = time.Now()
	etcd.RestartAll()
	out.healthy = time.Now()
	return out
}

// checkBootGoesOn checks that nodes kept booting while etcd was down: some bound once every
// server was fenced, some fetched their kernel.
func (o etcdOutage) checkBootGoesOn(t *testing.T, boot *FleetBoot) {
	t.Helper()
	down, up := o.down.Sub(boot.Start).Seconds(), o.up.Sub(boot.Start).Seconds()
	// Fenced: from the last renewal before the outage plus TTL - margin, at most TTL after.
	fenced := down + fleetTTL.Seconds()
	counts := map[string]int{}
	boundFenced := 0
	for _, tl := range boot.Nodes {
		for _, e := range tl.Events {
			if e.At < down || e.At > up {
				continue
			}
			counts[e.Name]++
			if e.Name == "bound" && e.At >= fenced {
				boundFenced++
			}
		}
	}
	t.Logf("etcd down from %.2f s to %.2f s after the batch start (healthy again %.2f s later); meanwhile %d nodes bound (%d while every server was fenced), %d fetched their kernel, %d reported healthy",
		down, up, o.healthy.Sub(o.up).Seconds(), counts["bound"], boundFenced, counts["kernel"], counts["reported"])
	if boundFenced == 0 || counts["kernel"] == 0 {
		t.Errorf("nodes did not keep booting while etcd was down: %v", counts)
	}
}

// waitServersBack waits (15 s at most) until every server is a live member in etcd again, and
// each one's latest word on its lease (since the outage began) says renewed or re-joined.
func (o etcdOutage) waitServersBack(t *testing.T, ctx context.Context, f *Fleet, fc *fleet.Client) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		members, merr := f.Members(ctx, fc)
		notBack := append(leaseNotBack(f, o.down), membershipNotValid(ctx, f)...)
		if merr == nil && len(members) == len(f.Servers) && len(notBack) == 0 {
			t.Logf("all %d servers live members, none fenced (checked %.1f s after etcd returned, when the boot had ended)", len(members), time.Since(o.up).Seconds())
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("after etcd returned: members %v (%v); not back: %v", members, merr, notBack)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// leaseNotBack names the servers whose latest log line about their lease since t says neither
// renewed nor re-joined, with that line: "bs1: fleet re-join failed; retrying".
func leaseNotBack(f *Fleet, since time.Time) []string {
	var out []string
	for _, s := range f.Servers {
		var last string
		for _, l := range f.LogLines(s.Name, "", since) {
			switch l.Msg {
			case "fleet lease renewal failed; retrying", "fleet lease lost (expired or revoked in etcd); re-joining", "fleet re-join failed; retrying",
				"fleet lease renewed again", "fleet membership re-joined":
				last = l.Msg
			}
		}
		if last != "" && last != "fleet lease renewed again" && last != "fleet membership re-joined" {
			out = append(out, s.Name+": "+last)
		}
	}
	return out
}

// membershipNotValid names the servers whose bootfabric_fleet_membership_valid metric is not 1.
func membershipNotValid(ctx context.Context, f *Fleet) []string {
	var out []string
	for _, s := range f.Servers {
		if v, err := f.Metric(ctx, s.Name, "bootfabric_fleet_membership_valid"); err != nil || v != 1 {
			out = append(out, fmt.Sprintf("%s: membership_valid %v (%v)", s.Name, v, err))
		}
	}
	return out
}

// checkRecordsHealthy waits (20 s at most) until every node's etcd record says healthy; else it
// logs each other record with the servers' log lines about its node since the outage.
func (o etcdOutage) checkRecordsHealthy(t *testing.T, ctx context.Context, f *Fleet, fc *fleet.Client) {
	t.Helper()
	recs, err := f.WaitHealthy(ctx, fc, 20*time.Second)
	if err == nil {
		t.Logf("every node's etcd record healthy %.1f s after etcd returned", time.Since(o.up).Seconds())
		return
	}
	n := 0
	for _, rec := range recs {
		if rec.State.String() != "healthy" {
			n++
			o.logRecord(t, f, rec)
		}
	}
	t.Errorf("etcd records after etcd returned: %v (%d of %d not healthy)", err, n, len(recs))
}

// logRecord logs a node's etcd record and the servers' log lines about it (or about saving
// state) since the outage.
func (o etcdOutage) logRecord(t *testing.T, f *Fleet, rec bootsrv.NodeStatus) {
	t.Helper()
	t.Logf("etcd record %s: %s on %s since %s (last event %s at %s, attempt %d)", rec.Name, rec.State, rec.Server,
		rec.Since.Format("15:04:05.000"), rec.LastEvent, rec.LastSeen.Format("15:04:05.000"), rec.Attempt)
	for _, srv := range f.Servers {
		for _, l := range f.LogLines(srv.Name, "", o.down) {
			if l.Fields["node"] == rec.Name || strings.Contains(l.Msg, "sav") {
				t.Logf("  %s %s %s %v", srv.Name, l.At.Format("15:04:05.000"), l.Msg, l.Fields)
			}
		}
	}
}

// logFleetLines logs, for the record, each server's fleet log lines since etcd went down (the
// first and last 3 when there are more than 6).
func (o etcdOutage) logFleetLines(t *testing.T, f *Fleet) {
	t.Helper()
	for _, s := range f.Servers {
		var msgs []string
		for _, l := range f.LogLines(s.Name, "", o.down) {
			if strings.HasPrefix(l.Msg, "fleet ") && l.Msg != "fleet ownership" {
				msgs = append(msgs, fmt.Sprintf("+%.1fs %s", l.At.Sub(o.down).Seconds(), l.Msg))
			}
		}
		if len(msgs) > 6 {
			msgs = append(msgs[:3], append([]string{"..."}, msgs[len(msgs)-3:]...)...)
		}
		t.Logf("%s since etcd went down: %s", s.Name, strings.Join(msgs, "; "))
	}
}

// etcdLeader returns the index of the cluster's leader, asking each member's status through
// etcd's JSON gateway.
func etcdLeader(endpoints []string) (int, error) {
	hc := &http.Client{Timeout: 2 * time.Second}
	for i, ep := range endpoints {
		resp, err := hc.Post("http://"+ep+"/v3/maintenance/status", "application/json", strings.NewReader("{}"))
		if err != nil {
			continue
		}
		var st struct {
			Header struct {
				MemberID string `json:"member_id"`
			} `json:"header"`
			Leader string `json:"leader"`
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err == nil && st.Leader != "" && st.Header.MemberID == st.Leader {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no etcd member at %v says it is the leader", endpoints)
}

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
	t.Helper()
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
	t.Helper()
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
	t.Helper()
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
	t.Helper()
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
	t.Logf("takeover, kill to the new owner's first answer, over %d nodes: min %.2f s, median %.2f s, max %.2f s (TTL %.0f s)",
		len(lat), lat[0], lat[len(lat)/2], lat[len(lat)-1], ttl)
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
	t.Helper()
	tl := &k.boot.Nodes[i]
	b, ok := tl.First("bound", k.killAt)
	if !ok {
		t.Errorf("%s: no DHCP answer after the kill", tl.Node)
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

// checkTakeoverMetrics checks that the new owners' metrics count the takeover (and that /metrics
// works on a fleet member).
func (k *serverKill) checkTakeoverMetrics(t *testing.T, ctx context.Context) {
	t.Helper()
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
	t.Helper()
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
			if e.Args[0] == k.victimIP && e.At > k.killAt {
				t.Errorf("%s: answered by the dead %s at %.2f s", tl.Node, k.victim, e.At)
			}
		}
	}
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
	t.Helper()
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

// takeoverLines returns the survivors' log lines about ownership after t.
func takeoverLines(f *Fleet, after time.Time) []string {
	var out []string
	for _, s := range f.Servers {
		fh, err := os.Open(f.LogPath(s.Name))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, "\ttakeover\t") && !strings.Contains(line, "\tfleet ownership\t") {
				continue
			}
			fields := strings.Fields(line)
			at, err := time.Parse("2006-01-02T15:04:05.000Z0700", fields[0])
			if err != nil || at.Before(after.Add(-time.Millisecond)) {
				continue
			}
			out = append(out, fmt.Sprintf("%s +%.2fs %s", s.Name, at.Sub(after).Seconds(), strings.Join(fields[1:], " ")))
		}
		fh.Close()
	}
	slices.Sort(out)
	return out
}

const (
	// chaosRounds servers are killed and restarted, one at a time, during one boot.
	chaosRounds = 5
	// chaosTTL is the chaos fleet's membership lease: 2 s keeps a round (kill, takeover, restart,
	// member again) near 4 s.
	chaosTTL = 2 * time.Second
	// chaosRamp spreads the 128 nodes' power-on over 10 s.
	chaosRamp = 10.0
)

// chaosMachine is fleetMachine with 16 nodes per board: 2 supernodes x 4 boards x 16 nodes = 128
// nodes and 4 boot servers. Shaped at fleetScale with 2 MB per node, each server's 32 nodes take
// about 27 s without a failure, so that the rounds fall inside the boot.
func chaosMachine() *topology.Machine {
	m := fleetMachine()
	m.Name = "fleet128"
	m.Description = "mini with 16 nodes per board: 128 nodes, 4 boot servers"
	m.Levels[2].Count = 16
	return m
}

// chaosEvents collects a running boot's node events (BootFleet's OnEvent).
type chaosEvents struct {
	mu     sync.Mutex
	start  time.Time
	events []NodeEvent
	bound  int
	began  chan struct{} // closed once 8 nodes are bound
	once   sync.Once
}

func (c *chaosEvents) add(ev NodeEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, ev)
	if ev.Name == "bound" {
		c.bound++
		if c.bound >= 8 {
			c.once.Do(func() { close(c.began) })
		}
	}
}

// snapshot returns the events so far and the gate's opening.
func (c *chaosEvents) snapshot() ([]NodeEvent, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events), c.start
}

// chaosRound is what one round did, as wall times.
type chaosRound struct {
	victim                            string
	kill, takeover, restart, member   time.Time
	released                          time.Time // every survivor saw the victim back
	mid                               []int     // nodes mid-boot on the victim at the kill
	unfinished                        int       // nodes not yet reported at the kill
	answered, wrongOwner, notAsked    int       // mid nodes answered after the kill by the rule's owner, by another, not before the restart
	firstAnswer                       float64   // seconds from the kill to the first of those answers
	justReported                      []string  // nodes that reported health to the victim less than 1 s before the kill
	takenOver                         map[string]int
	healthyReported, healthyEtcd, all int
}

// TestFleetChaos is issue 12's chaos test: a 128-node boot on 4 fleet servers (bcda, lease TTL
// 2 s) during which 5 rounds each kill -9 a random server (seeded, logged; BOOTFABRIC_CHAOS_SEED
// repeats a run), wait until the survivors have taken its nodes over and answer them, restart it
// (`bootctl serve --etcd ... --name` again, same state directory) and wait until it is a member
// again. In every round and at the end: no address acknowledged to two MACs (the nodes' leases,
// the servers' DHCP logs, etcd's records), no two live servers answering one node at once (the
// servers' DHCP logs), the dead server's mid-boot nodes answered by the rule's new owners; at the
// end every node reported health and every node's record in etcd says healthy.
func TestFleetChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: 5 server kills during a 128-node netns boot; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f, fc, _ := fleetSetupSpec(t, ctx, fleetSpec{Machine: chaosMachine(), Scale: fleetScale, TTL: chaosTTL,
		Files: BootFiles{NBP: debianNBP, Kernel: 500_000, Initrd: 1_500_000}})
	rng := chaosRand(t)
	c := newChaos(t, f, fc)
	res, bootDone := c.startBoot(ctx)
	// A round that fails ends the boot (its nodes' scripts) before the cluster is taken down.
	defer func() { cancel(); <-bootDone }()
	select {
	case <-c.col.began:
	case r := <-res:
		t.Fatalf("boot ended before 8 nodes were bound: %v", r.err)
	}
	rounds, r := c.runRounds(t, ctx, rng, res)
	r.check(t)
	c.checkRoundsDuringBoot(t, rounds, r.boot)
	c.logBoot(t, r.boot)
	c.checkEnd(t, ctx, r.boot)
	for _, s := range f.Servers {
		logServerWarnings(t, f, s.Name)
	}
}

// chaosRand returns the chaos test's random source, seeded from BOOTFABRIC_CHAOS_SEED when set
// (else the clock), and logs the seed.
func chaosRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("BOOTFABRIC_CHAOS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("BOOTFABRIC_CHAOS_SEED=%q: %v", v, err)
		}
		seed = s
	}
	t.Logf("chaos seed %d (BOOTFABRIC_CHAOS_SEED=%d repeats the victims and pauses)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// chaos is TestFleetChaos's fleet under test and what the rounds share: the rule's ownership
// with each server dead, the boot's events so far, the invariants' checker and every kill.
type chaos struct {
	f  *Fleet
	fc *fleet.Client
	// owners[j] is the rule's ownership with server j dead (the only one dead in a round).
	owners    []*mapping.Assignment
	serverIdx map[string]int
	col       *chaosEvents
	chk       *chaosChecker
	kills     map[string][]time.Time // each server's kills, for chk
}

func newChaos(t *testing.T, f *Fleet, fc *fleet.Client) *chaos {
	t.Helper()
	c := &chaos{f: f, fc: fc, owners: make([]*mapping.Assignment, len(f.Servers)), serverIdx: map[string]int{},
		col: &chaosEvents{began: make(chan struct{})}, chk: newChaosChecker(f), kills: map[string][]time.Time{}}
	algo, batch := fleetRule(t, f)
	for j, s := range f.Servers {
		dead := make([]bool, len(f.Servers))
		dead[j] = true
		var err error
		if c.owners[j], _, err = mapping.AssignOwners(f.Graph, algo, batch, nil, dead); err != nil {
			t.Fatal(err)
		}
		c.serverIdx[s.Name] = j
	}
	return c
}

// startBoot boots every node on the chaos ramp (10 attempts each) in a goroutine, events to
// c.col; the first channel gets the result, the second is closed when the boot has returned.
func (c *chaos) startBoot(ctx context.Context) (<-chan fleetBootResult, <-chan struct{}) {
	res := make(chan fleetBootResult, 1)
	bootDone := make(chan struct{})
	go func() {
		defer close(bootDone)
		b, err := c.f.BootFleet(ctx, FleetBootOptions{Delays: fleetDelays(len(c.f.Nodes), chaosRamp), Attempts: 10, Timeout: 150 * time.Second,
			OnEvent: c.col.add, OnStart: func(at time.Time) { c.col.mu.Lock(); c.col.start = at; c.col.mu.Unlock() }})
		res <- fleetBootResult{b, err}
	}()
	return res, bootDone
}

// runRounds runs up to chaosRounds rounds while the boot lasts and the test has not failed, and
// returns them with the boot's result.
func (c *chaos) runRounds(t *testing.T, ctx context.Context, rng *rand.Rand, res <-chan fleetBootResult) ([]chaosRound, fleetBootResult) {
	t.Helper()
	var rounds []chaosRound
	for k := 1; k <= chaosRounds && !t.Failed(); k++ {
		rounds = append(rounds, c.round(t, ctx, k, rng))
		select {
		case r := <-res:
			return rounds, r // the boot ended early
		default:
		}
	}
	return rounds, <-res
}

// round is round k: kill a random live server while some of its nodes are mid-boot, wait for
// the survivors' takeover and the answers to its nodes, restart it and wait until it is a member
// again and the survivors released its nodes; then check the invariants so far.
func (c *chaos) round(t *testing.T, ctx context.Context, k int, rng *rand.Rand) chaosRound {
	t.Helper()
	// A pause of 0.3-1.3 s between rounds (and before the first kill).
	time.Sleep(time.Duration(300+rng.IntN(1000)) * time.Millisecond)
	rd := chaosRound{victim: c.pickVictim(t, k, rng)}
	c.noteBeforeKill(&rd)
	var err error
	if rd.kill, err = c.f.Kill(rd.victim); err != nil {
		t.Fatalf("round %d: %v", k, err)
	}
	c.kills[rd.victim] = append(c.kills[rd.victim], rd.kill)
	c.waitTakeover(t, k, &rd)
	// Down a further 0-1 s, then back with the same state directory.
	time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
	c.waitReaped(t, k, rd.victim)
	c.checkMidAnswers(t, k, &rd)
	c.restart(t, ctx, k, &rd)
	c.waitReleased(t, k, &rd)
	rd.healthyReported, rd.healthyEtcd, rd.all = c.chk.check(t, ctx, c.fc, fmt.Sprintf("round %d", k), c.col, c.kills)
	c.logRound(t, k, rd)
	return rd
}

// pickVictim checks that every server is live and picks one at random.
func (c *chaos) pickVictim(t *testing.T, k int, rng *rand.Rand) string {
	t.Helper()
	var live []string
	for _, s := range c.f.Servers {
		if c.f.Pid(s.Name) != 0 {
			live = append(live, s.Name)
		}
	}
	if len(live) != len(c.f.Servers) {
		t.Fatalf("round %d: live servers %v, want all %d", k, live, len(c.f.Servers))
	}
	return live[rng.IntN(len(live))]
}

// noteBeforeKill notes, just before rd's kill, the victim's mid-boot nodes (last bound to it, not
// reported), how many nodes are unfinished, and the nodes whose health report the victim
// acknowledged in the last second (before its state flush reached etcd, perhaps): named in the
// round's line.
func (c *chaos) noteBeforeKill(rd *chaosRound) {
	victimIP := c.f.Servers[c.serverIdx[rd.victim]].IP
	evs, start := c.col.snapshot()
	lastBound, reported := map[int]string{}, map[int]bool{}
	for _, e := range evs {
		switch e.Name {
		case "bound":
			lastBound[e.Node] = e.Args[0]
		case "reported":
			reported[e.Node] = true
		}
	}
	rd.unfinished = len(c.f.Nodes) - len(reported)
	for _, e := range evs {
		if ago := time.Since(start.Add(time.Duration(e.At * float64(time.Second)))); e.Name == "reported" && ago < time.Second && lastBound[e.Node] == victimIP {
			rd.justReported = append(rd.justReported, fmt.Sprintf("%s %.0f ms before", c.f.Nodes[e.Node].Name, float64(ago.Milliseconds())))
		}
	}
	for i, ip := range lastBound {
		if ip == victimIP && !reported[i] {
			rd.mid = append(rd.mid, i)
		}
	}
	slices.Sort(rd.mid)
}

// survivorsNotYet names the servers other than victim whose latest ownership since t is not
// what done says.
func (c *chaos) survivorsNotYet(victim string, since time.Time, done func(LogLine) bool) []string {
	var notYet []string
	for _, s := range c.f.Servers {
		if s.Name == victim {
			continue
		}
		if l, ok := c.f.LastOwnership(s.Name, since); !ok || !done(l) {
			notYet = append(notYet, s.Name)
		}
	}
	return notYet
}

// waitTakeover waits until every survivor applies the rule with the victim dead (bounded: TTL +
// 4 s), notes the takeover the survivors logged, then waits until the victim's mid-boot nodes
// get their answers (bounded: 3 s more).
func (c *chaos) waitTakeover(t *testing.T, k int, rd *chaosRound) {
	t.Helper()
	deadline := rd.kill.Add(chaosTTL + 4*time.Second)
	for {
		notYet := c.survivorsNotYet(rd.victim, rd.kill, func(l LogLine) bool { return slices.Contains(l.Dead(), rd.victim) })
		if len(notYet) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("round %d: %v did not apply the ownership with %s dead within TTL + 4 s of the kill", k, notYet, rd.victim)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	rd.takenOver, rd.takeover = c.takeoverLogged(rd.victim, rd.kill)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		by, _ := c.answeredSince(rd.kill)
		if !slices.ContainsFunc(rd.mid, func(i int) bool { _, ok := by[i]; return !ok }) {
			break
		}
	}
}

// takeoverLogged returns how many of victim's nodes each survivor logged taking over since
// kill, and the time of the first takeover (or, failing that, of the first ownership with the
// victim dead) a survivor logged.
func (c *chaos) takeoverLogged(victim string, kill time.Time) (map[string]int, time.Time) {
	takenOver := map[string]int{}
	var first time.Time
	for _, s := range c.f.Servers {
		if s.Name == victim {
			continue
		}
		for _, l := range c.f.LogLines(s.Name, "", kill) {
			if l.Msg == "takeover" && l.Fields["from"] == victim {
				n, _ := l.Fields["nodes"].(float64)
				takenOver[s.Name] += int(n)
				if first.IsZero() || l.At.Before(first) {
					first = l.At
				}
			}
			if l.Msg == "fleet ownership" && slices.Contains(l.Dead(), victim) && first.IsZero() {
				first = l.At
			}
		}
	}
	return takenOver, first
}

// answeredSince returns, for every node bound after t (so far), the server of its first answer
// after t and that answer's time.
func (c *chaos) answeredSince(t time.Time) (map[int]string, map[int]time.Time) {
	evs, start := c.col.snapshot()
	by, at := map[int]string{}, map[int]time.Time{}
	for _, e := range evs {
		if a := start.Add(time.Duration(e.At * float64(time.Second))); e.Name == "bound" && a.After(t) {
			if _, ok := by[e.Node]; !ok {
				by[e.Node], at[e.Node] = c.f.ServerByIP(e.Args[0]), a
			}
		}
	}
	return by, at
}

// waitReaped waits (5 s at most) until the killed victim's process is gone.
func (c *chaos) waitReaped(t *testing.T, k int, victim string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); c.f.Pid(victim) != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("round %d: %s (killed) not reaped after 5 s", k, victim)
		}
	}
}

// checkMidAnswers checks that the victim's mid-boot nodes, answered since the kill, were
// answered by the rule's new owners, counting them (answered, wrongOwner, notAsked) and noting
// the first answer's time.
func (c *chaos) checkMidAnswers(t *testing.T, k int, rd *chaosRound) {
	t.Helper()
	by, at := c.answeredSince(rd.kill)
	for _, i := range rd.mid {
		srv, ok := by[i]
		if ok && (rd.firstAnswer == 0 || at[i].Sub(rd.kill).Seconds() < rd.firstAnswer) {
			rd.firstAnswer = at[i].Sub(rd.kill).Seconds()
		}
		switch want := c.f.Servers[c.owners[c.serverIdx[rd.victim]].Server[i]].Name; {
		case !ok:
			rd.notAsked++
		case srv == want:
			rd.answered++
		default:
			rd.wrongOwner++
			t.Errorf("round %d: %s, mid-boot on %s when it was killed, was answered by %s; the rule with %s dead says %s",
				k, c.f.Nodes[i].Name, rd.victim, srv, rd.victim, want)
		}
	}
}

// restart starts the victim again and waits (10 s at most) until it is a member.
func (c *chaos) restart(t *testing.T, ctx context.Context, k int, rd *chaosRound) {
	t.Helper()
	rd.restart = time.Now()
	if err := c.f.StartServer(ctx, rd.victim); err != nil {
		t.Fatalf("round %d: %v", k, err)
	}
	if err := c.f.WaitServer(ctx, rd.victim); err != nil {
		t.Fatalf("round %d: %v", k, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ms, err := c.f.Members(ctx, c.fc)
		if err == nil && slices.Contains(ms, rd.victim) {
			rd.member = time.Now()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d: %s restarted but not a member after 10 s: members %v (%v)", k, rd.victim, ms, err)
		}
	}
}

// waitReleased waits (5 s at most) until every survivor's ownership since the restart counts no
// server dead.
func (c *chaos) waitReleased(t *testing.T, k int, rd *chaosRound) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		notYet := c.survivorsNotYet(rd.victim, rd.restart, func(l LogLine) bool { return len(l.Dead()) == 0 })
		if len(notYet) == 0 {
			rd.released = time.Now()
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("round %d: %v still count %s dead 5 s after it was a member again", k, notYet, rd.victim)
			return
		}
	}
}

// logRound logs what round k did, its times from the batch start.
func (c *chaos) logRound(t *testing.T, k int, rd chaosRound) {
	t.Helper()
	_, start := c.col.snapshot()
	since := func(at time.Time) float64 { return at.Sub(start).Seconds() }
	var to []string
	for _, name := range sortedKeysOf(rd.takenOver) {
		to = append(to, fmt.Sprintf("%s %d", name, rd.takenOver[name]))
	}
	takeover := "none logged"
	if !rd.takeover.IsZero() {
		takeover = fmt.Sprintf("+%.2f s (nodes to %s)", rd.takeover.Sub(rd.kill).Seconds(), strings.Join(to, ", "))
	}
	released := "-"
	if !rd.released.IsZero() {
		released = fmt.Sprintf("%.2f s", rd.released.Sub(rd.restart).Seconds())
	}
	firstAnswer := "-"
	if rd.firstAnswer > 0 {
		firstAnswer = fmt.Sprintf("+%.2f s", rd.firstAnswer)
	}
	if len(rd.justReported) > 0 {
		t.Logf("round %d: %s acknowledged health reports less than 1 s before its kill: %v", k, rd.victim, rd.justReported)
	}
	t.Logf("round %d: kill -9 %s at %.2f s (%d of its nodes mid-boot, %d nodes unfinished); takeover logged %s; its mid-boot nodes answered by the rule's new owners %d (first %s), by others %d, not asking before the restart %d; restarted at %.2f s (down %.2f s), member again +%.2f s, survivors released +%s; healthy so far: %d reported, %d of %d in etcd",
		k, rd.victim, since(rd.kill), len(rd.mid), rd.unfinished, takeover, rd.answered, firstAnswer, rd.wrongOwner, rd.notAsked,
		since(rd.restart), rd.restart.Sub(rd.kill).Seconds(), rd.member.Sub(rd.restart).Seconds(), released,
		rd.healthyReported, rd.healthyEtcd, rd.all)
}

// checkRoundsDuringBoot checks that every round ran, each kill while nodes were unfinished.
func (c *chaos) checkRoundsDuringBoot(t *testing.T, rounds []chaosRound, boot *FleetBoot) {
	t.Helper()
	if len(rounds) < chaosRounds {
		t.Errorf("only %d of %d rounds ran during the boot", len(rounds), chaosRounds)
	}
	for k, rd := range rounds {
		if at := rd.kill.Sub(boot.Start).Seconds(); rd.unfinished == 0 || at >= boot.Batch {
			t.Errorf("round %d: the kill at %.2f s came after the boot (batch %.2f s, %d unfinished)", k+1, at, boot.Batch, rd.unfinished)
		}
	}
}

// logBoot logs the boot: its batch, the host's load, the boot attempts per node and which
// server finished how many nodes' boots.
func (c *chaos) logBoot(t *testing.T, boot *FleetBoot) {
	t.Helper()
	attempts := map[int]int{}
	for _, tl := range boot.Nodes {
		attempts[tl.Count("dhcp")]++
	}
	var dist []string
	for _, n := range sortedKeysOf(attempts) {
		dist = append(dist, fmt.Sprintf("%d: %d nodes", n, attempts[n]))
	}
	t.Logf("boot: batch %.2f s, host cpu %.0f%% of %d cores; boot attempts per node: %s; nodes finished by %s",
		boot.Batch, boot.CPU.Busy*100, boot.CPU.Cores, strings.Join(dist, ", "), strings.Join(finishedBy(c.f, boot), ", "))
}

// finishedBy says which server finished each node's boot (the one whose answer the successful
// attempt had), and when the last of each server's finished: "bs0 40 (last at 31.2 s)".
func finishedBy(f *Fleet, boot *FleetBoot) []string {
	finished, lastAt := map[string]int{}, map[string]float64{}
	for _, tl := range boot.Nodes {
		var srv string
		for _, e := range tl.Events {
			if e.Name == "bound" {
				srv = f.ServerByIP(e.Args[0])
			}
			if e.Name == "reported" {
				finished[srv]++
				lastAt[srv] = max(lastAt[srv], e.At)
			}
		}
	}
	var fin []string
	for _, name := range sortedKeysOf(finished) {
		fin = append(fin, fmt.Sprintf("%s %d (last at %.1f s)", name, finished[name], lastAt[name]))
	}
	return fin
}

// checkEnd checks the end: every node's record healthy, the invariants over the whole boot, and
// every server back on its own nodes (none is mid-boot any more).
func (c *chaos) checkEnd(t *testing.T, ctx context.Context, boot *FleetBoot) {
	t.Helper()
	f := c.f
	recs, err := f.WaitHealthy(ctx, c.fc, 20*time.Second)
	if err != nil {
		for _, rec := range recs {
			if rec.State != bootsrv.Healthy {
				t.Logf("etcd record %s: %s on %s since %s (last event %s at %s, attempt %d) %s", rec.Name, rec.State, rec.Server,
					rec.Since.Format("15:04:05.000"), rec.LastEvent, rec.LastSeen.Format("15:04:05.000"), rec.Attempt, rec.Error)
				chaosNodeHistory(t, f, boot, rec.Name)
			}
		}
		t.Errorf("etcd records after the boot: %v", err)
	}
	healthyR, healthyE, all := c.chk.check(t, ctx, c.fc, "end", c.col, c.kills)
	t.Logf("end: %d of %d nodes reported health, %d of %d records in etcd healthy; %d DHCP answers in the servers' logs, never two live servers for one node within 1.5 s, no address to two MACs",
		healthyR, len(f.Nodes), healthyE, all, c.chk.answers)
	per := len(f.Nodes) / len(f.Servers)
	if err := f.WaitOwned(ctx, per, nil, 15*time.Second); err != nil {
		t.Errorf("after the boot: %v", err)
	}
}

// logServerWarnings logs, for the record, how often the named server started and what it warned
// about.
func logServerWarnings(t *testing.T, f *Fleet, name string) {
	t.Helper()
	b, _ := os.ReadFile(f.LogPath(name))
	warn := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		// zap's console format: time, level, [logger,] message, [JSON fields].
		if parts := strings.Split(line, "\t"); len(parts) >= 3 && slices.Contains([]string{"warn", "error", "dpanic", "panic", "fatal"}, strings.ToLower(parts[1])) {
			msg := parts[len(parts)-1]
			if strings.HasPrefix(msg, "{") {
				msg = parts[len(parts)-2]
			}
			warn[parts[1]+" "+msg]++
		}
	}
	var ws []string
	for _, k := range sortedKeysOf(warn) {
		ws = append(ws, fmt.Sprintf("%q x%d", k, warn[k]))
	}
	t.Logf("%s: %d starts; warnings and errors: %s", name, strings.Count(string(b), "joined the fleet"), strings.Join(ws, ", "))
}

func sortedKeysOf[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// chaosChecker checks the chaos test's invariants, reporting each violation once.
type chaosChecker struct {
	f       *Fleet
	seen    map[string]bool
	answers int
}

func newChaosChecker(f *Fleet) *chaosChecker { return &chaosChecker{f: f, seen: map[string]bool{}} }

func (c *chaosChecker) errorf(t *testing.T, key, format string, args ...any) {
	t.Helper()
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	t.Errorf(format, args...)
}

// check checks the invariants over the boot so far: every address each node got is its own and
// went to no other MAC (the nodes' leases, the servers' DHCP logs and the records in etcd); no
// two servers answered one node within 1.5 s of each other unless the first was killed in
// between. It returns how many nodes reported health, how many records in etcd say healthy and
// how many records there are.
func (c *chaosChecker) check(t *testing.T, ctx context.Context, fc *fleet.Client, when string, col *chaosEvents, kills map[string][]time.Time) (reported, healthy, records int) {
	t.Helper()
	evs, start := col.snapshot()
	reported = c.checkLeases(t, when, evs)
	ans := c.f.DHCPAnswers(start)
	c.answers = len(ans)
	c.checkLoggedAnswers(t, when, ans, kills)
	recs, err := bootsrv.LoadFleetStates(ctx, fc)
	if err != nil {
		t.Errorf("%s: %v", when, err)
		return reported, 0, 0
	}
	return reported, c.checkRecords(t, when, recs), len(recs)
}

// checkLeases checks the nodes' leases (their bound events): each node's address its own, no
// address bound by two MACs. It returns how many nodes reported health.
func (c *chaosChecker) checkLeases(t *testing.T, when string, evs []NodeEvent) (reported int) {
	t.Helper()
	f := c.f
	byIP := map[string]string{}
	for _, e := range evs {
		switch {
		case e.Name == "reported":
			reported++
		case e.Name == "bound" && len(e.Args) >= 2:
			n := f.Nodes[e.Node]
			if e.Args[1] != n.IP {
				c.errorf(t, "lease "+n.Name+e.Args[1], "%s: %s (%s) got %s from %s at %.2f s, its reservation is %s", when, n.Name, n.MAC, e.Args[1], f.ServerByIP(e.Args[0]), e.At, n.IP)
			}
			if o, ok := byIP[e.Args[1]]; ok && o != n.MAC {
				c.errorf(t, "lease2 "+e.Args[1], "%s: address %s bound by %s and %s", when, e.Args[1], o, n.MAC)
			}
			byIP[e.Args[1]] = n.MAC
		}
	}
	return reported
}

// checkLoggedAnswers checks the servers' DHCP answers (their logs): no address acknowledged to
// two MACs, no two servers answering one node within 1.5 s unless the first was killed in
// between.
func (c *chaosChecker) checkLoggedAnswers(t *testing.T, when string, ans []DHCPAnswer, kills map[string][]time.Time) {
	t.Helper()
	acked := map[string]string{}
	for _, a := range ans {
		if a.IP == "" || a.IP == "<nil>" {
			continue
		}
		if o, ok := acked[a.IP]; ok && o != a.MAC {
			c.errorf(t, "log2 "+a.IP, "%s: %s %s address %s to %s at %s; it went to %s before", when, a.Server, a.Outcome, a.IP, a.MAC, a.At.Format("15:04:05.000"), o)
		}
		acked[a.IP] = a.MAC
	}
	for _, d := range DoubleAnswers(ans, 1500*time.Millisecond) {
		if slices.ContainsFunc(kills[d[0].Server], func(k time.Time) bool { return !k.Before(d[0].At) && !k.After(d[1].At) }) {
			continue // the first server was killed in between: not at once
		}
		c.errorf(t, "two "+d[0].MAC+d[1].At.String(), "%s: two servers answered %s: %s %s at %s, %s %s at %s", when, d[0].MAC,
			d[0].Server, d[0].Outcome, d[0].At.Format("15:04:05.000"), d[1].Server, d[1].Outcome, d[1].At.Format("15:04:05.000"))
	}
}

// checkRecords checks the nodes' records in etcd: no address given to two MACs. It returns how
// many say healthy.
func (c *chaosChecker) checkRecords(t *testing.T, when string, recs []bootsrv.NodeStatus) (healthy int) {
	t.Helper()
	recIP := map[string]string{}
	for _, r := range recs {
		if r.State == bootsrv.Healthy {
			healthy++
		}
		if r.IP == "" {
			continue
		}
		if o, ok := recIP[r.IP]; ok && o != r.MAC {
			c.errorf(t, "rec2 "+r.IP, "%s: etcd records give %s to %s and %s", when, r.IP, o, r.MAC)
		}
		recIP[r.IP] = r.MAC
	}
	return healthy
}

// chaosNodeHistory logs what the named node did (its events, as wall times) and every server log
// line about it (its name or MAC), by time: the story of a node the invariants flag.
func chaosNodeHistory(t *testing.T, f *Fleet, boot *FleetBoot, name string) {
	t.Helper()
	type row struct {
		at   time.Time
		text string
	}
	var rows []row
	for i, tl := range boot.Nodes {
		if tl.Node != name {
			continue
		}
		for _, e := range tl.Events {
			at := boot.Start.Add(time.Duration(e.At * float64(time.Second)))
			rows = append(rows, row{at, fmt.Sprintf("node %s %v (%.2f s)", e.Name, e.Args, e.At)})
		}
		mac := strings.ToLower(f.Nodes[i].MAC)
		for _, s := range f.Servers {
			for _, l := range f.LogLines(s.Name, "", time.Time{}) {
				switch {
				case l.Msg == "takeover" || l.Msg == "fleet ownership" || l.Msg == "joined the fleet":
				case l.Fields["node"] == name || l.Fields["mac"] == mac || strings.Contains(fmt.Sprint(l.Fields), name):
				default:
					continue
				}
				{
					rows = append(rows, row{l.At, fmt.Sprintf("%s %s %v", s.Name, l.Msg, l.Fields)})
				}
			}
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return a.at.Compare(b.at) })
	for _, r := range rows {
		t.Logf("  %s %s", r.at.Format("15:04:05.000"), r.text)
	}
}
