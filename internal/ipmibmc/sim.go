// Package ipmibmc runs OpenIPMI's simulator ipmi_sim (Debian's openipmi) as a real IPMI BMC:
// IPMI 1.5 and 2.0 (RMCP+, "lanplus") on a UDP address, one administrator, and a chassis that is
// a program ipmi_sim runs for every power or boot device request (its chassis_control). Chassis
// is such a chassis acting on a Machine (a QEMU VM through QMP, for one), behind a unix socket
// that Relay, the program ipmi_sim runs, forwards each request to.
//
// It imports no testing: `bootctl cluster bmc --protocol ipmi` links it. internal/ipmisim, the
// test helper, runs its simulators with Start too.
//
// ipmi_sim runs the chassis program through popen with the words configured in lan.conf, then
// "get PARAM..." or "set PARAM VALUE...", and reads its output to the end before it answers any
// other request: a chassis program must be quick (Chassis answers at once and acts after).
package ipmibmc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bootfabric/bootfabric/internal/procgroup"
)

// The longest credentials the simulator takes: IPMI's RMCP+ user name (16 bytes), and one byte
// short of IPMI 2.0's password (20): ipmi_sim (OpenIPMI 2.0.33) fails RAKP with a 20-byte password
// for ipmitool and go-ipmi alike, and accepts 19 (found by trying).
const (
	MaxUser     = 16
	MaxPassword = 19
)

// Config is one simulator.
type Config struct {
	// Bin is ipmi_sim's path (default: found in PATH).
	Bin string
	// Host and Port are the address it answers on; Port 0 takes a free port (retried on a new
	// one when taken in between).
	Host string
	Port int
	// User and Password are the administrator's (at most MaxUser and MaxPassword bytes; no
	// quote, backslash or newline: lan.conf has no escapes).
	User, Password string
	// Chassis is the chassis program's command line, before the device ipmi_sim's calls name.
	Chassis []string
	// Dir holds lan.conf, sim.cmds, the simulator's state directory and its output
	// (ipmi_sim.log).
	Dir string
	// ReadyTimeout bounds the wait for the first answer (default 30 s: ipmi_sim is up in
	// milliseconds, but a loaded machine can stall it for seconds).
	ReadyTimeout time.Duration
}

// Sim is a running simulator. Its methods are safe for concurrent use.
type Sim struct {
	cfg Config

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Check fills cfg's defaults (ipmi_sim found in PATH) and refuses what lan.conf cannot carry;
// Start checks too, for a caller that wants its errors before it starts anything else.
func (cfg *Config) Check() error {
	if cfg.Bin == "" {
		bin, err := exec.LookPath("ipmi_sim")
		if err != nil {
			return fmt.Errorf("ipmi_sim: %w (install the Debian package openipmi)", err)
		}
		cfg.Bin = bin
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	switch {
	case net.ParseIP(cfg.Host).To4() == nil:
		return fmt.Errorf("ipmi_sim: host %q is not an IPv4 address", cfg.Host)
	case cfg.Port < 0 || cfg.Port > 65535:
		return fmt.Errorf("ipmi_sim: port %d out of range", cfg.Port)
	case cfg.User == "" || len(cfg.User) > MaxUser || len(cfg.Password) > MaxPassword:
		return fmt.Errorf("ipmi_sim: user %q or its password empty or too long (at most %d and %d bytes)", cfg.User, MaxUser, MaxPassword)
	case strings.ContainsAny(cfg.User+cfg.Password, "\"\\\n"):
		return errors.New("ipmi_sim: user or password with a quote, backslash or newline (lan.conf has no escapes)")
	case len(cfg.Chassis) == 0:
		return errors.New("ipmi_sim: no chassis program")
	case cfg.Dir == "":
		return errors.New("ipmi_sim: no directory")
	}
	for _, w := range append([]string{cfg.Dir}, cfg.Chassis...) {
		// Each word is single-quoted inside lan.conf's double-quoted string.
		if strings.ContainsAny(w, "'\"\\\n") {
			return fmt.Errorf("ipmi_sim: %q has a quote, backslash or newline, which lan.conf cannot carry", w)
		}
	}
	return nil
}

// Start writes the simulator's files into cfg.Dir, starts it in a process group of its own and
// waits until it answers an RMCP presence ping and is the only owner of its port.
func Start(ctx context.Context, cfg Config) (*Sim, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "state"), 0o700); err != nil {
		return nil, fmt.Errorf("ipmi_sim: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "sim.cmds"), []byte(simCommands), 0o644); err != nil {
		return nil, fmt.Errorf("ipmi_sim: %w", err)
	}
	s := &Sim{cfg: cfg}
	free := cfg.Port == 0
	var err error
	// A port found free may be taken before ipmi_sim binds it (and ipmi_sim binds with address
	// reuse, so it would not even notice): a start that fails is retried on a new port.
	for attempt := 0; attempt < 3; attempt++ {
		if free {
			if s.cfg.Port, err = freeUDPPort(cfg.Host); err != nil {
				return nil, err
			}
		}
		if err = s.start(ctx); err == nil || !free || ctx.Err() != nil {
			break
		}
		s.Kill()
	}
	if err != nil {
		s.Kill()
		return nil, fmt.Errorf("ipmi_sim on %s: %w\n%s", s.Addr(), err, s.LogTail(20))
	}
	return s, nil
}

// Addr is the simulator's address, host:port.
func (s *Sim) Addr() string { return net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.Port)) }

// Port is the UDP port it answers on.
func (s *Sim) Port() int { return s.cfg.Port }

// Done is closed when the running simulator exits (nil when none runs).
func (s *Sim) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// Running reports whether the simulator's process runs.
func (s *Sim) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Stop ends the simulator (SIGTERM, SIGKILL after 5 s) and waits for it: its port is closed.
func (s *Sim) Stop() { s.signal(syscall.SIGTERM) }

// Kill ends the simulator with SIGKILL and waits for it.
func (s *Sim) Kill() { s.signal(syscall.SIGKILL) }

// Restart starts a stopped simulator again on the same port and files, as a BMC that rebooted.
func (s *Sim) Restart(ctx context.Context) error {
	s.Kill()
	if err := s.start(ctx); err != nil {
		return fmt.Errorf("ipmi_sim: restart on %s: %w\n%s", s.Addr(), err, s.LogTail(20))
	}
	return nil
}

// LogPath is the simulator's output.
func (s *Sim) LogPath() string { return filepath.Join(s.cfg.Dir, "ipmi_sim.log") }

// LogTail returns the last n lines of the simulator's output.
func (s *Sim) LogTail(n int) string {
	data, err := os.ReadFile(s.LogPath())
	if err != nil {
		return fmt.Sprintf("(no output: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// lanConf is the simulator's configuration. The port is only known per attempt.
func (s *Sim) lanConf() string {
	q := make([]string, len(s.cfg.Chassis))
	for i, w := range s.cfg.Chassis {
		q[i] = "'" + w + "'"
	}
	return fmt.Sprintf(`# Written by bootfabric (internal/ipmibmc).
name "bmc0"
set_working_mc 0x20
  startlan 1
    addr %s %d
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
    lan_config_program "/bin/true"
  endlan
  chassis_control "%s 0x20"
  # User 1 is IPMI's anonymous user: disabled, so only the administrator gets in.
  user 1 false "" "" user 10 none md2 md5 straight
  user 2 true "%s" "%s" admin 10 none md2 md5 straight
`, s.cfg.Host, s.cfg.Port, strings.Join(q, " "), s.cfg.User, s.cfg.Password)
}

// start writes lan.conf for the current port, spawns the simulator and waits until it answers
// and is the port's only owner.
func (s *Sim) start(ctx context.Context) error {
	conf := filepath.Join(s.cfg.Dir, "lan.conf")
	// 0600: it holds the password.
	if err := os.WriteFile(conf, []byte(s.lanConf()), 0o600); err != nil {
		return err
	}
	if err := s.spawn(conf); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyTimeout)
	defer cancel()
	for {
		err := Ping(s.Addr(), 200*time.Millisecond)
		if err == nil {
			break
		}
		if !s.Running() {
			return errors.New("ipmi_sim exited")
		}
		if ctx.Err() != nil {
			return fmt.Errorf("no answer to an RMCP ping within %v: %w", s.cfg.ReadyTimeout, err)
		}
	}
	owners, err := udpSockets(s.cfg.Host, s.cfg.Port)
	if err != nil {
		return err
	}
	if owners != 1 {
		return fmt.Errorf("%d sockets bound to UDP port %d, want only this simulator's", owners, s.cfg.Port)
	}
	return nil
}

// spawn starts ipmi_sim in a new process group, its output appended to ipmi_sim.log. It gets
// SIGKILL if the process that started it dies (Pdeathsig), so no BMC outlives its owner.
func (s *Sim) spawn(conf string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("ipmi_sim already running")
	}
	logf, err := os.OpenFile(s.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// -n: no console on stdin/stdout, which a daemon does not have.
	cmd := exec.Command(s.cfg.Bin, "-c", conf, "-f", filepath.Join(s.cfg.Dir, "sim.cmds"),
		"-s", filepath.Join(s.cfg.Dir, "state"), "-n")
	cmd.Dir = s.cfg.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start ipmi_sim: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	return nil
}

// signal sends sig to the simulator's process group (its chassis programs included) and waits for
// it to exit, sending SIGKILL after 5 s. Only the group this Sim started is signalled.
func (s *Sim) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	procgroup.Stop(cmd.Process.Pid, done, sig) // Setpgid: the group's id is the leader's pid
}

// freeUDPPort returns a UDP port of host that was free a moment ago.
func freeUDPPort(host string) (int, error) {
	c, err := net.ListenPacket("udp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("free UDP port: %w", err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}

// Ping sends an RMCP/ASF presence ping to addr and waits up to wait for the pong (DMTF ASF 2.0
// §3.2.4): the simulator answers it as soon as its LAN interface is up, without a session.
func Ping(addr string, wait time.Duration) error {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	// RMCP header (version 6, reserved, sequence 0xff: no ACK, class 6: ASF), then the ASF
	// message: IANA 4542 (ASF), type 0x80 (presence ping), tag, reserved, data length 0.
	req := []byte{0x06, 0x00, 0xff, 0x06, 0x00, 0x00, 0x11, 0xbe, 0x80, 0x01, 0x00, 0x00}
	if _, err := c.Write(req); err != nil {
		return err
	}
	if err := c.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			// Nothing bound yet: the ICMP error comes back at once; wait as for a lost answer.
			time.Sleep(wait)
		}
		return err
	}
	if n < 9 || buf[3] != 0x06 || buf[8] != 0x40 {
		return fmt.Errorf("not a presence pong: % x", buf[:n])
	}
	return nil
}

// udpSockets counts the IPv4 UDP sockets bound to port on host or the wildcard address, from
// /proc/net/udp (this network namespace's).
func udpSockets(host string, port int) (int, error) {
	data, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return 0, err
	}
	ip := net.ParseIP(host).To4()
	// /proc/net/udp spells an IPv4 address as the hex of its bytes in host (little-endian) order.
	want := fmt.Sprintf("%02X%02X%02X%02X", ip[3], ip[2], ip[1], ip[0])
	suffix := fmt.Sprintf(":%04X", port)
	n := 0
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasSuffix(f[1], suffix) {
			continue
		}
		if h := strings.TrimSuffix(f[1], suffix); h == want || h == "00000000" {
			n++
		}
	}
	return n, nil
}

// simCommands set up the simulator's one management controller, the BMC at 0x20 (ipmi_sim_cmd(5)).
const simCommands = `mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
mc_enable 0x20
`
