package ipmibmc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
)

// relayEnv, set, makes the test binary the chassis program: ipmi_sim runs it as the relay to
// the test's Chassis, as it runs `bootctl cluster chassis` for `bootctl cluster bmc`.
const relayEnv = "IPMIBMC_TEST_RELAY"

func TestMain(m *testing.M) {
	if sock := os.Getenv(relayEnv); sock != "" {
		if err := Relay(context.Background(), sock, os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeMachine records its starts, by boot target.
type fakeMachine struct {
	mu     sync.Mutex
	on     bool
	starts []string
	fail   error // PowerOn's error, when set
}

func (m *fakeMachine) PowerOn(_ context.Context, from string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.on, m.starts = true, append(m.starts, from)
	return nil
}

func (m *fakeMachine) PowerOff(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on = false
	return nil
}

func (m *fakeMachine) State(context.Context) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.on, nil
}

func (m *fakeMachine) get() (bool, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.on, slices.Clone(m.starts)
}

// serveChassis serves a Chassis for m on a socket in a new directory until the test ends.
func serveChassis(t *testing.T, m Machine) string {
	sock := filepath.Join(t.TempDir(), "chassis.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewChassis(m, t.Logf).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return sock
}

// TestChassisRelay: every call ipmi_sim makes, through Relay, and what it leaves on the machine;
// bad calls are refused with one error naming what is wrong.
func TestChassisRelay(t *testing.T) {
	m := &fakeMachine{}
	sock := serveChassis(t, m)
	call := func(args string) (string, error) {
		var out strings.Builder
		err := Relay(context.Background(), sock, strings.Fields(args), &out)
		return out.String(), err
	}
	settled := func(on bool, starts ...string) {
		t.Helper()
		testfix.WaitFor(t, fmt.Sprintf("machine on=%v starts=%q", on, starts), 30*time.Second, func() bool {
			gotOn, got := m.get()
			return gotOn == on && slices.Equal(got, starts)
		})
	}
	for _, tc := range []struct {
		call, out, err string
		on             bool
		starts         []string
	}{
		{call: "0x20 get power boot", out: "power:0\nboot:none\n"},
		{call: "0x20 set boot pxe", starts: nil},
		{call: "0x20 get boot", out: "boot:pxe\n"},
		{call: "0x20 set power 1", on: true, starts: []string{"Pxe"}},
		{call: "0x20 get power boot", out: "power:1\nboot:none\n", on: true, starts: []string{"Pxe"}},
		{call: "0x20 set reset 1", on: true, starts: []string{"Pxe", ""}},
		{call: "0x20 set boot pxe", on: true, starts: []string{"Pxe", ""}},
		{call: "0x20 set power 1", on: true, starts: []string{"Pxe", ""}}, // on when on: the override waits
		{call: "0x20 set power 0", on: false, starts: []string{"Pxe", ""}},
		{call: "0x20 set power 0 power 1", on: true, starts: []string{"Pxe", "", "Pxe"}},
		{call: "0x20 set identify 15", on: true, starts: []string{"Pxe", "", "Pxe"}},
		{call: "0x20 set power 0", on: false, starts: []string{"Pxe", "", "Pxe"}},
		{call: "0x20 set reset 1", on: false, starts: []string{"Pxe", "", "Pxe"}}, // a reset of a machine off does nothing
		{call: "0x20 get power", out: "power:0\n", starts: []string{"Pxe", "", "Pxe"}},
		{call: "0x20 get fan", err: `cannot get "fan"`, starts: []string{"Pxe", "", "Pxe"}},
		{call: "0x20 set power 2", err: `set power "2"`, starts: []string{"Pxe", "", "Pxe"}},
		{call: "0x20 set boot usb", err: `set boot "usb"`, starts: []string{"Pxe", "", "Pxe"}},
		{call: "0x20 set power", err: "PARAM VALUE pairs", starts: []string{"Pxe", "", "Pxe"}},
		{call: "0x20 reboot", err: `unknown operation "reboot"`, starts: []string{"Pxe", "", "Pxe"}},
		{call: "0x20", err: "want DEVICE get|set", starts: []string{"Pxe", "", "Pxe"}},
	} {
		out, err := call(tc.call)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one with %q", tc.call, err, tc.err)
			}
			continue
		}
		if err != nil || out != tc.out {
			t.Errorf("%s: %q, %v; want %q", tc.call, out, err, tc.out)
		}
		settled(tc.on, tc.starts...)
	}
}

// TestChassisFailedStart: a start that fails reads off once it has failed, not on as asked.
func TestChassisFailedStart(t *testing.T) {
	m := &fakeMachine{fail: errors.New("no emulator")}
	sock := serveChassis(t, m)
	if err := Relay(context.Background(), sock, strings.Fields("0x20 set power 1"), &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	testfix.WaitFor(t, "the failed start to read off", 30*time.Second, func() bool {
		var out strings.Builder
		return Relay(context.Background(), sock, strings.Fields("0x20 get power"), &out) == nil && out.String() == "power:0\n"
	})
}

// TestChassisBadRequest: a request that is not the relay's JSON line is answered with an error,
// and one that never ends is cut at its size bound.
func TestChassisBadRequest(t *testing.T) {
	sock := serveChassis(t, &fakeMachine{})
	for _, req := range []string{"get power\n", strings.Repeat("x", 2*maxRequest) + "\n"} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		_, _ = c.Write([]byte(req))
		buf := make([]byte, 512)
		n, _ := c.Read(buf)
		c.Close()
		if !strings.Contains(string(buf[:n]), "bad request") {
			t.Errorf("request %.20q...: answer %q, want a bad request", req, buf[:n])
		}
	}
}

// TestSimIpmitool: ipmi_sim with the test binary as its chassis program, driven by ipmitool
// (RMCP+, cipher suite 3): power status, a one-time PXE boot device, on, cycle, reset (which takes
// the override too), off and a wrong password, each checked on the machine behind it.
func TestSimIpmitool(t *testing.T) {
	bin := testenv.NeedTool(t, "ipmi_sim", "openipmi")
	ipmitool := testenv.NeedTool(t, "ipmitool", "ipmitool")
	m := &fakeMachine{}
	t.Setenv(relayEnv, serveChassis(t, m))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sim, err := Start(ctx, Config{Bin: bin, Host: "127.0.0.1", User: "admin", Password: "relay-secret", Chassis: []string{self}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Kill)
	// -N 10: ipmitool resends a request it has no answer to after 1 s, and ipmi_sim carries out a
	// resent reset twice; under -race on a loaded host the chassis program takes longer than that.
	tool := func(password string, args ...string) (string, error) {
		all := append([]string{"-I", "lanplus", "-C", "3", "-N", "10", "-H", "127.0.0.1", "-p", strconv.Itoa(sim.Port()), "-U", "admin", "-P", password}, args...)
		out, err := exec.CommandContext(ctx, ipmitool, all...).CombinedOutput()
		return string(out), err
	}
	for _, step := range []struct {
		args, want string
		on         bool
		starts     []string
	}{
		{args: "chassis power status", want: "Chassis Power is off"},
		{args: "chassis bootdev pxe", want: "Set Boot Device to pxe"},
		{args: "chassis power on", want: "Up/On", on: true, starts: []string{"Pxe"}},
		{args: "chassis power status", want: "Chassis Power is on", on: true, starts: []string{"Pxe"}},
		{args: "chassis power cycle", want: "Cycle", on: true, starts: []string{"Pxe", ""}},
		{args: "chassis bootdev pxe", want: "Set Boot Device to pxe", on: true, starts: []string{"Pxe", ""}},
		{args: "chassis power reset", want: "Reset", on: true, starts: []string{"Pxe", "", "Pxe"}},
		{args: "chassis power reset", want: "Reset", on: true, starts: []string{"Pxe", "", "Pxe", ""}},
		{args: "chassis power off", want: "Down/Off", starts: []string{"Pxe", "", "Pxe", ""}},
		{args: "chassis power status", want: "Chassis Power is off", starts: []string{"Pxe", "", "Pxe", ""}},
	} {
		out, err := tool("relay-secret", strings.Fields(step.args)...)
		if err != nil || !strings.Contains(out, step.want) {
			t.Fatalf("ipmitool %s: %v %q, want %q\nipmi_sim: %s", step.args, err, out, step.want, sim.LogTail(10))
		}
		testfix.WaitFor(t, "the machine after "+step.args, 30*time.Second, func() bool {
			on, starts := m.get()
			return on == step.on && slices.Equal(starts, step.starts)
		})
	}
	if out, err := tool("wrong", "chassis", "power", "status"); err == nil {
		t.Errorf("ipmitool with a wrong password: %q, want refused", out)
	}
}

// TestConfigRefused: what lan.conf cannot carry is refused before anything starts.
func TestConfigRefused(t *testing.T) {
	ok := Config{Bin: "/bin/true", Host: "127.0.0.1", User: "admin", Password: "pw", Chassis: []string{"/bin/true"}, Dir: t.TempDir()}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"IPv6 host", func(c *Config) { c.Host = "::1" }, "not an IPv4 address"},
		{"long password", func(c *Config) { c.Password = strings.Repeat("p", 20) }, "too long"},
		{"no user", func(c *Config) { c.User = "" }, "empty"},
		{"quote in password", func(c *Config) { c.Password = `a"b` }, "quote"},
		{"quote in chassis", func(c *Config) { c.Chassis = []string{"/tmp/it's"} }, "quote"},
		{"no chassis", func(c *Config) { c.Chassis = nil }, "no chassis program"},
		{"bad port", func(c *Config) { c.Port = 70000 }, "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			_, err := Start(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// slowMachine is a fakeMachine whose starts wait for release.
type slowMachine struct {
	fakeMachine
	release chan struct{}
}

func (m *slowMachine) PowerOn(ctx context.Context, from string) error {
	select {
	case <-m.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return m.fakeMachine.PowerOn(ctx, from)
}

// TestChassisAnswersAtOnce: a start that takes its time does not hold the answer up (ipmi_sim
// answers nothing else meanwhile); until it is done, power reads the state asked for.
func TestChassisAnswersAtOnce(t *testing.T) {
	m := &slowMachine{release: make(chan struct{})}
	sock := serveChassis(t, m)
	get := func() string {
		var out strings.Builder
		if err := Relay(context.Background(), sock, strings.Fields("0x20 get power"), &out); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if err := Relay(context.Background(), sock, strings.Fields("0x20 set power 1"), &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	if on, _ := m.get(); on || get() != "power:1\n" {
		t.Errorf("during a start: machine on %v, power read %q; want off and power:1", on, get())
	}
	close(m.release)
	testfix.WaitFor(t, "the start to finish", 30*time.Second, func() bool { on, _ := m.get(); return on })
	if got := get(); got != "power:1\n" {
		t.Errorf("after the start: %q", got)
	}
}
