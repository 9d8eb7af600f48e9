// Package redfishsim is a Redfish BMC for tests: an HTTP(S) server on loopback that serves the
// service root, one or many ComputerSystems, sessions (X-Auth-Token) and basic authentication,
// the ComputerSystem.Reset action, one-time boot overrides, the identify LED and a minimal
// manager, with bodies after the DMTF schemas, so that package power's driver, DMTF's
// redfishtool and OpenStack's sushy can all be pointed at it.
//
// Switches make it behave as the awkward BMCs met in the field (Options): one that refuses an
// override naming BootSourceOverrideMode, one whose Boot is read-only on the system and written
// through its @Redfish.Settings resource, one that answers 200 to an override and drops it, one
// whose sessions run out fast, and a reset applied some time after it was accepted. A Machine,
// when given, is what the power actions switch: a QEMU VM driven over QMP (QEMUMachine), a
// command (CommandMachine). `bootctl cluster bmc` serves one in front of a lab VM.
package redfishsim

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options configure a BMC. The zero value is a well-behaved BMC with one system, "1", off.
type Options struct {
	// User and Password are the one account (defaults "admin", "redfishsim-secret").
	User, Password string
	// Systems are the ComputerSystems' Ids (default ["1"]): one address may serve many
	// machines, as a chassis manager or sushy-tools' emulator does.
	Systems []string
	// On starts every system powered on.
	On bool
	// Listen is the TCP address served (default 127.0.0.1:0, a free loopback port).
	Listen string
	// TLS serves HTTPS with a self-signed certificate made for the listening address, 127.0.0.1,
	// ::1, localhost and CertHosts; CAFile holds it for clients.
	TLS bool
	// CertHosts are more names or addresses the certificate is for (a lab BMC reached by name).
	CertHosts []string
	// Logf, when set, is told what a Machine failed to do (a VM that would not start): the
	// reset was accepted already, as a real BMC's is, and only the power state shows it.
	Logf func(format string, args ...any)
	// Lag is how long after a reset is accepted it takes effect (0: at once): BMCs answer 204
	// and switch the power seconds later.
	Lag time.Duration
	// ResetTypes are the reset action's allowable values (default On, ForceOff,
	// GracefulShutdown, ForceRestart, GracefulRestart, PowerCycle, Nmi).
	ResetTypes []string
	// RejectMode refuses (400, PropertyNotWritable) a boot override that names
	// BootSourceOverrideMode, as some BMCs of legacy-only machines do.
	RejectMode bool
	// BootReadOnly makes Boot read-only on the system (400 PropertyNotWritable): it is written
	// through the @Redfish.Settings resource, /redfish/v1/Systems/ID/Settings, and applied at
	// the next reset, as Dell's iDRAC 10 does.
	BootReadOnly bool
	// DropOverrides is how many boot override PATCHes are answered 200 and not kept (-1: all).
	DropOverrides int
	// SessionLifetime ends a session this long after its creation (0: never).
	SessionLifetime time.Duration
	// SessionUses ends a session after this many requests (0: never): a lifetime counted in
	// requests, so that a test can end one in the middle of a call without timing it.
	SessionUses int
	// LegacyLED serves the identify LED as IndicatorLED only (deprecated since ComputerSystem
	// v1.13), without LocationIndicatorActive.
	LegacyLED bool
	// Machine, when set, is called with a system's Id and returns what its power actions
	// switch; its State is the system's PowerState. Without it the power state is a field.
	Machine func(id string) Machine
}

// Machine is what a system's power actions switch: a VM, a process.
type Machine interface {
	// PowerOn starts the machine; from is the one-time boot override's target the start takes
	// ("Pxe", "UefiHttp", ...), or "" for the machine's own boot order.
	PowerOn(ctx context.Context, from string) error
	// PowerOff stops it at once, as a held power button does.
	PowerOff(ctx context.Context) error
	State(ctx context.Context) (on bool, err error)
}

// Shutdowner is a Machine that can be asked to shut itself down (GracefulShutdown, an ACPI
// power button): the guest decides, and may not. A Machine without it is switched off.
type Shutdowner interface {
	Shutdown(ctx context.Context) error
}

// Boot is a system's boot override, as the sim holds it.
type Boot struct {
	Target, Enabled, Mode, URI string
}

// system is one ComputerSystem's state.
type system struct {
	id      string
	on      bool
	boot    Boot
	pending *Boot // written to the Settings resource, applied at the next reset
	led     bool
	machine Machine
	resets  []string // reset types applied, in order
	booted  []string // the override target of each power-on ("" : the normal boot order)
}

// session is a login.
type session struct {
	id, token string
	expires   time.Time // zero: never
	uses      int       // requests left (SessionUses), or -1: no limit
}

// BMC is a running simulator. Its methods are safe for concurrent use.
type BMC struct {
	// URL is the service's base, http(s)://127.0.0.1:PORT (no path).
	URL string
	// CAFile is the PEM file of the certificate the service presents (TLS only), for clients'
	// CA options.
	CAFile string
	// User and Password are the account's credentials.
	User, Password string

	opts        Options
	srv         *http.Server
	ln          net.Listener
	served      chan struct{} // closed when Serve has returned
	cert        *x509.Certificate
	systemsBody json.RawMessage // the Systems collection (fixed)
	closed      chan struct{}

	mu        sync.Mutex
	systems   map[string]*system
	order     []string
	sessions  map[string]*session // by token
	nextSess  int
	drops     int // overrides still to drop
	requests  int
	bootPatch int // boot override PATCHes received
	logins    int // sessions opened
	timers    sync.WaitGroup
}

// TB is the part of testing.TB that Start uses (this package is linked into bootctl, which has
// no business importing package testing).
type TB interface {
	Helper()
	TempDir() string
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Start starts a BMC for a test and stops it when the test ends.
func Start(tb TB, opts Options) *BMC {
	tb.Helper()
	dir := ""
	if opts.TLS {
		dir = tb.TempDir()
	}
	b, err := New(opts, dir)
	if err != nil {
		tb.Fatalf("redfishsim: %v", err)
	}
	tb.Cleanup(b.Close)
	return b
}

// New starts a BMC on a loopback port; a TLS BMC writes its certificate as ca.pem into dir.
// Close stops it.
func New(opts Options, dir string) (*BMC, error) {
	if opts.User == "" {
		opts.User = "admin"
	}
	if opts.Password == "" {
		opts.Password = "redfishsim-secret"
	}
	if len(opts.Systems) == 0 {
		opts.Systems = []string{"1"}
	}
	if len(opts.ResetTypes) == 0 {
		opts.ResetTypes = []string{"On", "ForceOff", "GracefulShutdown", "ForceRestart", "GracefulRestart", "PowerCycle", "Nmi"}
	}
	b := &BMC{
		User: opts.User, Password: opts.Password, opts: opts, closed: make(chan struct{}),
		systems: map[string]*system{}, sessions: map[string]*session{}, drops: opts.DropOverrides,
	}
	for _, id := range opts.Systems {
		if id == "" || strings.ContainsAny(id, "/?#% ") || b.systems[id] != nil {
			return nil, fmt.Errorf("system id %q: empty, repeated or not a path segment", id)
		}
		s := &system{id: id, on: opts.On, boot: Boot{Target: "None", Enabled: "Disabled", Mode: "UEFI"}}
		if opts.Machine != nil {
			s.machine = opts.Machine(id)
		}
		b.systems[id] = s
		b.order = append(b.order, id)
	}
	sort.Strings(b.order)
	uris := make([]string, len(b.order))
	for i, id := range b.order {
		uris[i] = systemsPath + "/" + id
	}
	// Made once: a BMC serving a thousand systems would otherwise build it for every request.
	b.systemsBody = json.RawMessage(mustJSON(collection(systemsPath, "#ComputerSystemCollection.ComputerSystemCollection", "Computer System Collection", uris)))
	if err := b.listen(dir); err != nil {
		return nil, err
	}
	return b, nil
}

// listen binds the address, makes the certificate of a TLS BMC (written as dir/ca.pem) and
// starts serving.
func (b *BMC) listen(dir string) error {
	addr := cmp.Or(b.opts.Listen, "127.0.0.1:0")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("redfish BMC: %w", err)
	}
	scheme := "http"
	if b.opts.TLS {
		host, _, _ := net.SplitHostPort(addr)
		certPEM, cert, err := selfSigned(append([]string{host}, b.opts.CertHosts...))
		if err != nil {
			ln.Close()
			return err
		}
		b.cert = cert.Leaf
		b.CAFile = filepath.Join(dir, "ca.pem")
		if err := os.WriteFile(b.CAFile, certPEM, 0o644); err != nil {
			ln.Close()
			return fmt.Errorf("redfish BMC: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	b.ln = ln
	b.URL = scheme + "://" + ln.Addr().String()
	// A hostile host on the management network gets bounded headers and time, as from any server.
	b.srv = &http.Server{Handler: http.HandlerFunc(b.serve), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: log.New(io.Discard, "", 0)}
	b.served = make(chan struct{})
	go func() {
		defer close(b.served)
		if err := b.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && b.opts.Logf != nil {
			b.opts.Logf("redfish BMC: %v", err)
		}
	}()
	return nil
}

// Close stops the server and waits for resets still in their lag.
func (b *BMC) Close() {
	select {
	case <-b.closed:
		return
	default:
	}
	close(b.closed)
	b.srv.Close()
	<-b.served
	b.timers.Wait()
}

// Host is the BMC's host:port, as an inventory's bmc column gives it.
func (b *BMC) Host() string {
	return strings.TrimPrefix(strings.TrimPrefix(b.URL, "https://"), "http://")
}

// CertPool holds the certificate a TLS BMC presents.
func (b *BMC) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	if b.cert != nil {
		p.AddCert(b.cert)
	}
	return p
}

// TLSConfig is a client configuration that trusts the BMC's certificate.
func (b *BMC) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: b.CertPool(), MinVersion: tls.VersionTLS12}
}

// Power is a system's power state, "On" or "Off".
func (b *BMC) Power(id string) string {
	b.mu.Lock()
	s := b.systems[id]
	b.mu.Unlock()
	if s == nil {
		return ""
	}
	return powerState(b.isOn(s))
}

// SetPower sets a system's power state behind the BMC's back (no Machine is called).
func (b *BMC) SetPower(id string, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.systems[id]; s != nil {
		s.on = on
	}
}

// BootOverride is a system's boot override as the system resource shows it, and the one waiting
// in its Settings resource (nil: none).
func (b *BMC) BootOverride(id string) (Boot, *Boot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.systems[id]
	if s == nil {
		return Boot{}, nil
	}
	var p *Boot
	if s.pending != nil {
		c := *s.pending
		p = &c
	}
	return s.boot, p
}

// LED reports whether a system's identify LED is lit.
func (b *BMC) LED(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.systems[id]
	return s != nil && s.led
}

// Resets are the reset types applied to a system, in order.
func (b *BMC) Resets(id string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.systems[id]; s != nil {
		return append([]string(nil), s.resets...)
	}
	return nil
}

// Boots are what each power-on of a system booted from: the one-time override's target, or ""
// for the normal order.
func (b *BMC) Boots(id string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.systems[id]; s != nil {
		return append([]string(nil), s.booted...)
	}
	return nil
}

// Sessions is the number of sessions open (not deleted, not expired).
func (b *BMC) Sessions() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.sessions {
		if s.expires.IsZero() || time.Now().Before(s.expires) {
			n++
		}
	}
	return n
}

// BootPatches is the number of boot override PATCHes received (system and Settings).
func (b *BMC) BootPatches() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bootPatch
}

// Logins is the number of sessions opened.
func (b *BMC) Logins() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.logins
}

// Requests is the number of requests served.
func (b *BMC) Requests() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests
}

// isOn is a system's power: its machine's state when it has one.
func (b *BMC) isOn(s *system) bool {
	if s.machine != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		on, err := s.machine.State(ctx)
		return err == nil && on
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return s.on
}

// logf reports what a machine failed to do, when Options.Logf is set.
func (b *BMC) logf(format string, args ...any) {
	if b.opts.Logf != nil {
		b.opts.Logf(format, args...)
	}
}

func powerState(on bool) string {
	if on {
		return "On"
	}
	return "Off"
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings: cannot fail
	}
	return data
}
