package fleet

import (
	"fmt"
	"strings"
)

// EtcdError is an etcd failure on one line that names the endpoints: errors.Join in the client's
// probe spans lines, and a command reports every failure on one.
type EtcdError struct {
	Endpoints []string
	Err       error
}

func (e *EtcdError) Error() string {
	msg := strings.ReplaceAll(e.Err.Error(), "\n", "; ")
	for _, ep := range e.Endpoints {
		if !strings.Contains(msg, ep) {
			return fmt.Sprintf("etcd at %s: %s", strings.Join(e.Endpoints, ","), msg)
		}
	}
	return msg // names every endpoint already
}

func (e *EtcdError) Unwrap() error { return e.Err }

// Endpoints returns the etcd endpoints the client was opened with.
func (c *Client) Endpoints() []string { return c.opts.Endpoints }
