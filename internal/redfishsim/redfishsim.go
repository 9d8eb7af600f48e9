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
// when given, is what the power actions switch: a QEMU guest, a command.
package redfishsim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
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
	// TLS serves HTTPS with a certificate made for 127.0.0.1; CAFile holds it for clients.
	TLS bool
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
	PowerOn(ctx context.Context) error
	PowerOff(ctx context.Context) error
	State(ctx context.Context) (on bool, err error)
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
	srv         *httptest.Server
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

// Start starts a BMC for a test and stops it when the test ends.
func Start(tb testing.TB, opts Options) *BMC {
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
	h := http.HandlerFunc(b.serve)
	if !opts.TLS {
		b.srv = httptest.NewServer(h)
		b.URL = b.srv.URL
		return b, nil
	}
	b.srv = httptest.NewUnstartedServer(h)
	b.srv.StartTLS()
	b.URL = b.srv.URL
	b.CAFile = filepath.Join(dir, "ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.srv.Certificate().Raw})
	if err := os.WriteFile(b.CAFile, cert, 0o644); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
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
	b.timers.Wait()
}

// Host is the BMC's host:port, as an inventory's bmc column gives it.
func (b *BMC) Host() string {
	return strings.TrimPrefix(strings.TrimPrefix(b.URL, "https://"), "http://")
}

// CertPool holds the certificate a TLS BMC presents.
func (b *BMC) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	if b.srv.TLS != nil {
		p.AddCert(b.srv.Certificate())
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
