package etcdtest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/bootfabric/bootfabric/internal/procgroup"
)

// Member is one etcd process of a Cluster. Its methods are safe for concurrent use.
type Member struct {
	// Name is the member's etcd name (m0, m1, m2).
	Name string
	// Endpoint is the member's client address, ClientHost:PORT.
	Endpoint string
	// PeerURL is the member's peer URL.
	PeerURL string

	bin, dir string
	args     []string
	cluster  *Cluster

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// spawn starts the process in a new process group, logging to the member's log file (appended
// across restarts). The process is also sent SIGKILL if the test binary dies (Pdeathsig).
func (m *Member) spawn() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return fmt.Errorf("member %s already running", m.Name)
	}
	logf, err := os.OpenFile(m.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(m.bin, m.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start etcd member %s: %w", m.Name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(done)
	}()
	m.cmd, m.done = cmd, done
	return nil
}

// Running reports whether the member's process is running.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
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

// Kill ends the member at once with SIGKILL (a crash), and waits for it to exit.
func (m *Member) Kill() { m.signal(syscall.SIGKILL) }

// Stop ends the member with SIGTERM (a clean shutdown), SIGKILL after 5 s, and waits.
func (m *Member) Stop() { m.signal(syscall.SIGTERM) }

// Restart starts a stopped or killed member again on the same ports and data, and waits until it
// is healthy. It fails the test when the member does not come back.
func (m *Member) Restart() {
	m.cluster.tb.Helper()
	m.kill()
	if err := m.spawn(); err != nil {
		m.cluster.tb.Fatalf("etcdtest: %v", err)
	}
	if err := m.cluster.waitHealthy(m); err != nil {
		m.cluster.tb.Fatalf("etcdtest: restart: %v", err)
	}
}

func (m *Member) kill() { m.signal(syscall.SIGKILL) }

// signal sends sig to the member's process group and waits for the process to exit, sending
// SIGKILL after 5 s. Only the group of the process this member started is signalled.
func (m *Member) signal(sig syscall.Signal) {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd, m.done = nil, nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	procgroup.Stop(cmd.Process.Pid, done, sig) // Setpgid: the group's id is the leader's pid
}

// healthy asks the member's /health endpoint (over https with a client certificate under TLS).
func (m *Member) healthy() (bool, error) {
	resp, err := m.cluster.hc.Get(m.cluster.scheme() + "://" + m.Endpoint + "/health")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return false, err
	}
	var h struct {
		Health string `json:"health"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return false, fmt.Errorf("/health: %w: %q", err, b)
	}
	if h.Health != "true" {
		return false, fmt.Errorf("/health: %s", b)
	}
	return true, nil
}

func (m *Member) logPath() string { return filepath.Join(m.dir, "etcd.log") }
