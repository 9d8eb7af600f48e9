package redfishsim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bootfabric/bootfabric/internal/procgroup"
)

// QEMUMachine is a Machine that is a QEMU VM, driven through QMP, QEMU's own control protocol,
// on a unix socket in Dir: power on starts QEMU (with the boot override's arguments when the
// start takes one), the power state is the VM's run state as QEMU reports it, ForceOff is QMP's
// quit, GracefulShutdown its system_powerdown (the ACPI power button: the guest decides).
//
// QMP rather than a chassis script that starts and kills a process (ipmisim's way): the state
// read is QEMU's own (a VM paused or stopped after a shutdown reads off while its process
// lingers), the ACPI power button exists only there, and quit lets QEMU close its disk images
// cleanly where a signal to a wrapper (ip netns exec, sudo) may not reach it.
type QEMUMachine struct {
	// Argv is the VM's command: the emulator, or a wrapper that execs it (ip netns exec NS
	// qemu-system-x86_64 ...), and its arguments, without -qmp and without the one-time boot
	// selection. -no-reboot makes a guest's reboot a power-off.
	Argv []string
	// BootArgs are appended to a start that takes a boot override, by its target (default:
	// Pxe: -boot once=n, which SeaBIOS honours; a UEFI VM wants its NIC's bootindex instead).
	// A target with no entry starts as without an override.
	BootArgs map[string][]string
	// Dir holds the QMP socket (qmp.sock) and the VM's output (console.log), each start's command
	// line logged first.
	Dir string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	qmp  *qmpConn      // connected to the running VM, or nil
}

// DefaultBootArgs are QEMUMachine's boot override arguments when BootArgs is nil.
func DefaultBootArgs() map[string][]string {
	return map[string][]string{"Pxe": {"-boot", "once=n"}}
}

// qmpWait bounds the wait for a starting QEMU's QMP socket.
const qmpWait = 30 * time.Second

// SocketPath is the QMP socket's path.
func (m *QEMUMachine) SocketPath() string { return filepath.Join(m.Dir, "qmp.sock") }

// ConsoleLog is the file the VM's output goes to.
func (m *QEMUMachine) ConsoleLog() string { return filepath.Join(m.Dir, "console.log") }

// Args is the command line of a start from the boot target from ("" none).
func (m *QEMUMachine) Args(from string) []string {
	args := append(slices.Clone(m.Argv), "-qmp", "unix:"+m.SocketPath()+",server=on,wait=off")
	boot := m.BootArgs
	if boot == nil {
		boot = DefaultBootArgs()
	}
	return append(args, boot[from]...)
}

// PowerOn implements Machine: QEMU starts unless it runs, and the call returns once QMP answers.
func (m *QEMUMachine) PowerOn(ctx context.Context, from string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running() {
		return nil
	}
	if len(m.Argv) == 0 {
		return errors.New("qemu machine: no command")
	}
	sock := m.SocketPath()
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("qemu machine: %w", err)
	}
	logf, err := os.OpenFile(m.ConsoleLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("qemu machine: %w", err)
	}
	defer logf.Close()
	args := m.Args(from)
	fmt.Fprintf(logf, "== %s power on (boot override %q): %s\n", time.Now().UTC().Format(time.RFC3339), from, strings.Join(args, " "))
	// Not CommandContext: the VM outlives the request that powered it on. Its own process group,
	// so that power off reaches a wrapper's children; SIGKILL if the BMC dies, so no VM is left
	// behind without the BMC that could stop it.
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("qemu machine: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	m.cmd, m.done = cmd, done
	q, err := dialQMP(ctx, sock, done)
	if err != nil {
		procgroup.Stop(cmd.Process.Pid, done, syscall.SIGKILL)
		m.cmd = nil
		return fmt.Errorf("qemu machine: %w (its output: %s)", err, m.ConsoleLog())
	}
	m.qmp = q
	return nil
}

// PowerOff implements Machine: QMP quit, then the process group is killed if QEMU is still
// there 10 s later (at once when QMP does not answer), and waited for.
func (m *QEMUMachine) PowerOff(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.running() {
		m.closeQMP()
		return nil
	}
	var err error
	if m.qmp != nil {
		if _, err = m.qmp.execute(ctx, "quit"); err == nil {
			select {
			case <-m.done:
			case <-time.After(10 * time.Second):
			}
		}
	}
	procgroup.Stop(m.cmd.Process.Pid, m.done, syscall.SIGKILL)
	m.closeQMP()
	m.cmd = nil
	if err != nil && !errors.Is(err, errQMPClosed) {
		return fmt.Errorf("qemu machine: quit: %w (killed)", err)
	}
	return nil
}

// Shutdown implements Shutdowner: the ACPI power button. The guest powers off, or not.
func (m *QEMUMachine) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.running() || m.qmp == nil {
		return nil
	}
	_, err := m.qmp.execute(ctx, "system_powerdown")
	return err
}

// State implements Machine: on while QEMU runs and its VM is not shut down; the run state comes
// from QMP's query-status.
func (m *QEMUMachine) State(ctx context.Context) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.running() {
		m.closeQMP()
		return false, nil
	}
	if m.qmp == nil {
		return true, nil
	}
	raw, err := m.qmp.execute(ctx, "query-status")
	if err != nil {
		// The process is the power; QMP only refines it. A VM whose QMP stopped answering still
		// reads on, so that ForceOff is still sent to it (and kills it).
		m.closeQMP()
		return m.running(), nil
	}
	var st struct{ Status string }
	if err := json.Unmarshal(raw, &st); err != nil {
		return false, fmt.Errorf("qemu machine: query-status: %w", err)
	}
	// "shutdown": the guest powered off under -no-shutdown; "guest-panicked" and "internal-error"
	// stay on, as a hung machine's power does.
	return st.Status != "shutdown", nil
}

// running reports whether QEMU runs; m.mu is held.
func (m *QEMUMachine) running() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

func (m *QEMUMachine) closeQMP() {
	if m.qmp != nil {
		m.qmp.close()
		m.qmp = nil
	}
}

// qmpConn is a QMP session (QEMU's docs/interop/qmp-spec): a greeting, qmp_capabilities, then
// one command at a time, each answered by a "return" or an "error" line; "event" lines between
// are skipped.
type qmpConn struct {
	c net.Conn
	r *bufio.Reader
}

var errQMPClosed = errors.New("QMP connection closed")

// dialQMP connects to a starting QEMU's socket, waiting for it while the process runs (done).
func dialQMP(ctx context.Context, sock string, done <-chan struct{}) (*qmpConn, error) {
	ctx, cancel := context.WithTimeout(ctx, qmpWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", sock)
		if err == nil {
			q := &qmpConn{c: c, r: bufio.NewReaderSize(c, 64<<10)}
			if err := q.handshake(ctx); err != nil {
				c.Close()
				return nil, err
			}
			return q, nil
		}
		select {
		case <-done:
			return nil, errors.New("QEMU exited before its QMP socket answered")
		case <-ctx.Done():
			return nil, fmt.Errorf("no QMP socket %s: %w", sock, ctx.Err())
		case <-tick.C:
		}
	}
}

func (q *qmpConn) handshake(ctx context.Context) error {
	q.deadline(ctx)
	var greeting struct {
		QMP json.RawMessage `json:"QMP"`
	}
	line, err := q.r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("QMP greeting: %w", err)
	}
	if err := json.Unmarshal(line, &greeting); err != nil || greeting.QMP == nil {
		return fmt.Errorf("QMP greeting: %q is not one", strings.TrimSpace(string(line)))
	}
	_, err = q.execute(ctx, "qmp_capabilities")
	return err
}

// deadline bounds the next exchange by ctx (10 s without a deadline).
func (q *qmpConn) deadline(ctx context.Context) {
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Now().Add(10 * time.Second)
	}
	_ = q.c.SetDeadline(d)
}

// execute runs a command and returns its "return" value.
func (q *qmpConn) execute(ctx context.Context, command string) (json.RawMessage, error) {
	q.deadline(ctx)
	req, _ := json.Marshal(map[string]string{"execute": command})
	if _, err := q.c.Write(append(req, '\n')); err != nil {
		return nil, fmt.Errorf("%w: %w", errQMPClosed, err)
	}
	for range 1000 { // events between a command and its answer are few; bound the loop anyway
		line, err := q.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errQMPClosed, err)
		}
		var msg struct {
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class, Desc string
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return nil, fmt.Errorf("QMP %s: answer %q: %w", command, strings.TrimSpace(string(line)), err)
		}
		switch {
		case msg.Error != nil:
			return nil, fmt.Errorf("QMP %s: %s: %s", command, msg.Error.Class, msg.Error.Desc)
		case msg.Return != nil:
			return msg.Return, nil
		}
	}
	return nil, fmt.Errorf("QMP %s: no answer among 1000 events", command)
}

func (q *qmpConn) close() { _ = q.c.Close() }
