package bootapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestClientAnswers: the client decodes a server's answer, and turns every other answer into one
// error naming the request, the status and the server's own message when it gave one.
func TestClientAnswers(t *testing.T) {
	tests := []struct {
		name    string
		code    int
		body    string
		wantErr string // "" when the answer decodes
	}{
		{"ok", http.StatusOK, `{"server":"bs0","server_id":0,"nodes":[{"name":"n0","mac":"","position":"","profile":"","state":"healthy","since":"2026-01-01T00:00:00Z","attempt":2,"times":null}]}`, ""},
		{"error with a message", http.StatusNotFound, `{"error":"unknown node \"n9\""}`, `404 Not Found: unknown node "n9"`},
		{"error without a message", http.StatusInternalServerError, `oops`, `/api/v1/nodes: 500 Internal Server Error`},
		{"not JSON", http.StatusOK, `<html>`, "not a bootfabric status answer"},
		{"unknown state", http.StatusOK, `{"nodes":[{"name":"n0","state":"napping"}]}`, "not a bootfabric status answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v1/nodes" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tc.code)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			res, err := (&Client{BaseURL: srv.URL + "/", HTTP: srv.Client()}).Nodes(context.Background())
			if tc.wantErr == "" {
				if err != nil || len(res.Nodes) != 1 || res.Nodes[0].Attempt != 2 || res.Nodes[0].State.String() != "healthy" {
					t.Fatalf("Nodes = %+v, %v", res, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), srv.URL) {
				t.Fatalf("Nodes error = %v, want one naming %s and %q", err, srv.URL, tc.wantErr)
			}
		})
	}
}

// TestClientOperatorToken: an operator request carries the token as a bearer token, and a refusal
// comes back as the server said it.
func TestClientOperatorToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"operator token refused"}`))
			return
		}
		w.Write([]byte(`{"node":"n0","state":"pending","reboot_requested":true}`))
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, HTTP: srv.Client()}
	res, err := c.Reboot(context.Background(), "n0", "s3cret")
	if err != nil || !res.RebootRequested || res.Node != "n0" {
		t.Fatalf("Reboot = %+v, %v", res, err)
	}
	rep, err := c.RebootAll(context.Background(), []string{"n0", "n1"}, "s3cret")
	var b strings.Builder
	if err != nil || len(rep.Requested) != 2 || len(rep.Failed) != 0 || rep.WriteText(&b) != nil ||
		!strings.HasPrefix(b.String(), "node n0 (pending): reboot requested;") {
		t.Fatalf("RebootAll = %+v, %v\n%s", rep, err, b.String())
	}
	rep, err = c.RebootAll(context.Background(), []string{"n0"}, "wrong")
	b.Reset()
	if err != nil || len(rep.Failed) != 1 || rep.WriteText(&b) != nil || !strings.Contains(b.String(), "node n0: not rebooted: reboot: POST") {
		t.Fatalf("RebootAll with a wrong token = %+v, %v\n%s", rep, err, b.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.RebootAll(ctx, []string{"n0"}, "s3cret"); !errors.Is(err, context.Canceled) {
		t.Fatalf("RebootAll after the context's end: %v", err)
	}
	_, err = c.PowerOff(context.Background(), "n0", "wrong")
	if err == nil || !strings.Contains(err.Error(), "power-off: POST") || !strings.Contains(err.Error(), "401 Unauthorized: operator token refused") {
		t.Fatalf("PowerOff with a wrong token: %v", err)
	}
	// The status comes as a value too: a caller tells a node the server does not hold from a refusal.
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized || se.Message != "operator token refused" {
		t.Fatalf("PowerOff's error %#v is not a StatusError with the code and the server's reason", err)
	}
}
