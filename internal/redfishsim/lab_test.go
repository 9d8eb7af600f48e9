package redfishsim

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// TestServeMachines: the BMC answers once ready is called, serves until its context ends (or ends
// with ready's error), and its machines are powered off either way.
func TestServeMachines(t *testing.T) {
	for name, want := range map[string]error{"interrupted": nil, "ready fails": errors.New("report failed")} {
		t.Run(name, func(t *testing.T) {
			m := &CommandMachine{Command: "sleep 60"}
			if err := m.PowerOn(t.Context(), ""); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			opts := Options{Listen: "127.0.0.1:0", Systems: []string{"n0"}, User: "admin", Password: "pw", Logf: t.Logf}
			err := ServeMachines(ctx, opts, t.TempDir(), map[string]Machine{"n0": m}, func(b *BMC) error {
				resp, err := http.Get(b.URL + "/redfish/v1/")
				if err != nil {
					t.Errorf("the BMC does not answer when ready: %v", err)
				} else {
					resp.Body.Close()
				}
				if want == nil {
					cancel() // interrupted once it serves
				}
				return want
			})
			if err != want { // ready's error comes back as it is
				t.Errorf("ServeMachines: %v, want %v", err, want)
			}
			if on, _ := m.State(context.Background()); on {
				t.Error("the machine still runs after its BMC stopped")
			}
		})
	}
}
