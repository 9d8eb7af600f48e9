package testcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/nodestate"
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
	// TLS runs etcd with client certificates and the fleet's users and roles (fleet auth).
	TLS bool
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
	etcd := etcdtest.Start(t, etcdtest.Options{Members: 3, ClientHost: host.String(), TLS: spec.TLS})
	opt := FleetOptions{Bootctl: bin, Mapping: "bcda", Files: spec.Files, Etcd: etcd.Endpoints, Fleet: "t", TTL: spec.TTL}
	if spec.TLS {
		opt.EtcdTLS = &EtcdCerts{CA: etcd.CAFile, Cert: func(cn string) (string, string) { return etcd.ClientCert(t, cn) }}
	}
	f, err := c.StartFleet(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range c.Servers {
				b, _ := os.ReadFile(f.LogPath(s.Name))
				t.Logf("server %s log (end):\n%s", s.Name, tail(string(b), 15))
				t.Logf("server %s log, its warnings and errors (the last 30) and its first refusal of each node:\n%s", s.Name, troubleLines(string(b)))
			}
		}
	})
	fc, err := f.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fc.Close() })
	t.Logf("fleet of %d servers up at %.1f s; etcd %v", len(c.Servers), time.Since(began).Seconds(), etcd.Endpoints)
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
		time.Sleep(250 * time.Millisecond) // polls etcd and the servers' logs
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
func (o etcdOutage) logRecord(t *testing.T, f *Fleet, rec nodestate.NodeStatus) {
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

// troubleLines keeps the lines of a server's log at warn or error level (the last 30), and of what
// it refused the first line for each node (an attacker's refusals of unknown addresses, which
// name no node, are left out): what a failed fleet test needs beside the log's end, which is
// mostly DHCP traffic.
func troubleLines(log string) string {
	var warns, refused []string
	seen := map[string]bool{}
	for _, l := range strings.Split(log, "\n") {
		switch {
		case strings.Contains(l, "\twarn\t") || strings.Contains(l, "\terror\t"):
			warns = append(warns, l)
		case strings.Contains(l, "refused"):
			_, rest, ok := strings.Cut(l, `"node": "`)
			node, _, _ := strings.Cut(rest, `"`)
			if ok && !seen[node] {
				seen[node] = true
				refused = append(refused, l)
			}
		}
	}
	return tail(strings.Join(warns, "\n"), 30) + "\n" + strings.Join(refused, "\n")
}
