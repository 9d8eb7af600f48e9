package bootsrv

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
)

// TestFleetAnswersItsNodesFromTheStart: the first request a fleet server answers, sent before
// Serve begins (queued on the bound socket, as an operator's `bootctl node reboot` right after a
// revision's restart), already sees the nodes the ownership rule gives it. On the old code the
// server answered at once with no node, its ownership computed a moment later: a reboot armed
// then was lost (the soak under attack's round after a fleet apply).
func TestFleetAnswersItsNodesFromTheStart(t *testing.T) {
	ec := etcdtest.Start(t, etcdtest.Options{Members: 1})
	f := newFixture(t)
	m, ctx := newFleetMember(t, f, ec.Endpoints, 0, nil)
	if err := m.srv.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	// The request is on the socket, accepted by the kernel, before Serve begins.
	conn, err := net.Dial("tcp", m.srv.HTTPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /api/v1/nodes HTTP/1.1\r\nHost: bootfabric\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	go func() { m.done <- m.srv.Serve(ctx) }()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res bootapi.NodesResponse
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatalf("%s: %v", resp.Status, err)
	}
	var names []string
	for _, n := range res.Nodes {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	want := ruleOwned(t, m.srv, 0, []int{1, 2, 3}) // the only live member: every node
	if !slices.Equal(names, want) {
		t.Errorf("first answer lists %d nodes %v, want the rule's %d", len(names), first(names, 5), len(want))
	}
}

func first(s []string, n int) []string { return s[:min(len(s), n)] }
