package redfishsim

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
)

// tinyVM is a QEMU VM that starts in a moment under TCG and idles: no devices, no disk, and its
// firmware finds nothing to boot.
func tinyVM(t *testing.T) []string {
	qemu := testenv.NeedTool(t, "qemu-system-x86_64", "qemu-system-x86")
	return []string{qemu, "-machine", "pc,accel=tcg", "-nodefaults", "-no-user-config", "-nographic", "-m", "32", "-serial", "none", "-monitor", "none", "-no-reboot"}
}

// TestQEMUMachine drives a QEMU VM through the BMC's reset action and boot override: a start
// with the one-time Pxe override gets -boot once=n, the next start (a restart) does not, the
// power state is QEMU's, ForceOff ends QEMU, and a VM that exits on its own reads off.
func TestQEMUMachine(t *testing.T) {
	m := &QEMUMachine{Argv: tinyVM(t), Dir: t.TempDir()}
	b := Start(t, Options{TLS: true, Machine: func(string) Machine { return m }, Logf: t.Logf})
	t.Cleanup(func() { _ = m.PowerOff(t.Context()) })
	c := &client{t: t, b: b, hc: &http.Client{Transport: &http.Transport{TLSClientConfig: b.TLSConfig()}, Timeout: 60 * time.Second}}
	if code, _ := c.do("POST", "/redfish/v1/SessionService/Sessions", map[string]string{"UserName": b.User, "Password": b.Password}); code != http.StatusCreated {
		t.Fatalf("login: %d", code)
	}
	reset := func(rt string) {
		t.Helper()
		if code, body := c.do("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", map[string]string{"ResetType": rt}); code != http.StatusNoContent {
			t.Fatalf("reset %s: %d %v", rt, code, body)
		}
	}
	power := func() string {
		t.Helper()
		_, sys := c.do("GET", "/redfish/v1/Systems/1", nil)
		s, _ := sys["PowerState"].(string)
		return s
	}
	starts := func() []string {
		t.Helper()
		data, err := os.ReadFile(m.ConsoleLog())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "== ") {
				out = append(out, l)
			}
		}
		return out
	}
	if got := power(); got != "Off" {
		t.Fatalf("before power on: %s", got)
	}
	if code, body := c.do("PATCH", "/redfish/v1/Systems/1", map[string]any{"Boot": map[string]string{"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}}); code != http.StatusOK {
		t.Fatalf("boot override: %d %v", code, body)
	}
	reset("On")
	if got := power(); got != "On" {
		t.Fatalf("after On: %s", got)
	}
	reset("ForceRestart")
	if got := power(); got != "On" {
		t.Fatalf("after ForceRestart: %s", got)
	}
	s := starts()
	if len(s) != 2 || !strings.Contains(s[0], "-boot once=n") || strings.Contains(s[1], "-boot once=n") {
		t.Errorf("starts, want the first alone with -boot once=n:\n%s", strings.Join(s, "\n"))
	}
	reset("ForceOff")
	if got := power(); got != "Off" {
		t.Fatalf("after ForceOff: %s", got)
	}
	reset("On")
	// QMP's quit behind the BMC's back: the VM ending on its own reads off.
	m.mu.Lock()
	_, err := m.qmp.execute(t.Context(), "quit")
	m.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	testfix.WaitFor(t, "a VM that quit to read off", 30*time.Second, func() bool { return power() == "Off" })
	if got := b.Boots("1"); len(got) != 3 || got[0] != "Pxe" || got[1] != "" || got[2] != "" {
		t.Errorf("boots %q, want Pxe then the normal order twice", got)
	}
}

// TestQEMUMachineBadCommand: a VM that cannot start leaves the system off and says why.
func TestQEMUMachineBadCommand(t *testing.T) {
	m := &QEMUMachine{Argv: []string{"/bin/false"}, Dir: t.TempDir()}
	err := m.PowerOn(t.Context(), "Pxe")
	if err == nil || !strings.Contains(err.Error(), "exited before its QMP socket answered") {
		t.Errorf("power on of /bin/false: %v", err)
	}
	if on, err := m.State(t.Context()); on || err != nil {
		t.Errorf("state: %v %v", on, err)
	}
	if err := (&QEMUMachine{Dir: t.TempDir()}).PowerOn(t.Context(), ""); err == nil {
		t.Error("a machine with no command started")
	}
}

// TestQEMUMachineRedfishtool: DMTF's redfishtool, a client nobody here wrote, sets the one-time
// PXE override of a QEMU-backed system, powers it on (QEMU starts with -boot once=n), reads it
// on, and powers it off (QEMU gone).
func TestQEMUMachineRedfishtool(t *testing.T) {
	tool := testenv.NeedTool(t, "redfishtool", "redfishtool")
	m := &QEMUMachine{Argv: tinyVM(t), Dir: t.TempDir()}
	b := Start(t, Options{TLS: true, Machine: func(string) Machine { return m }, Logf: t.Logf})
	t.Cleanup(func() { _ = m.PowerOff(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		// -S Always: HTTPS (redfishtool has no CA option and does not check the certificate).
		base := []string{"-r", b.Host(), "-u", b.User, "-p", b.Password, "-S", "Always", "-A", "Session", "-T", "30", "Systems", "-I", "1"}
		out, err := exec.CommandContext(ctx, tool, append(base, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redfishtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	power := func() string {
		t.Helper()
		var sys struct{ PowerState string }
		out := run("get")
		if err := json.Unmarshal([]byte(out), &sys); err != nil {
			t.Fatalf("redfishtool get: %v\n%s", err, out)
		}
		return sys.PowerState
	}
	run("setBootOverride", "Once", "Pxe")
	run("reset", "On")
	if got := power(); got != "On" {
		t.Errorf("after redfishtool's On: %s", got)
	}
	if on, err := m.State(ctx); !on || err != nil {
		t.Errorf("QEMU's state after On: %v %v", on, err)
	}
	data, _ := os.ReadFile(m.ConsoleLog())
	if !strings.Contains(string(data), "power on (boot override \"Pxe\")") || !strings.Contains(string(data), "-boot once=n") {
		t.Errorf("the start did not take the override:\n%s", data)
	}
	run("reset", "ForceOff")
	if got := power(); got != "Off" {
		t.Errorf("after redfishtool's ForceOff: %s", got)
	}
	if b.Sessions() != 0 {
		t.Errorf("%d sessions left open by redfishtool", b.Sessions())
	}
}

// TestQEMUMachineLostQMP: a VM whose QMP connection is gone still reads on (its process runs),
// and power off kills it.
func TestQEMUMachineLostQMP(t *testing.T) {
	m := &QEMUMachine{Argv: tinyVM(t), Dir: t.TempDir()}
	t.Cleanup(func() { _ = m.PowerOff(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.PowerOn(ctx, ""); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.qmp.close() // as a QEMU whose monitor stopped answering
	m.mu.Unlock()
	if on, err := m.State(ctx); !on || err != nil {
		t.Errorf("state with QMP gone: %v %v, want on", on, err)
	}
	start := time.Now()
	if err := m.PowerOff(ctx); err != nil {
		t.Errorf("power off: %v", err)
	}
	if on, _ := m.State(ctx); on {
		t.Error("power off left the VM running")
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("power off took %v: it waited for a quit that was never sent", d)
	}
}
