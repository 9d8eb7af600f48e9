package ipmibmc

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
)

// TestServeMachine: the BMC serves until its context ends, or ends with ready's error, and the
// machine is powered off either way.
func TestServeMachine(t *testing.T) {
	bin := testenv.NeedTool(t, "ipmi_sim", "openipmi")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("report failed")
	for _, tc := range []struct {
		name         string
		want         error
		relayStopped bool // ready returns once the chassis relay has stopped
	}{{"interrupted", nil, false}, {"interrupted, relay stopped first", nil, true}, {"ready fails", refused, false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sock := filepath.Join(dir, "chassis.sock")
			t.Setenv(relayEnv, sock)
			m := &fakeMachine{on: true}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cfg := Config{Bin: bin, Host: "127.0.0.1", User: "admin", Password: "lab-secret", Chassis: []string{self}, Dir: dir}
			err := ServeMachine(ctx, cfg, sock, m, t.Logf, func(sim *Sim) error {
				if sim.Port() == 0 {
					t.Error("ready before the simulator has a port")
				}
				if tc.want == nil {
					cancel() // interrupted once it serves
				}
				if tc.relayStopped {
					// The relay's end and the context's are then both there when ServeMachine
					// looks: an interrupt, whichever it sees first (CI once got "chassis relay:
					// <nil>").
					waitRelayGone(t, sock)
				}
				return tc.want
			})
			if err != tc.want { // ready's error comes back as it is
				t.Errorf("ServeMachine: %v, want %v", err, tc.want)
			}
			if on, _ := m.get(); on {
				t.Error("the machine is still on after its BMC stopped")
			}
		})
	}
}

// waitRelayGone waits until the chassis relay at sock accepts no connection, and a little more
// for its Serve to return.
func waitRelayGone(t *testing.T, sock string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			time.Sleep(100 * time.Millisecond) // the listener is closed; Serve returns right after
			return
		}
		c.Close()
	}
	t.Error("the chassis relay still accepts 10 s after its context ended")
}
