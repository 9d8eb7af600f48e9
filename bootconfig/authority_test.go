package bootconfig

import (
	"net"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
)

func TestAuthorityExactlyOne(t *testing.T) {
	h := testfix.MiniHierarchy(t)
	inv, err := ParseInventoryCSV([]byte(testfix.MiniInventoryCSV(t)), "inv.csv", h)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		algo    string
		servers int
		absent  []int
		dead    []int
		load    []int // nodes per server
	}{
		{"bcda", 2, nil, nil, []int{16, 16}},
		{"scda", 2, nil, nil, []int{16, 16}},
		{"ncda", 2, nil, nil, []int{16, 16}},
		{"bcda", 3, nil, nil, []int{12, 12, 8}},
		// Absent bs1: boards dealt over bs0, bs2, bs3.
		{"bcda", 4, []int{1}, nil, []int{12, 0, 12, 8}},
		// Dead bs1: its boards 1 and 5 move, to bs3 (farthest) then bs0 (least loaded, lowest).
		{"bcda", 4, nil, []int{1}, []int{12, 0, 8, 12}},
		{"bcda", 4, []int{1}, []int{1}, []int{12, 0, 12, 8}},
		{"bcda", 4, []int{0}, []int{3}, []int{0, 16, 16, 0}},
		{"cyclic:supernode", 4, nil, nil, []int{16, 16, 0, 0}},
		{"cyclic:supernode", 4, nil, []int{0}, []int{0, 16, 16, 0}},
	}
	for _, tc := range tests {
		a, err := AssignServers(h, tc.algo, tc.servers, tc.absent, tc.dead)
		if err != nil {
			t.Fatalf("%s/%d: %v", tc.algo, tc.servers, err)
		}
		auths := make([]*Authority, tc.servers)
		load := make([]int, tc.servers)
		for id := range auths {
			if auths[id], err = NewAuthority(inv, a, id); err != nil {
				t.Fatal(err)
			}
			load[id] = len(auths[id].Owned())
		}
		if diff := cmp.Diff(tc.load, load); diff != "" {
			t.Errorf("%s/%d absent %v dead %v: load (-want +got):\n%s", tc.algo, tc.servers, tc.absent, tc.dead, diff)
		}
		for _, n := range inv.Nodes {
			// Through the authority and through dhcpd's Reservations view.
			answered, reserved := 0, 0
			for id, au := range auths {
				if got, ok := au.Lookup(n.MAC); ok {
					answered++
					if got.Name != n.Name || au.Owner(&n) != id || !au.Owns(&n) {
						t.Errorf("server %d: Lookup(%s) = %s, owner %d", id, n.MAC, got.Name, au.Owner(&n))
					}
				}
				res, err := au.Reservations(NetworkOptions{Mask: net.CIDRMask(24, 32)})
				if err != nil {
					t.Fatal(err)
				}
				if r, ok := res.Lookup(n.MAC); ok {
					reserved++
					if r.Name != n.Name || !r.IP.Equal(net.IP(n.IP.AsSlice())) || r.Mask.String() != "ffffff00" {
						t.Errorf("server %d: reservation of %s = %+v", id, n.Name, r)
					}
				}
			}
			if answered != 1 || reserved != 1 {
				t.Errorf("%s/%d: %s (%s) answered by %d servers, reserved by %d; want exactly 1", tc.algo, tc.servers, n.Name, n.MAC, answered, reserved)
			}
		}
	}
}

func TestAuthorityBoards(t *testing.T) {
	// bcda with 2 servers on mini: board b of the machine goes to server b mod 2.
	h := testfix.MiniHierarchy(t)
	inv, _ := ParseInventoryCSV([]byte(testfix.MiniInventoryCSV(t)), "inv.csv", h)
	a, _ := AssignServers(h, "bcda", 2, nil, nil)
	au, _ := NewAuthority(inv, a, 1)
	var got []string
	for _, n := range au.Owned()[:6] {
		got = append(got, n.Position)
	}
	want := []string{"s0-b1-n0", "s0-b1-n1", "s0-b1-n2", "s0-b1-n3", "s0-b3-n0", "s0-b3-n1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("owned (-want +got):\n%s", diff)
	}
	if _, err := NewAuthority(inv, a, 2); err == nil {
		t.Error("server id 2 of 2 accepted")
	}
	if _, err := AssignServers(h, "balanced", 2, nil, nil); err == nil {
		t.Error("balanced accepted")
	}
	if _, err := AssignServers(h, "rack", 2, nil, nil); err == nil {
		t.Error("unknown algorithm accepted")
	}
	for _, tc := range []struct {
		absent, dead []int
		want         string
	}{
		{[]int{2}, nil, "failed server 2: not one of the 2 servers"},
		{nil, []int{-1}, "dead server -1: not one of the 2 servers"},
		{[]int{0}, []int{1}, "all 2 boot servers failed"},
	} {
		if _, err := AssignServers(h, "bcda", 2, tc.absent, tc.dead); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("absent %v dead %v: error %v, want %q", tc.absent, tc.dead, err, tc.want)
		}
	}
}

// TestNodeOwners: each node's owner is named as the authority of its server decides it, with
// failed_servers absent, and a mapping the machine lacks is an error naming the configuration.
func TestNodeOwners(t *testing.T) {
	h := testfix.MiniHierarchy(t)
	inv, err := ParseInventoryCSV([]byte(testfix.MiniInventoryCSV(t)), "inv.csv", h)
	if err != nil {
		t.Fatal(err)
	}
	servers := []ServerEntry{{Name: "alpha"}, {Name: "beta"}, {Name: "gamma"}, {Name: "delta"}}
	for _, tc := range []struct {
		mapping string
		failed  []int
		load    map[string]int
		err     string
	}{
		{"bcda", nil, map[string]int{"alpha": 8, "beta": 8, "gamma": 8, "delta": 8}, ""},
		{"bcda", []int{1}, map[string]int{"alpha": 12, "gamma": 12, "delta": 8}, ""},
		{"cyclic:cabinet", nil, nil, `configuration: mapping: `},
	} {
		cfg := &Config{Servers: servers, Mapping: tc.mapping, FailedServers: tc.failed}
		owners, err := cfg.NodeOwners(inv, h)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.HasPrefix(err.Error(), tc.err)) {
			t.Errorf("%s %v: %v, want %q", tc.mapping, tc.failed, err, tc.err)
			continue
		}
		var load map[string]int
		for _, s := range owners {
			if load == nil {
				load = map[string]int{}
			}
			load[s]++
		}
		if diff := cmp.Diff(tc.load, load); diff != "" || (err == nil && len(owners) != len(inv.Nodes)) {
			t.Errorf("%s %v: nodes per server (-want +got):\n%s", tc.mapping, tc.failed, diff)
		}
	}
}
