package bootapi

import (
	"context"
	"net/http"
	"strings"
)

// Told is how the boot servers took the word of the nodes powered off, or of the reboots armed
// before the nodes were powered on.
type Told struct {
	Told   int      `json:"told"`
	Errors []string `json:"errors,omitempty"`
}

// Teller tells the boot servers what the operator did to nodes' power; Tokens holds each URL's
// operator token. In a fleet a node is told when one server took it: the others may not hold it.
type Teller struct {
	URLs   []string
	Tokens map[string]string
	HTTP   *http.Client
}

// PoweredOff asks every server to record each node as powered off.
func (t *Teller) PoweredOff(ctx context.Context, nodes []string) *Told {
	out := &Told{}
	for _, n := range nodes {
		t.each(ctx, n, out, func(c *Client, tok string) error {
			_, err := c.PowerOff(ctx, n, tok)
			return err
		})
	}
	return out
}

// ArmReboots arms each node's reboot on the servers, before it is powered on or cycled: armed
// after, the node's DISCOVER could come first and, from booted or healthy, start no attempt.
func (t *Teller) ArmReboots(ctx context.Context, nodes []string) *Told {
	out := &Told{}
	for _, n := range nodes {
		t.each(ctx, n, out, func(c *Client, tok string) error {
			_, err := c.Reboot(ctx, n, tok)
			return err
		})
	}
	return out
}

// each asks every server with do about node, counting it told when one took it.
func (t *Teller) each(ctx context.Context, node string, out *Told, do func(*Client, string) error) {
	var errs []string
	for _, u := range t.URLs {
		if err := do(&Client{BaseURL: u, HTTP: t.HTTP}, t.Tokens[u]); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) < len(t.URLs) {
		out.Told++
	} else {
		out.Errors = append(out.Errors, node+": "+strings.Join(errs, "; "))
	}
}
