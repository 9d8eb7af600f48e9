package bootapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/bootfabric/bootfabric/nodestate"
)

// Client reads a boot server's status API and makes the operator's requests (reboot, power-off).
type Client struct {
	// BaseURL is the server's HTTP endpoint, e.g. http://10.0.0.1:8080.
	BaseURL string
	// HTTP is the client to use; nil means http.DefaultClient.
	HTTP *http.Client
}

// Nodes returns every node's status.
func (c *Client) Nodes(ctx context.Context) (*NodesResponse, error) {
	return getJSON[NodesResponse](ctx, c, "/api/v1/nodes")
}

// NodesAndInventory returns every node's status and the whole inventory with each node's owner
// (GET /api/v1/nodes?inventory=1).
func (c *Client) NodesAndInventory(ctx context.Context) (*NodesResponse, error) {
	return getJSON[NodesResponse](ctx, c, "/api/v1/nodes?inventory=1")
}

// Node returns one node's status (GET /api/v1/nodes/NAME).
func (c *Client) Node(ctx context.Context, name string) (*nodestate.NodeStatus, error) {
	return getJSON[nodestate.NodeStatus](ctx, c, "/api/v1/nodes/"+url.PathEscape(name))
}

// Summary returns the counts by state and the aggregated health.
func (c *Client) Summary(ctx context.Context) (*nodestate.Summary, error) {
	return getJSON[nodestate.Summary](ctx, c, "/api/v1/summary")
}

// Progress reads GET /api/v1/progress.
func (c *Client) Progress(ctx context.Context) (*ProgressResponse, error) {
	return getJSON[ProgressResponse](ctx, c, "/api/v1/progress")
}

// getJSON makes a status request and decodes its answer into a new T.
func getJSON[T any](ctx context.Context, c *Client, path string) (*T, error) {
	var out T
	if err := c.get(ctx, path, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// postJSON makes an operator request with no body and decodes its answer into a new T.
func postJSON[T any](ctx context.Context, c *Client, what, path, token string) (*T, error) {
	var out T
	if err := c.operatorRequest(ctx, what, path, token, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) get(ctx context.Context, path string, v any) error {
	u := strings.TrimSuffix(c.BaseURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("status: GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorBody
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return fmt.Errorf("status: GET %s: %s: %s", u, resp.Status, e.Error)
		}
		return fmt.Errorf("status: GET %s: %s", u, resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("status: GET %s: not a bootfabric status answer: %w", u, err)
	}
	return nil
}

// Reboot asks the server to start the named node's boot over at its next DHCP DISCOVER (POST
// /api/v1/nodes/NAME/reboot), with the operator token.
func (c *Client) Reboot(ctx context.Context, name, token string) (*RebootResponse, error) {
	return postJSON[RebootResponse](ctx, c, "reboot", "/api/v1/nodes/"+url.PathEscape(name)+"/reboot", token)
}

// PowerOff tells the server that the operator powered the named node off (POST
// /api/v1/nodes/NAME/power-off), with the operator token: the node is pending, not healthy,
// until its next DISCOVER.
func (c *Client) PowerOff(ctx context.Context, name, token string) (*PowerOffResponse, error) {
	return postJSON[PowerOffResponse](ctx, c, "power-off", "/api/v1/nodes/"+url.PathEscape(name)+"/power-off", token)
}

// AnnounceRun tells the server a bootctl boot run's prediction (POST /api/v1/run), with the
// operator token, so that its boot page draws the prediction beside what it measures.
func (c *Client) AnnounceRun(ctx context.Context, run *RunPrediction, token string) (*RunResponse, error) {
	body, err := json.Marshal(run)
	if err != nil {
		return nil, fmt.Errorf("run prediction: %w", err)
	}
	var out RunResponse
	if err := c.operatorRequest(ctx, "run prediction", RunPath, token, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// operatorRequest POSTs an operator request (what names it in errors) with body (nil: none) and
// decodes its answer.
func (c *Client) operatorRequest(ctx context.Context, what, path, token string, body []byte, v any) error {
	u := strings.TrimSuffix(c.BaseURL, "/") + path
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, rd)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s: POST %s: %w", what, u, err)
	}
	if resp.StatusCode != http.StatusOK {
		se := &StatusError{What: what, URL: u, Code: resp.StatusCode, Status: resp.Status}
		var e ErrorBody
		if json.Unmarshal(answer, &e) == nil {
			se.Message = e.Error
		}
		return se
	}
	if err := json.Unmarshal(answer, v); err != nil {
		return fmt.Errorf("%s: POST %s: not a bootfabric answer: %w", what, u, err)
	}
	return nil
}

// StatusError is an operator request the server answered with a status other than 200: Code
// tells a node the server does not hold (404, as after a fleet's handoff) from a refusal.
type StatusError struct {
	What, URL string // the request, as the error names it, and its URL
	Code      int
	Status    string // the status line, "404 Not Found"
	Message   string // the server's reason (ErrorBody), if it gave one
}

func (e *StatusError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s: POST %s: %s: %s", e.What, e.URL, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: POST %s: %s", e.What, e.URL, e.Status)
}
