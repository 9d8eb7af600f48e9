package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/routing"
)

func TestMcastJSON(t *testing.T) {
	code, out, errs := bootctl(t, "mcast", "--topology", "pgft:3;4,4,4;1,4,2;1,1,2", "--groups", "grid2d,grid3d,random:300:5", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var sum routing.McastComparison
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Endpoints != 64 || sum.Switches != 40 || len(sum.Sets) != 3 || sum.Groups != 16+48+300 || len(sum.Results) != 3 {
		t.Fatalf("summary %+v", sum)
	}
	byAlgo := map[string]routing.McastRow{}
	for _, r := range sum.Results {
		byAlgo[r.Algorithm] = r
		if r.MaxHeight != 3 {
			t.Errorf("%s: max height %d, want 3", r.Algorithm, r.MaxHeight)
		}
	}
	if f, m := byAlgo["fulb"].MaxEFI, byAlgo["minhop"].MaxEFI; f >= m {
		t.Errorf("fulb max EFI %d not below minhop's %d", f, m)
	}
}

func TestMcastTableAndFile(t *testing.T) {
	groups := writeFile(t, "groups.txt", "# two groups\nfirst: n0 n5 n9\nn1 n2 n14\n")
	code, out, errs := bootctl(t, "mcast", "-t", "pgft:2;4,4;1,2", "-g", "@"+groups+",leaders:2", "--algo", "fulb,sssp", "--fixed-root")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"fulb", "sssp", "max EFI", "@" + groups + " 2", "leaders:2 "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "minhop") {
		t.Errorf("minhop not asked for:\n%s", out)
	}
}

func TestMcastServers(t *testing.T) {
	code, out, errs := bootctl(t, "mcast", "-t", "mini", "-g", "servers", "--mapping", "scda", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var sum routing.McastComparison
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Groups < 1 || sum.Results[0].MaxEFI < 1 {
		t.Errorf("summary %+v", sum)
	}
}

func TestMcastBadInput(t *testing.T) {
	unknown := writeFile(t, "unknown.txt", "n0 n1\nn2 nope\n")
	empty := writeFile(t, "empty.txt", "g1: n0\ng2:\n")
	sw := writeFile(t, "switch.txt", "n0 s1-0\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-g", "@" + unknown}, `unknown.txt:2: unknown endpoint "nope"`},
		{[]string{"-g", "@" + empty}, "empty.txt:2: group g2 is empty"},
		{[]string{"-g", "@" + sw}, "is a switch, not an endpoint"},
		{[]string{"-g", "grid2d", "--algo", "dijkstra"}, `multicast algorithm "dijkstra"`},
		{[]string{"-g", "random:10"}, "want random:N:SIZE"},
		{[]string{"-g", "random:10:100"}, "size must be 1..16"},
		{[]string{"-g", "grid2d:3x5"}, "needs 15 endpoints, have 16"},
		{[]string{"-g", "servers"}, "has no boot servers"},
		{[]string{"-g", "circles"}, `"circles" is not grid2d`},
	} {
		code, _, errs := bootctl(t, append([]string{"mcast", "-t", "pgft:2;4,4;1,2"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

func TestSimulateMulticastDelivery(t *testing.T) {
	code, out, errs := bootctl(t, "simulate", "--topology", "mini", "--algo", "scda,bcda", "--batch", "1supernode",
		"--files", "image=10MB:none", "--dhcp", "0s", "--health", "0s", "--delivery", "multicast", "--mcast", "minhop", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Runs []struct {
			Algo     string  `json:"algo"`
			Delivery string  `json:"delivery"`
			Mcast    string  `json:"mcast"`
			Speedup  float64 `json:"speedup_vs_unicast"`
			Result   struct {
				BatchSeconds float64 `json:"batch_s"`
			} `json:"result"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 4 {
		t.Fatalf("%d runs, want unicast and multicast for scda and bcda", len(res.Runs))
	}
	for i := 0; i < 4; i += 2 {
		u, m := res.Runs[i], res.Runs[i+1]
		if u.Delivery != "unicast" || m.Delivery != "multicast" || m.Mcast != "minhop" || u.Algo != m.Algo {
			t.Errorf("runs %d, %d: %+v %+v", i, i+1, u, m)
		}
		if m.Speedup < 1 {
			t.Errorf("%s: multicast slower than unicast: speedup %v", m.Algo, m.Speedup)
		}
	}
	// scda: one server for the whole supernode of 16 nodes at 100 Mb/s NIC: 16 x 0.8 s by unicast,
	// 0.8 s down the tree.
	if s := res.Runs[1].Speedup; s < 15.9 || s > 16.1 {
		t.Errorf("scda speedup %v, want 16", s)
	}
	code, out, errs = bootctl(t, "simulate", "--topology", "mini", "--algo", "scda,bcda", "--batch", "1supernode", "--delivery", "multicast")
	if code != 0 || !strings.Contains(out, "multicast (fulb)") || !strings.Contains(out, "speedup") {
		t.Errorf("exit %d, stderr %s, table:\n%s", code, errs, out)
	}
}

func TestSimulateHealthFlags(t *testing.T) {
	code, out, errs := bootctl(t, "simulate", "--topology", "mini", "--health", "task", "--faults", "1", "--stragglers", "0.1:1-20", "--seed", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"health aggregation of batch", "paper formula", "healthy 32, failed 0, unreachable 0", "complete yes", "faults 1, recovered 1", "messages"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, nodes := range []bool{false, true} {
		args := []string{"simulate", "--topology", "mini", "--health", "binomial", "-o", "json"}
		if nodes {
			args = append(args, "--health-nodes")
		}
		code, out, errs = bootctl(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var res struct {
			Runs []struct {
				Health struct {
					Algorithm string         `json:"algorithm"`
					Complete  bool           `json:"complete"`
					Summary   map[string]any `json:"summary"`
				} `json:"health"`
			} `json:"runs"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		h := res.Runs[0].Health
		_, hasNodes := h.Summary["nodes"]
		if h.Algorithm != "binomial" || !h.Complete || h.Summary["healthy"] != 32.0 || hasNodes != nodes {
			t.Errorf("--health-nodes=%v: health %+v", nodes, h)
		}
	}
}

func TestSimulateMulticastHealthBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--health", "task", "--faults", "32"}, "--faults: 32 faults for batch"},
		{[]string{"--health", "gossip"}, `--health: "gossip" is not binomial, task or a non-negative duration`},
		{[]string{"--health", "task", "--stragglers", "0.1"}, "--stragglers: stragglers \"0.1\""},
		{[]string{"--health", "task", "--stragglers", "2:3"}, "fraction must be a number in [0,1]"},
		{[]string{"--faults", "2"}, "--faults needs --health binomial or --health task"},
		{[]string{"--delivery", "broadcast"}, `--delivery: "broadcast" is not one of unicast, server, multicast, p2p`},
		{[]string{"--delivery", "multicast", "--mcast", "steiner"}, `multicast algorithm "steiner"`},
		{[]string{"--mcast", "sssp"}, "--mcast sssp needs --delivery multicast"},
	} {
		code, _, errs := bootctl(t, append([]string{"simulate", "--topology", "mini"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
