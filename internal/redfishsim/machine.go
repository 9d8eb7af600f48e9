package redfishsim

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/bootfabric/bootfabric/internal/procgroup"
)

// CommandMachine is a Machine that is a shell command: powered on, the command starts in a
// process group of its own (a QEMU guest, a script); powered off, the whole group is killed. It
// is on while the command runs, so a guest that powers itself off is off, as with ipmisim's. The
// start's boot override target is in the command's environment as REDFISH_BOOT_TARGET ("" for
// the normal order), for a command that chooses its boot device.
type CommandMachine struct {
	// Command is run by sh -c.
	Command string
	// Log, when set, receives the command's output (else it is discarded).
	Log string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// PowerOn implements Machine: the command starts unless it runs.
func (m *CommandMachine) PowerOn(ctx context.Context, from string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running() {
		return nil
	}
	// Not CommandContext: the machine outlives the request that powered it on.
	cmd := exec.Command("sh", "-c", m.Command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "REDFISH_BOOT_TARGET="+from)
	if m.Log != "" {
		f, err := os.OpenFile(m.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	m.cmd, m.done = cmd, done
	return ctx.Err()
}

// PowerOff implements Machine: the command's process group is killed, and waited for.
func (m *CommandMachine) PowerOff(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.running() {
		return nil
	}
	procgroup.Stop(m.cmd.Process.Pid, m.done, syscall.SIGKILL)
	m.cmd = nil
	return ctx.Err()
}

// State implements Machine.
func (m *CommandMachine) State(ctx context.Context) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ctx.Err() != nil {
		return false, errors.Join(errors.New("machine state"), ctx.Err())
	}
	return m.running(), nil
}

// running reports whether the command runs; m.mu is held.
func (m *CommandMachine) running() bool {
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
