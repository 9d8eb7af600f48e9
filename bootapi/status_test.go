package bootapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/nodestate"
)

// fakeServer answers the nodes (with the inventory) and the summary as a boot server named name.
func fakeServer(t *testing.T, name string, nodes []nodestate.NodeStatus, inv []InventoryEntry) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v any = NodesResponse{Server: name, Nodes: nodes, Inventory: inv}
		if r.URL.Path == "/api/v1/summary" {
			v = nodestate.Summarize(nodes, name, 0, time.Now())
		}
		json.NewEncoder(w).Encode(v)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestReadServers: the nodes of the servers that answer are merged, a server that does not is
// listed, an inventory node nobody holds is unknown with the reason its owner gives, and none
// answering is an UnreachableError.
func TestReadServers(t *testing.T) {
	inv := []InventoryEntry{{Name: "n0", Owner: "bs0"}, {Name: "n1", Owner: "bs1"}, {Name: "n2", Owner: "bs0"}, {Name: "n3"}}
	a := fakeServer(t, "bs0", []nodestate.NodeStatus{{Name: "n0", State: nodestate.Healthy, Server: "bs0"}}, inv)
	b := fakeServer(t, "bs1", []nodestate.NodeStatus{{Name: "n1", State: nodestate.Failed, Server: "bs1"}}, inv)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	ctx := context.Background()
	if _, err := ReadServers(ctx, http.DefaultClient, []string{dead.URL}); !errors.As(err, new(*UnreachableError)) {
		t.Fatalf("no server answering: err %v, want an UnreachableError", err)
	}
	rd, err := ReadServers(ctx, http.DefaultClient, []string{a.URL, b.URL, dead.URL})
	if err != nil {
		t.Fatal(err)
	}
	failed := nodestate.Failed
	for _, tc := range []struct {
		name          string
		f             StatusFilter
		nodes         []string
		unknown       []string
		unknownCount  int
		healthy, fail int
	}{
		{"all", StatusFilter{All: true}, []string{"n0", "n1"}, []string{"n2", "n3"}, 2, 1, 1},
		{"failed only", StatusFilter{All: true, Only: &failed}, []string{"n1"}, nil, 2, 1, 1},
		{"unknown only", StatusFilter{All: true, UnknownOnly: true}, nil, []string{"n2", "n3"}, 2, 1, 1},
		{"n0 and n2", StatusFilter{Keep: func(n string) bool { return n == "n0" || n == "n2" }}, []string{"n0"}, []string{"n2"}, 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd, err := ReadServers(ctx, http.DefaultClient, []string{a.URL, b.URL, dead.URL})
			if err != nil {
				t.Fatal(err)
			}
			if tc.f.Keep == nil {
				tc.f.Keep = func(string) bool { return true }
			}
			res := rd.Select(tc.f)
			var nodes, unknown []string
			for _, n := range res.Nodes {
				nodes = append(nodes, n.Name)
			}
			for _, u := range res.Unknown {
				unknown = append(unknown, u.Name)
			}
			if !slices.Equal(nodes, tc.nodes) || !slices.Equal(unknown, tc.unknown) || res.UnknownCount != tc.unknownCount {
				t.Errorf("nodes %v unknown %v (%d), want %v %v (%d)", nodes, unknown, res.UnknownCount, tc.nodes, tc.unknown, tc.unknownCount)
			}
			if res.ByState[nodestate.Healthy] != tc.healthy || res.ByState[nodestate.Failed] != tc.fail || len(res.Unreachable) != 1 {
				t.Errorf("by state %v, unreachable %v", res.ByState, res.Unreachable)
			}
		})
	}
	for owner, want := range map[string]string{"": "no live server owns it", "bs0": "its server bs0 holds no state for it",
		"bs7": "its server bs7 was not asked or did not answer"} {
		if got := rd.Why(owner); got != want {
			t.Errorf("Why(%q) = %q, want %q", owner, got, want)
		}
	}
}
