package redfishsim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// client is a bare HTTP client of the simulator: the tests of the schema's clients are in
// package power (the driver, redfishtool, sushy).
type client struct {
	t     *testing.T
	b     *BMC
	hc    *http.Client
	token string
}

func (c *client) do(method, path string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, c.b.URL+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("X-Auth-Token", c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if tok := resp.Header.Get("X-Auth-Token"); tok != "" {
		c.token = tok
	}
	return resp.StatusCode, out
}

// TestMachineAndLag powers a CommandMachine through the reset action of a lagging BMC: the
// power changes only after the lag, and the machine's process is what the state reads.
func TestMachineAndLag(t *testing.T) {
	m := &CommandMachine{Command: "sleep 60"}
	b := Start(t, Options{TLS: true, Lag: time.Second, Machine: func(string) Machine { return m }})
	c := &client{t: t, b: b, hc: &http.Client{Transport: &http.Transport{TLSClientConfig: b.TLSConfig()}, Timeout: 10 * time.Second}}
	if code, _ := c.do("GET", "/redfish/v1/Systems/1", nil); code != http.StatusUnauthorized {
		t.Fatalf("no login: %d, want 401", code)
	}
	if code, _ := c.do("POST", "/redfish/v1/SessionService/Sessions", map[string]string{"UserName": b.User, "Password": b.Password}); code != http.StatusCreated {
		t.Fatalf("login: %d", code)
	}
	if code, _ := c.do("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", map[string]string{"ResetType": "Bogus"}); code != http.StatusBadRequest {
		t.Errorf("reset Bogus: %d, want 400", code)
	}
	for _, tc := range []struct{ reset, want string }{{"On", "On"}, {"ForceOff", "Off"}} {
		if code, _ := c.do("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", map[string]string{"ResetType": tc.reset}); code != http.StatusNoContent {
			t.Fatalf("reset %s: %d", tc.reset, code)
		}
		if got := b.Power("1"); got == tc.want {
			t.Errorf("reset %s: power %s at once, before the lag", tc.reset, got)
		}
		deadline := time.Now().Add(10 * time.Second)
		for b.Power("1") != tc.want && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if _, sys := c.do("GET", "/redfish/v1/Systems/1", nil); sys["PowerState"] != tc.want {
			t.Errorf("reset %s: PowerState %v, want %s", tc.reset, sys["PowerState"], tc.want)
		}
	}
	if on, _ := m.State(t.Context()); on {
		t.Error("the machine's command still runs after ForceOff")
	}
	if code, _ := c.do("PATCH", "/redfish/v1/Systems/1", map[string]any{"AssetTag": "x"}); code != http.StatusBadRequest {
		t.Errorf("PATCH of an unknown property: %d, want 400", code)
	}
}

// TestNew refuses system ids that are not path segments.
func TestNew(t *testing.T) {
	for _, ids := range [][]string{{""}, {"a/b"}, {"x", "x"}} {
		if b, err := New(Options{Systems: ids}, ""); err == nil {
			b.Close()
			t.Errorf("systems %q taken", ids)
		}
	}
}
