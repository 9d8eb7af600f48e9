package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/nodestate"
)

// TestPowerOffTellsServers: power off with --server tells the boot server of every node it
// powered off, with the operator token, so that the server no longer shows it healthy; power on
// and cycle arm each node's reboot first, so that its next DISCOVER starts a new attempt (issue
// 37: a node cycled through bootctl power stayed healthy); without the token it is refused
// before any BMC is asked; a node the server refuses is an error.
func TestPowerOffTellsServers(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	var mu sync.Mutex
	var told []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, op, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/"), "/")
		if r.Method != http.MethodPost || !ok || r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		told = append(told, op+":"+name)
		mu.Unlock()
		if op == "reboot" {
			json.NewEncoder(w).Encode(bootapi.RebootResponse{Node: name, State: nodestate.Healthy, RebootRequested: true})
			return
		}
		if name == "s0-b0-n2" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"unknown node \"s0-b0-n2\""}`))
			return
		}
		json.NewEncoder(w).Encode(bootapi.PowerOffResponse{Node: name, State: nodestate.Pending, PoweredOff: true})
	}))
	defer srv.Close()
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte(token+"\n"), 0o600)
	for _, tc := range []struct {
		name  string
		op    string
		nodes string
		more  []string
		code  int
		told  []string
		out   string
	}{
		{"told", "off", "s0-b0-n[0-1]", []string{"--server", srv.URL, "--token-file", tok, "-o", "json"}, 0, []string{"power-off:s0-b0-n0", "power-off:s0-b0-n1"}, `"told": 2`},
		{"table", "off", "s0-b0-n0", []string{"--server", srv.URL, "--token-file", tok}, 0, []string{"power-off:s0-b0-n0"}, "boot servers told: 1 nodes powered off"},
		{"no token", "off", "s0-b0-n0", []string{"--server", srv.URL}, 2, nil, "--token-file: required with --server"},
		{"refused", "off", "s0-b0-n[0,2]", []string{"--server", srv.URL, "--token-file", tok}, 1, []string{"power-off:s0-b0-n0", "power-off:s0-b0-n2"}, `not told of 1 nodes (they still show them as before): s0-b0-n2: power-off: POST`},
		{"no server", "off", "s0-b0-n0", nil, 0, nil, "1 of 1 nodes done"},
		{"cycle arms", "cycle", "s0-b0-n[0-1]", []string{"--server", srv.URL, "--token-file", tok}, 0, []string{"reboot:s0-b0-n0", "reboot:s0-b0-n1"}, "boot servers told: 2 reboots armed"},
		{"on arms", "on", "s0-b0-n1", []string{"--server", srv.URL, "--token-file", tok, "-o", "json"}, 0, []string{"reboot:s0-b0-n1"}, `"told": 1`},
		{"cycle without a token", "cycle", "s0-b0-n0", []string{"--server", srv.URL}, 2, nil, "--token-file: required with --server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPowerFixture(t)
			told = nil
			code, out, errs := runBootctl(t, context.Background(), f.args(tc.op, tc.nodes, tc.more...)...)
			if code != tc.code || !strings.Contains(out+errs, tc.out) {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr: %s\nwant %q", code, tc.code, out, errs, tc.out)
			}
			mu.Lock()
			defer mu.Unlock()
			slices.Sort(told)
			if !slices.Equal(told, tc.told) {
				t.Errorf("servers told of %v, want %v", told, tc.told)
			}
			if calls := f.calls(t); tc.code == 2 && calls != "" {
				t.Errorf("a BMC was asked after bad input:\n%s", calls)
			}
		})
	}
}
