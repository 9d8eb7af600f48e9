// Package ipmisim starts a real IPMI BMC for tests: OpenIPMI's simulator ipmi_sim (Debian's
// openipmi, /usr/bin/ipmi_sim), answering IPMI 1.5 and 2.0 (RMCP+, "lanplus") on 127.0.0.1 and a
// free UDP port, with one administrator and the password the test chooses. The machine behind it
// is a shell script (ipmi_sim's chassis_control program) that keeps the power state and the boot
// device in files of the test's temporary directory and logs every call, so a test sees what a
// client made the BMC do, not what the client believes it did.
//
// Each BMC has its own port, directory and process; several in one test are independent. Each
// runs in a process group of its own, and only those groups are signalled: the BMC is killed in
// tb.Cleanup, pass or fail, and nothing else is touched. A missing ipmi_sim skips the test, or
// fails it in CI (see testenv).
//
// What ipmi_sim does, found by trying it (OpenIPMI 2.0.33):
//   - It runs the chassis_control program through popen with the arguments written in lan.conf
//     followed by "get PARAM..." or "set PARAM VALUE...", so the device (0x20) is part of the
//     configured command, and the script's path is quoted there for the shell.
//   - Power cycle is "set power 0" at once and "set power 1" from a one-second timer, whether the
//     machine was on or off: a client sees the machine off for about a second (WaitPower).
//   - Set System Boot Options parameter 5 passes only the device selector to the program
//     ("set boot pxe"); the EFI, persistent and valid bits are dropped, and Get System Boot
//     Options answers them as zero. Parameter 0 (set in progress) is refused with 0xCC.
//   - Get Channel Cipher Suites goes unanswered (clients that ask, as ipmitool does without -C,
//     wait for their timeout); cipher suite 3 works, 17 is refused in Open Session with a
//     two-byte reply; Get Channel Authentication Capabilities is answered only in IPMI 1.5 framing.
//   - It binds its UDP port with address reuse, so a second simulator on the same port starts
//     without an error: Start checks that its process is the port's only owner.
package ipmisim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/ipmibmc"
	"github.com/bootfabric/bootfabric/internal/testenv"
)

// Options configure Start.
type Options struct {
	// User is the administrator's name (default "admin"; at most 16 bytes, IPMI's limit).
	User string
	// Password is the administrator's password (default "ipmisim-secret"; at most ipmibmc.MaxPassword, 19 bytes).
	Password string
	// Power is the machine's power state at start: "on" or "off" (default).
	Power string
	// ReadyTimeout bounds the wait for the simulator to answer (default 30 s: ipmi_sim is up in
	// milliseconds, but a loaded machine can stall it for seconds).
	ReadyTimeout time.Duration
	// Machine, when set, is the machine itself: shell commands started in a session of their own
	// (output to machine.log in Dir) when the BMC powers it on, and killed, the whole session,
	// when it powers it off. The machine is on while they run: a VM that powers itself off is
	// off. Power starts off. Without it, the power state is only a file.
	Machine string
}

// Call is one run of the chassis control script by the simulator.
type Call struct {
	Time time.Time // when the script started
	// Args are the script's arguments after the device: "get", "power" or "set", "boot", "pxe".
	Args []string
}

// String is the call's arguments joined by spaces, as "set power 1".
func (c Call) String() string { return strings.Join(c.Args, " ") }

// BMC is a running simulator. Its methods are safe for concurrent use; those that fail the test
// on an error must be called from the goroutine of the test that started the BMC, as t.Fatal.
type BMC struct {
	// Host and Port are the BMC's address (127.0.0.1 and a UDP port).
	Host string
	Port int
	// User and Password are the administrator's credentials.
	User, Password string
	// Dir holds lan.conf, the command file, the chassis script, its state files and log, the
	// simulator's state directory and its output (ipmi_sim.log).
	Dir string

	tb  testing.TB
	sim *ipmibmc.Sim
}

// Start starts a simulator and waits until it answers an RMCP presence ping. It fails the test
// when the simulator does not come up; a missing ipmi_sim skips it (fails it in CI).
func Start(tb testing.TB, opts Options) *BMC {
	tb.Helper()
	bin := testenv.NeedTool(tb, "ipmi_sim", "openipmi")
	if opts.User == "" {
		opts.User = "admin"
	}
	if opts.Password == "" {
		opts.Password = "ipmisim-secret"
	}
	power := "0"
	switch opts.Power {
	case "", "off":
	case "on":
		power = "1"
	default:
		tb.Fatalf("ipmisim: Power %q, want on or off", opts.Power)
	}

	// TempDir first: cleanups run last-registered first, so the simulator is killed before its
	// directory is removed.
	dir := tb.TempDir()
	b := &BMC{Host: "127.0.0.1", User: opts.User, Password: opts.Password, Dir: dir, tb: tb}
	tb.Cleanup(b.cleanup)
	if err := b.writeFiles(power, opts.Machine); err != nil {
		tb.Fatalf("ipmisim: %v", err)
	}
	sim, err := ipmibmc.Start(context.Background(), ipmibmc.Config{Bin: bin, Host: b.Host, User: b.User, Password: b.Password,
		Chassis: []string{filepath.Join(dir, "chassis.sh")}, Dir: dir, ReadyTimeout: opts.ReadyTimeout})
	if err != nil {
		tb.Fatalf("ipmisim: %v", err)
	}
	b.sim, b.Port = sim, sim.Port()
	return b
}

// Addr is the BMC's address, host:port.
func (b *BMC) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(b.Port)) }

// Power is the machine's power state as the chassis script keeps it: "on" or "off".
func (b *BMC) Power() string {
	b.tb.Helper()
	if b.hasMachine() {
		if b.MachinePid() > 0 {
			return "on"
		}
		return "off"
	}
	switch v := b.readState("power"); v {
	case "1":
		return "on"
	case "0":
		return "off"
	default:
		b.tb.Fatalf("ipmisim: power state file holds %q", v)
		return ""
	}
}

func (b *BMC) hasMachine() bool {
	_, err := os.Stat(filepath.Join(b.Dir, "machine.sh"))
	return err == nil
}

// MachinePid is the running machine's process (its session's leader), or 0 when it is off or
// there is no Machine.
func (b *BMC) MachinePid() int {
	data, err := os.ReadFile(filepath.Join(b.Dir, "machine.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// A zombie (state Z, after the last ")") has exited.
	if err != nil || strings.Contains(string(stat[bytes.LastIndexByte(stat, ')')+1:]), " Z ") {
		return 0
	}
	return pid
}

// SetPower changes the machine's power state behind the BMC's back, as someone pressing its
// button would: "on" or "off".
func (b *BMC) SetPower(state string) {
	b.tb.Helper()
	v := map[string]string{"on": "1", "off": "0"}[state]
	if v == "" {
		b.tb.Fatalf("ipmisim: SetPower(%q), want on or off", state)
	}
	if err := writeAtomic(filepath.Join(b.Dir, "power"), v+"\n"); err != nil {
		b.tb.Fatalf("ipmisim: %v", err)
	}
}

// WaitPower waits until the power state is want ("on" or "off"), at most limit, and reports
// whether it got there. ipmi_sim powers a cycled machine on again from a one-second timer.
func (b *BMC) WaitPower(want string, limit time.Duration) bool {
	b.tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		if b.Power() == want {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Boot is the boot device the BMC last passed to the machine: "none" (no override, the state at
// start), "pxe", "default" (disk), "cdrom" or "bios".
func (b *BMC) Boot() string {
	b.tb.Helper()
	return b.readState("boot")
}

// Calls returns the chassis script's calls so far, oldest first. A call is logged when the
// script ends, so its effect on Power and Boot is visible once it is listed; Time is when it
// started. The simulator calls the script on its own too (a "get power" at start, for one).
func (b *BMC) Calls() []Call {
	b.tb.Helper()
	data, err := os.ReadFile(filepath.Join(b.Dir, "calls.log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		b.tb.Fatalf("ipmisim: %v", err)
	}
	calls, err := parseCalls(data)
	if err != nil {
		b.tb.Fatalf("ipmisim: calls.log: %v", err)
	}
	return calls
}

// Running reports whether the simulator's process is running.
func (b *BMC) Running() bool { return b.sim != nil && b.sim.Running() }

// Stop ends the simulator (SIGTERM, SIGKILL after 5 s) and waits for it: the BMC stops
// answering, and the port is closed, so that a datagram sent to it draws an ICMP port
// unreachable. The machine's state files stay.
func (b *BMC) Stop() { b.sim.Stop() }

// Restart starts a stopped simulator again on the same port, state and credentials, as a BMC
// that rebooted, and waits until it answers. Sessions opened before are gone.
func (b *BMC) Restart() {
	b.tb.Helper()
	if err := b.sim.Restart(context.Background()); err != nil {
		b.tb.Fatalf("ipmisim: %v", err)
	}
}

// writeFiles writes the chassis script, its initial state, the command file, lan.conf and the
// machine's script if there is one.
func (b *BMC) writeFiles(power, machine string) error {
	if err := os.Mkdir(filepath.Join(b.Dir, "state"), 0o755); err != nil {
		return err
	}
	if machine != "" {
		if power != "0" {
			return errors.New("a Machine starts off")
		}
		if err := os.WriteFile(filepath.Join(b.Dir, "machine.sh"), []byte("#!/bin/sh\n"+machine+"\n"), 0o755); err != nil {
			return err
		}
	}
	files := []struct {
		name, text string
		mode       os.FileMode
	}{
		{"chassis.sh", strings.ReplaceAll(chassisScript, "@DIR@", b.Dir), 0o755},
		{"power", power + "\n", 0o644},
		{"boot", "none\n", 0o644},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(b.Dir, f.name), []byte(f.text), f.mode); err != nil {
			return err
		}
	}
	return nil
}

// cleanup kills the simulator and, when the test failed, logs its output and the script's calls.
func (b *BMC) cleanup() {
	if b.sim != nil {
		b.sim.Kill()
	}
	if pid := b.MachinePid(); pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // the machine's session: setsid made it its leader
	}
	if b.tb.Failed() {
		calls, _ := os.ReadFile(filepath.Join(b.Dir, "calls.log"))
		tail := "(not started)"
		if b.sim != nil {
			tail = b.sim.LogTail(30)
		}
		b.tb.Logf("ipmisim: BMC %s: ipmi_sim output (end):\n%s\nchassis calls:\n%s", b.Addr(), tail, calls)
	}
}

func (b *BMC) readState(name string) string {
	b.tb.Helper()
	data, err := os.ReadFile(filepath.Join(b.Dir, name))
	if err != nil {
		b.tb.Fatalf("ipmisim: %v", err)
	}
	return strings.TrimSpace(string(data))
}

// parseCalls parses the script's log: one call a line, "SECONDS.NANOSECONDS DEVICE ARGS...".
func parseCalls(data []byte) ([]Call, error) {
	var calls []Call
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: %q: want time, device and operation", n, sc.Text())
		}
		sec, frac, _ := strings.Cut(f[0], ".")
		s, err1 := strconv.ParseInt(sec, 10, 64)
		ns, err2 := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("line %d: time %q: %w", n, f[0], err)
		}
		// f[1] is the device from lan.conf (0x20), the same in every call.
		calls = append(calls, Call{Time: time.Unix(s, ns), Args: f[2:]})
	}
	return calls, sc.Err()
}

// writeAtomic replaces path's contents by renaming a temporary file over it, so that the script
// (run by the simulator at any moment) never reads a half-written state.
func writeAtomic(path, text string) error {
	tmp := path + ".tmp-go"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// chassisScript is the machine behind the BMC: ipmi_sim's chassis_control program. @DIR@ is the
// BMC's directory. ipmi_sim runs it through the shell as "SCRIPT 0x20 get PARAM..." or
// "SCRIPT 0x20 set PARAM VALUE...", values double-quoted; a get prints "PARAM:VALUE" lines.
const chassisScript = `#!/bin/sh
# The machine behind an ipmisim BMC (internal/ipmisim): power and boot device kept in files,
# every call logged with the time it started, for the test to compare with what the client asked.
dir='@DIR@'
# Logged on exit, so that a call in the log has had its effect on the state files.
now=$(date +%s.%N)
call="$*"
trap 'echo "$now $call" >> "$dir/calls.log"' EXIT
shift # the device, 0x20, from lan.conf
op=$1
shift
# put NAME VALUE: replace a state file whole, so that a reader never sees it half-written.
put() {
	echo "$2" > "$dir/$1.tmp" && mv "$dir/$1.tmp" "$dir/$1"
}
# With a machine (machine.sh), power is whether it runs: started in a session of its own, its
# output in a file (ipmi_sim reads this script's output until every writer closes it).
running() {
	pid=$(cat "$dir/machine.pid" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
		! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null
}
machine() {
	if [ "$1" = 1 ]; then
		running || { setsid "$dir/machine.sh" >>"$dir/machine.log" 2>&1 </dev/null & echo $! > "$dir/machine.pid"; }
	elif running; then
		kill -KILL "-$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null # the group, or the child not yet in its session
		rm -f "$dir/machine.pid"
	fi
}
case $op in
get)
	for p in "$@"; do
		case $p in
		power) if [ -f "$dir/machine.sh" ]; then if running; then echo power:1; else echo power:0; fi; else echo "power:$(cat "$dir/power")"; fi ;;
		boot) echo "$p:$(cat "$dir/$p")" ;;
		*) echo "ipmisim: cannot get $p"; exit 1 ;;
		esac
	done
	;;
set)
	while [ $# -ge 2 ]; do
		case $1 in
		power) put power "$2"; [ -f "$dir/machine.sh" ] && machine "$2" ;;
		boot) put boot "$2" ;;
		reset) ;; # a reset pulse: the machine restarts, no state kept here changes
		identify) ;;
		*) echo "ipmisim: cannot set $1"; exit 1 ;;
		esac
		shift 2
	done
	;;
*)
	echo "ipmisim: unknown operation $op"
	exit 1
	;;
esac
`
