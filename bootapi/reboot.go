package bootapi

import (
	"context"
	"fmt"
	"io"
)

// RebootReport is what asking a server to reboot nodes came to: the nodes whose reboot it
// recorded and those it refused, with why.
type RebootReport struct {
	Requested []RebootResponse `json:"requested"`
	Failed    []RebootFailure  `json:"failed,omitempty"`
}

// RebootFailure is a node whose reboot the server refused or did not answer.
type RebootFailure struct {
	Node  string `json:"node"`
	Error string `json:"error"`
}

// RebootAll asks for each node's reboot in turn. A node refused is noted and the others go on;
// only the end of ctx ends the run (with its error).
func (c *Client) RebootAll(ctx context.Context, names []string, token string) (*RebootReport, error) {
	var res RebootReport
	for _, name := range names {
		r, err := c.Reboot(ctx, name, token)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			res.Failed = append(res.Failed, RebootFailure{Node: name, Error: err.Error()})
			continue
		}
		res.Requested = append(res.Requested, *r)
	}
	return &res, nil
}

// WriteText writes a line per node: reboot requested, or not rebooted and why.
func (r *RebootReport) WriteText(w io.Writer) error {
	for _, q := range r.Requested {
		if _, err := fmt.Fprintf(w, "node %s (%s): reboot requested; its next DHCP DISCOVER starts a new boot\n", q.Node, q.State); err != nil {
			return err
		}
	}
	for _, f := range r.Failed {
		if _, err := fmt.Fprintf(w, "node %s: not rebooted: %s\n", f.Node, f.Error); err != nil {
			return err
		}
	}
	return nil
}
