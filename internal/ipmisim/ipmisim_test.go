package ipmisim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bootfabric/bootfabric/internal/ipmibmc"
)

// TestSimLifecycle starts two BMCs in one test and checks that they are independent, and that
// Stop and Restart take one down and up again.
func TestSimLifecycle(t *testing.T) {
	a := Start(t, Options{Password: "pw-a"})
	b := Start(t, Options{Password: "pw-b", Power: "on"})
	if a.Port == b.Port || a.Dir == b.Dir {
		t.Fatalf("two BMCs share port %d or directory %s", a.Port, a.Dir)
	}
	if got := a.Power(); got != "off" {
		t.Errorf("a: power %s at start, want off", got)
	}
	if got := b.Power(); got != "on" {
		t.Errorf("b: power %s at start, want on", got)
	}
	if got := a.Boot(); got != "none" {
		t.Errorf("a: boot %s at start, want none", got)
	}
	a.SetPower("on")
	if got := a.Power(); got != "on" {
		t.Errorf("a: power %s after SetPower(on)", got)
	}

	b.Stop()
	if b.Running() {
		t.Fatal("stopped BMC still running")
	}
	if err := ipmibmc.Ping(b.Addr(), 300*time.Millisecond); err == nil {
		t.Fatal("stopped BMC answers a ping")
	}
	if err := ipmibmc.Ping(a.Addr(), 5*time.Second); err != nil {
		t.Fatalf("a stopped with b: %v", err)
	}
	b.Restart()
	if err := ipmibmc.Ping(b.Addr(), 5*time.Second); err != nil {
		t.Fatalf("restarted BMC: %v", err)
	}
	if got := b.Power(); got != "on" {
		t.Errorf("b: power %s after restart, want on (the machine keeps its state)", got)
	}
}

// TestSimChassis drives a BMC with go-ipmi over RMCP+ (cipher suite 3) and checks what the
// machine behind it saw: the facts the package comment lists.
func TestSimChassis(t *testing.T) {
	bmc := Start(t, Options{Password: "chassis-pw"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := session(ctx, t, bmc)

	// Power cycle of a machine that is off: ipmi_sim powers it down (a no-op) and up again a
	// second later, where a BMC that follows §28.3 would do nothing.
	control(ctx, t, c, chassis.ChassisControlPowerCycle)
	waitSets(t, bmc, "set power 0", "set power 1")
	control(ctx, t, c, chassis.ChassisControlPowerDown)
	waitSets(t, bmc, "set power 0", "set power 1", "set power 0")
	if on := powerIsOn(ctx, t, c); on || bmc.Power() != "off" {
		t.Fatalf("after power down: status on=%v, machine %s", on, bmc.Power())
	}
	control(ctx, t, c, chassis.ChassisControlPowerUp)
	if on := powerIsOn(ctx, t, c); !on || bmc.Power() != "on" {
		t.Fatalf("after power up: status on=%v, machine %s", on, bmc.Power())
	}
	// Power cycle of a machine that is on: off at once, on again a second later.
	control(ctx, t, c, chassis.ChassisControlPowerCycle)
	waitSets(t, bmc, "set power 0", "set power 1", "set power 0", "set power 1", "set power 0", "set power 1")
	if got := bmc.Power(); got != "on" {
		t.Errorf("power %s after a power cycle, want on", got)
	}

	// Boot flags: the device reaches the script, the EFI bit does not come back.
	if err := c.SetBootDevice(ctx, types.BootDeviceSelectorForcePXE, types.BIOSBootTypeEFI, false); err != nil {
		t.Fatalf("set boot device: %v", err)
	}
	if got := bmc.Boot(); got != "pxe" {
		t.Errorf("boot %s, want pxe", got)
	}
	flags := &types.BootOptionParam_BootFlags{}
	if err := c.GetSystemBootOptionsParamFor(ctx, flags); err != nil {
		t.Fatalf("get boot flags: %v", err)
	}
	if flags.BootDeviceSelector != types.BootDeviceSelectorForcePXE || flags.BIOSBootType != types.BIOSBootTypeLegacy || flags.BootFlagsValid {
		t.Errorf("boot flags read back: device %v, EFI %v, valid %v; want PXE and ipmi_sim's zero bits",
			flags.BootDeviceSelector, flags.BIOSBootType, flags.BootFlagsValid)
	}
	err := c.SetBootParamSetInProgress(ctx, types.SetInProgress_SetInProgress)
	if re, ok := types.IsResponseError(err); !ok || re.CompletionCode() != types.CodeRequestDataFieldInvalid {
		t.Errorf("set in progress: %v, want completion code 0xcc", err)
	}
}

func control(ctx context.Context, t *testing.T, c *client.Client, ctl chassis.ChassisControl) {
	t.Helper()
	if _, err := c.ChassisControl(ctx, ctl); err != nil {
		t.Fatalf("chassis control %d: %v", ctl, err)
	}
}

func powerIsOn(ctx context.Context, t *testing.T, c *client.Client) bool {
	t.Helper()
	st, err := c.GetChassisStatus(ctx)
	if err != nil {
		t.Fatalf("get chassis status: %v", err)
	}
	return st.PowerIsOn
}

// waitSets waits until the script's "set" calls are want. A call is logged once done, so the
// log, not the state files, is what to wait for.
func waitSets(t *testing.T, bmc *BMC, want ...string) {
	t.Helper()
	var sets []string
	// Polls the call log (nothing signals a call); the failure names the sets seen.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		sets = sets[:0]
		for _, call := range bmc.Calls() {
			if call.Args[0] == "set" {
				sets = append(sets, call.String())
			}
		}
		if slices.Equal(sets, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("script sets %q, want %q", sets, want)
		}
	}
}

// TestSimTimes checks that the script's log has the calls in order with sensible times.
func TestSimTimes(t *testing.T) {
	start := time.Now().Add(-time.Second)
	bmc := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := session(ctx, t, bmc)
	for range 3 {
		if _, err := c.GetChassisStatus(ctx); err != nil {
			t.Fatal(err)
		}
	}
	calls := bmc.Calls()
	if len(calls) < 3 {
		t.Fatalf("%d calls, want at least 3: %v", len(calls), calls)
	}
	for i, call := range calls {
		if call.Time.Before(start) || call.Time.After(time.Now()) {
			t.Errorf("call %d %q at %v, outside the test", i, call, call.Time)
		}
		if i > 0 && call.Time.Before(calls[i-1].Time) {
			t.Errorf("call %d %q before the one logged ahead of it", i, call)
		}
	}
	if got := calls[len(calls)-1].String(); got != "get power" {
		t.Errorf("last call %q, want get power", got)
	}
}

func TestParseCalls(t *testing.T) {
	calls, err := parseCalls([]byte("1700000000.123456789 0x20 get power\n1700000001.5 0x20 set boot pxe\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].String() != "get power" || calls[1].String() != "set boot pxe" {
		t.Fatalf("calls %v", calls)
	}
	if got := calls[1].Time; !got.Equal(time.Unix(1700000001, 500000000)) {
		t.Errorf("time %v", got)
	}
	if _, err := parseCalls([]byte("garbage\n")); err == nil {
		t.Error("a line without time and operation parsed")
	}
}

// session opens an RMCP+ session as administrator with cipher suite 3, step by step (go-ipmi's
// Connect would first ask for the cipher suites, which ipmi_sim does not answer).
func session(ctx context.Context, t *testing.T, bmc *BMC) *client.Client {
	t.Helper()
	c, err := client.NewClient(bmc.Host, bmc.Port, bmc.User, bmc.Password)
	if err != nil {
		t.Fatal(err)
	}
	c.WithTimeout(5 * time.Second).WithRetry(3).WithMaxPrivilegeLevel(types.PrivilegeLevelAdministrator)
	c.WithCipherSuiteID(types.CipherSuiteID3)
	steps := []struct {
		name string
		do   func() error
	}{
		{"open session", func() error { _, err := c.OpenSession(ctx); return err }},
		{"rakp 1", func() error { _, err := c.RAKPMessage1(ctx); return err }},
		{"rakp 3", func() error { _, err := c.RAKPMessage3(ctx); return err }},
		{"privilege", func() error {
			_, err := c.SetSessionPrivilegeLevel(ctx, types.PrivilegeLevelAdministrator)
			return err
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("ipmi session to %s: %s: %v", bmc.Addr(), s.name, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("close session: %v", err)
		}
	})
	return c
}

// With a Machine, power on starts it and power off kills it; a machine that exits is off.
func TestSimMachine(t *testing.T) {
	bmc := Start(t, Options{Machine: `echo started; exec sleep 30`})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := session(ctx, t, bmc)
	if powerIsOn(ctx, t, c) || bmc.Power() != "off" {
		t.Fatal("machine on at start")
	}
	control(ctx, t, c, chassis.ChassisControlPowerUp)
	if !bmc.WaitPower("on", 5*time.Second) || !powerIsOn(ctx, t, c) {
		t.Fatal("machine not on after power up")
	}
	pid := bmc.MachinePid()
	control(ctx, t, c, chassis.ChassisControlPowerDown)
	if !bmc.WaitPower("off", 5*time.Second) || powerIsOn(ctx, t, c) {
		t.Fatal("machine still on after power down")
	}
	// SIGKILL takes effect when the victim is next scheduled: on a loaded host, moments later.
	if !gone(pid, 5*time.Second) {
		t.Fatalf("machine process %d still runs 5 s after power down", pid)
	}
	// A machine that ends by itself is off.
	if err := os.WriteFile(filepath.Join(bmc.Dir, "machine.sh"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	control(ctx, t, c, chassis.ChassisControlPowerUp)
	if !bmc.WaitPower("off", 5*time.Second) || powerIsOn(ctx, t, c) {
		t.Fatal("a machine that exited is on")
	}
}

// gone waits up to d for process pid to end (a zombie has ended) and reports whether it did.
func gone(pid int, d time.Duration) bool {
	// Polls: the process is not our child, so there is no wait to block in.
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		if stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); strings.Contains(string(stat), "zombie") {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
