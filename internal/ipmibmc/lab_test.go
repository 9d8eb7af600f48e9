package ipmibmc

import (
	"context"
	"errors"
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
		name string
		want error
	}{{"interrupted", nil}, {"ready fails", refused}} {
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
