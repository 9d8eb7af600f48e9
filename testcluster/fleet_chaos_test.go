package testcluster

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/nodestate/etcdstore"
	"github.com/bootfabric/bootfabric/topology"
)

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
	inFlight                          int       // mid nodes bound after the kill by the victim's answer sent before it
	firstAnswer                       float64   // seconds from the kill to the first of those answers
	justReported                      []string  // nodes that reported health to the victim less than 1 s before the kill
	takenOver                         map[string]int
	healthyReported, healthyEtcd, all int
}

// runRounds runs up to chaosRounds rounds while the boot lasts and the test has not failed, and
// returns them with the boot's result.
func (c *chaos) runRounds(t *testing.T, ctx context.Context, rng *rand.Rand, res <-chan fleetBootResult) ([]chaosRound, fleetBootResult) {
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
		time.Sleep(100 * time.Millisecond) // polls the survivors' logs
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
	for deadline := time.Now().Add(5 * time.Second); c.f.Pid(victim) != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("round %d: %s (killed) not reaped after 5 s", k, victim)
		}
	}
}

// checkMidAnswers checks that the victim's mid-boot nodes, answered since the kill, were
// answered by the rule's new owners, counting them (answered, wrongOwner, notAsked, inFlight)
// and noting the first answer's time.
func (c *chaos) checkMidAnswers(t *testing.T, k int, rd *chaosRound) {
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
		case srv == rd.victim:
			// Sent before the kill (the victim is reaped by now), bound after it: the node's
			// script ran late on a busy host. Its next fetch from the dead server fails.
			rd.inFlight++
		default:
			rd.wrongOwner++
			t.Errorf("round %d: %s, mid-boot on %s when it was killed, was answered by %s; the rule with %s dead says %s",
				k, c.f.Nodes[i].Name, rd.victim, srv, rd.victim, want)
		}
	}
}

// restart starts the victim again and waits (10 s at most) until it is a member.
func (c *chaos) restart(t *testing.T, ctx context.Context, k int, rd *chaosRound) {
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
	t.Logf("round %d: kill -9 %s at %.2f s (%d of its nodes mid-boot, %d nodes unfinished); takeover logged %s; its mid-boot nodes answered by the rule's new owners %d (first %s), by others %d, by the victim's answers sent before the kill %d, not asking before the restart %d; restarted at %.2f s (down %.2f s), member again +%.2f s, survivors released +%s; healthy so far: %d reported, %d of %d in etcd",
		k, rd.victim, since(rd.kill), len(rd.mid), rd.unfinished, takeover, rd.answered, firstAnswer, rd.wrongOwner, rd.inFlight, rd.notAsked,
		since(rd.restart), rd.restart.Sub(rd.kill).Seconds(), rd.member.Sub(rd.restart).Seconds(), released,
		rd.healthyReported, rd.healthyEtcd, rd.all)
}

// checkRoundsDuringBoot checks that every round ran, each kill while nodes were unfinished.
func (c *chaos) checkRoundsDuringBoot(t *testing.T, rounds []chaosRound, boot *FleetBoot) {
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
	f := c.f
	recs, err := f.WaitHealthy(ctx, c.fc, 20*time.Second)
	if err != nil {
		for _, rec := range recs {
			if rec.State != nodestate.Healthy {
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
	recs, err := etcdstore.LoadAll(ctx, fc)
	if err != nil {
		t.Errorf("%s: %v", when, err)
		return reported, 0, 0
	}
	return reported, c.checkRecords(t, when, recs), len(recs)
}

// checkLeases checks the nodes' leases (their bound events): each node's address its own, no
// address bound by two MACs. It returns how many nodes reported health.
func (c *chaosChecker) checkLeases(t *testing.T, when string, evs []NodeEvent) (reported int) {
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
func (c *chaosChecker) checkRecords(t *testing.T, when string, recs []nodestate.NodeStatus) (healthy int) {
	recIP := map[string]string{}
	for _, r := range recs {
		if r.State == nodestate.Healthy {
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
				rows = append(rows, row{l.At, fmt.Sprintf("%s %s %v", s.Name, l.Msg, l.Fields)})
			}
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return a.at.Compare(b.at) })
	for _, r := range rows {
		t.Logf("  %s %s", r.at.Format("15:04:05.000"), r.text)
	}
}
