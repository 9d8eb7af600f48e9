package integration

import (
	"context"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/topology"
)

// fleetSoakFor is how long the fleet soak keeps booting under attack.
const fleetSoakFor = 2 * time.Minute

// fleetSoakMachine is fleetMachine with 2 boot servers: 64 nodes, one of them the hostile host.
func fleetSoakMachine() *topology.Machine {
	m := fleetMachine()
	m.Name = "fleetsoak"
	m.Description = "mini with 8 nodes per board: 64 nodes, 2 boot servers"
	m.Servers.Count, m.Servers.PerCascade = 2, 1
	return m
}

// TestFleetSoakUnderAttack is issue 25's soak: a fleet of 2 servers on an etcd that checks client
// certificates and users (each server and the operator with its own), 63 container nodes booting
// again and again for 2 minutes while a hostile host on the boot network attacks both servers:
// health reports, one-byte ranges, cut downloads and scripts named for other nodes, 2,000-part
// Range headers, hundreds of idle connections, DISCOVERs with the nodes' MACs, windowed TFTP
// requests that would hold every slot, and the same from 33 addresses. Every legitimate node boots
// in every round, and no node is answered by two servers.
func TestFleetSoakUnderAttack(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: 2 minutes of boots under attack; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), fleetSoakFor+4*time.Minute)
	defer cancel()
	f, _, _ := fleetSetupSpec(t, ctx, fleetSpec{Machine: fleetSoakMachine(), Scale: fleetScale, TTL: fleetTTL, TLS: true,
		Files: BootFiles{NBP: debianNBP, Kernel: 500_000, Initrd: 1_500_000}})
	legit := len(f.Nodes) - 1
	h, err := newHostile(f.Cluster, legit, legit)
	if err != nil {
		t.Fatal(err)
	}
	h.more = append(h.more, h.tftpManyAddrs(33))
	actx, stop := context.WithCancel(ctx)
	done := h.run(actx, true)
	defer func() { stop(); <-done }()
	time.Sleep(2 * time.Second) // the attacks are under way before the nodes start
	nodes := make([]int, legit)
	for i := range nodes {
		nodes[i] = i
	}
	began := time.Now()
	for round := 1; time.Since(began) < fleetSoakFor; round++ {
		start := time.Now()
		boot, err := f.BootFleet(ctx, FleetBootOptions{Nodes: nodes, Delays: fleetDelays(legit, 4), Attempts: 6, Timeout: 150 * time.Second})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		retried := 0
		for _, tl := range boot.Nodes {
			if tl.Count("bound") > 1 {
				retried++
			}
		}
		t.Logf("round %d: %d nodes healthy in %.1f s (%d needed more than one attempt); attacker so far: %s",
			round, legit, time.Since(start).Seconds(), retried, h.counts())
		fleetOneAnswerer(t, f, start)
	}
	stop()
	<-done
	if err, ok := h.err.Load().(error); ok {
		t.Errorf("attacker: %v", err)
	}
}
