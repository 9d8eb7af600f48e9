package bootconfig

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/google/go-cmp/cmp"
)

// ownershipMachine is a machine with its inventory, for TestOwnershipEqualsPlan.
type ownershipMachine struct {
	name string
	g    *topology.Graph
	inv  *Inventory
}

// generatedMachine is larger than mini and has a server count (13) that divides none of its block
// counts, so that the deal wraps unevenly and remapped blocks have uneven loads to balance:
// 2 cabinets x 3 supernodes x 10 boards x 6 nodes = 360 nodes. Its inventory lists the nodes in a
// shuffled order, so that inventory order and topology order differ.
func generatedMachine(t *testing.T) ownershipMachine {
	t.Helper()
	link := func(seg string, mbps float64) *topology.LinkSpec {
		return &topology.LinkSpec{Segment: seg, CapacityMbps: mbps, LatencyUS: 10}
	}
	m := &topology.Machine{
		Name: "generated",
		Levels: []topology.LevelSpec{
			{Name: "cabinet", Prefix: "c", Count: 2},
			{Name: "supernode", Prefix: "s", Count: 3, Uplink: link("N3", 20000)},
			{Name: "board", Prefix: "b", Count: 10, Uplink: link("N2", 1000)},
			{Name: "node", Prefix: "n", Count: 6, Uplink: link("N1", 1000)},
		},
		Servers: topology.ServerSpec{Count: 13, PerCascade: 5, NIC: *link("N5", 1000), CascadeUplink: link("N4", 20000)},
	}
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	h := g.Hierarchy()
	order := rand.New(rand.NewPCG(12, 3)).Perm(h.NumNodes())
	var sb strings.Builder
	sb.WriteString("name,mac,ip,node\n")
	for _, i := range order {
		fmt.Fprintf(&sb, "host%03d,52:54:00:00:%02x:%02x,10.1.%d.%d,%s\n", i, i>>8, i&0xff, i/200, 10+i%200, h.NodeName(i))
	}
	inv, err := ParseInventoryCSV([]byte(sb.String()), "generated.csv", h)
	if err != nil {
		t.Fatal(err)
	}
	return ownershipMachine{"generated", g, inv}
}

func miniMachine(t *testing.T) ownershipMachine {
	t.Helper()
	m, _ := topology.Preset("mini")
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	inv, err := ParseInventoryCSV([]byte(testfix.MiniInventoryCSV(t)), "inv.csv", g.Hierarchy())
	if err != nil {
		t.Fatal(err)
	}
	return ownershipMachine{"mini", g, inv}
}

// failureSet is one case: absent servers (failed_servers, plan --failed-servers) and dead ones (the
// fleet's lost servers, plan --failed-during-boot).
type failureSet struct {
	absent, dead []int
}

func (f failureSet) String() string { return fmt.Sprintf("absent%v dead%v", f.absent, f.dead) }

// failureSets lists every single absent server, every single dead one, and seeded random pairs and
// triples mixing both kinds (disjoint, at least one server left up).
func failureSets(servers int, rng *rand.Rand) []failureSet {
	out := []failureSet{{}}
	for s := 0; s < servers; s++ {
		out = append(out, failureSet{absent: []int{s}}, failureSet{dead: []int{s}})
	}
	for k := 0; k < 40; k++ {
		n := min(2+rng.IntN(2), servers-1)
		perm := rng.Perm(servers)[:n]
		split := rng.IntN(n + 1)
		out = append(out, failureSet{absent: perm[:split], dead: perm[split:]})
	}
	return out
}

func marked(servers int, list []int) []bool {
	if len(list) == 0 {
		return nil
	}
	out := make([]bool, servers)
	for _, s := range list {
		out[s] = true
	}
	return out
}

// TestOwnershipEqualsPlan proves that a boot server owns exactly the nodes plan maps to it: for
// every failure set, the owner of each inventory node as the servers' Authorities see it (each
// server computing its own, from bootsrv.AssignServers) equals the server of that node in plan's
// assignment, mapping.AssignOwners over the graph with --failed-servers ABSENT and
// --failed-during-boot DEAD, which is what fabricsim.Plan maps every row with
// (fabricsim.PlanInput.Assignment; fabricsim's TestPlanFailures checks that link). bootsrv's tests
// do not import fabricsim, so that the servers stay clear of the simulator as DESIGN.md says.
func TestOwnershipEqualsPlan(t *testing.T) {
	machines := []ownershipMachine{miniMachine(t), generatedMachine(t)}
	for _, m := range machines {
		for _, algoName := range []string{"scda", "bcda", "ncda"} {
			t.Run(m.name+"/"+algoName, func(t *testing.T) {
				h := m.g.Hierarchy()
				servers := len(m.g.Servers())
				algo, err := mapping.ParseAlgo(algoName, h)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(uint64(servers), uint64(len(algoName))))
				for _, f := range failureSets(servers, rng) {
					plan, _, err := mapping.AssignOwners(m.g, algo, nil, marked(servers, f.absent), marked(servers, f.dead))
					if err != nil {
						t.Fatalf("%s: plan: %v", f, err)
					}
					want := make([]int32, len(m.inv.Nodes))
					for i, n := range m.inv.Nodes {
						want[i] = plan.Server[n.Index]
					}
					got, err := serverOwners(m.inv, h, algoName, servers, f)
					if err != nil {
						t.Fatalf("%s: %v", f, err)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s: owner per inventory node, plan (-) vs servers (+):\n%s", f, diff)
					}
				}
			})
		}
	}
}

// serverOwners is the fleet's view: every server builds its own Authority from the shared
// configuration and claims its nodes; the owner of each inventory node is the one server that
// claims it (-1 if none, -2 if several).
func serverOwners(inv *Inventory, h *topology.Hierarchy, algo string, servers int, f failureSet) ([]int32, error) {
	owner := make([]int32, len(inv.Nodes))
	for i := range owner {
		owner[i] = -1
	}
	index := map[string]int{}
	for i, n := range inv.Nodes {
		index[n.Name] = i
	}
	for id := 0; id < servers; id++ {
		a, err := AssignServers(h, algo, servers, f.absent, f.dead)
		if err != nil {
			return nil, err
		}
		au, err := NewAuthority(inv, a, id)
		if err != nil {
			return nil, err
		}
		for _, n := range au.Owned() {
			if got, ok := au.Lookup(n.MAC); !ok || got.Name != n.Name {
				return nil, fmt.Errorf("server %d owns %s but does not answer its MAC %s", id, n.Name, n.MAC)
			}
			i := index[n.Name]
			if owner[i] != -1 {
				owner[i] = -2
				continue
			}
			owner[i] = int32(id)
		}
	}
	return owner, nil
}
