package power

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bootfabric/bootfabric/internal/ipmisim"
	"github.com/bootfabric/bootfabric/internal/testfix"
)

// ipmiTestPassword is the simulated BMCs' password: distinctive, so that a test can look for it
// in every error.
const ipmiTestPassword = "Zq7-bmc-Pw-4412x"

// hangLimit is a generous bound on calls that must not wait for a long timeout (longTimeout): a
// hang, not a duration, is what it catches. This machine may be loaded: a call that takes a few
// seconds is not a failure.
const (
	hangLimit   = 30 * time.Second
	longTimeout = 2 * time.Minute
)

// startBMC starts a simulated BMC with the test password and the machine in state power.
func startBMC(t *testing.T, power string) *ipmisim.BMC {
	t.Helper()
	return ipmisim.Start(t, ipmisim.Options{Password: ipmiTestPassword, Power: power})
}

// newTestIPMI returns a controller for bmc with cfg's fields, where set, over bmc's.
func newTestIPMI(t *testing.T, bmc *ipmisim.BMC, cfg IPMIConfig) *IPMI {
	t.Helper()
	if cfg.Host == "" {
		cfg.Host, cfg.Port = bmc.Host, bmc.Port
	}
	if cfg.Username == "" {
		cfg.Username = bmc.User
	}
	if cfg.Password == "" {
		cfg.Password = bmc.Password
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Second // a loaded machine can stall the simulator for seconds
	}
	d, err := NewIPMI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func testCtx(t *testing.T, limit time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	return ctx
}

// noPassword fails t if err's message has any of the passwords.
func noPassword(t *testing.T, err error, passwords ...string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, p := range append(passwords, ipmiTestPassword) {
		if p != "" && strings.Contains(err.Error(), p) {
			t.Errorf("error has the password %q: %v", p, err)
		}
	}
}

// sets returns the chassis script's "set" calls, as "set power 1".
func sets(bmc *ipmisim.BMC) []string {
	var out []string
	for _, c := range bmc.Calls() {
		if c.Args[0] == "set" {
			out = append(out, c.String())
		}
	}
	return out
}

// TestIPMIPower checks on, off, cycle and status against the machine behind a simulated BMC:
// its state file, and the power changes the BMC made.
func TestIPMIPower(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start string
		act   func(*IPMI, context.Context) error
		want  string
		sets  []string // what the BMC did to the machine
	}{
		{"on from off", "off", (*IPMI).On, "on", []string{"set power 1"}},
		{"on when on", "on", (*IPMI).On, "on", nil},
		{"off from on", "on", (*IPMI).Off, "off", []string{"set power 0"}},
		{"off when off", "off", (*IPMI).Off, "off", nil},
		// ipmi_sim cycles with power 0 at once and power 1 from a one-second timer.
		{"cycle from on", "on", (*IPMI).Cycle, "on", []string{"set power 0", "set power 1"}},
		// Off: powered up, not cycled.
		{"cycle from off", "off", (*IPMI).Cycle, "on", []string{"set power 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bmc := startBMC(t, tc.start)
			d := newTestIPMI(t, bmc, IPMIConfig{})
			ctx := testCtx(t, 2*longTimeout)

			st, err := d.Status(ctx)
			if err != nil || string(st) != tc.start {
				t.Fatalf("status before: %q, %v; want %s", st, err, tc.start)
			}
			if err := tc.act(d, ctx); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			testfix.WaitFor(t, fmt.Sprintf("BMC sets %q", tc.sets), hangLimit, func() bool {
				return slices.Equal(sets(bmc), tc.sets)
			})
			if got := bmc.Power(); got != tc.want {
				t.Errorf("machine is %s, want %s", got, tc.want)
			}
			st, err = d.Status(ctx)
			if err != nil || string(st) != tc.want {
				t.Errorf("status after: %q, %v; want %s", st, err, tc.want)
			}
		})
	}
}

// TestIPMIPXENext checks that a one-time network boot reaches the machine as boot device pxe in
// both modes, and changes nothing else. ipmi_sim passes only the device selector to the machine:
// the EFI bit is checked in TestIPMIBootFlags, on the bytes sent.
func TestIPMIPXENext(t *testing.T) {
	t.Parallel()
	for _, mode := range []BootMode{Legacy, UEFI} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			bmc := startBMC(t, "off")
			d := newTestIPMI(t, bmc, IPMIConfig{})
			if err := d.PXENext(testCtx(t, 2*longTimeout), mode); err != nil {
				t.Fatal(err)
			}
			if got := bmc.Boot(); got != "pxe" {
				t.Errorf("boot device %q, want pxe", got)
			}
			if got, want := sets(bmc), []string{"set boot pxe"}; !slices.Equal(got, want) {
				t.Errorf("BMC sets %q, want %q", got, want)
			}
			if got := bmc.Power(); got != "off" {
				t.Errorf("machine is %s after PXENext, want off", got)
			}
		})
	}

	t.Run("bad mode", func(t *testing.T) {
		d, err := NewIPMI(IPMIConfig{Host: "127.0.0.1", Port: 9, Username: "u", Password: ipmiTestPassword})
		if err != nil {
			t.Fatal(err)
		}
		err = d.PXENext(context.Background(), "bios")
		if Classify(err) != Failed {
			t.Errorf("mode bios: %v (class %q), want failed", err, Classify(err))
		}
	})
}

// TestIPMIBootFlags checks the boot flags parameter sent for each mode (IPMI 2.0 Table 28-14):
// byte 1 is valid (bit 7), not persistent (bit 6), EFI (bit 5); byte 2 is the device selector,
// force PXE (0001b) in bits 5:2.
func TestIPMIBootFlags(t *testing.T) {
	for mode, want := range map[BootMode][]byte{
		Legacy: {0x80, 0x04, 0, 0, 0},
		UEFI:   {0xa0, 0x04, 0, 0, 0},
	} {
		if got := ipmiBootFlags(mode).Pack(); !bytes.Equal(got, want) {
			t.Errorf("%s: boot flags % x, want % x", mode, got, want)
		}
	}
}

// TestIPMIAuthRefused checks that a wrong password or user is told apart, at once: the BMC's
// answer says so, no timeout is waited for.
func TestIPMIAuthRefused(t *testing.T) {
	t.Parallel()
	bmc := startBMC(t, "off")
	for _, tc := range []struct{ name, user, password string }{
		{"wrong password", bmc.User, "not-the-password"},
		{"unknown user", "nobody", ipmiTestPassword},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A timeout far above hangLimit: an answer after it would be the timeout's.
			d := newTestIPMI(t, bmc, IPMIConfig{Username: tc.user, Password: tc.password, Timeout: longTimeout})
			start := time.Now()
			err := d.On(testCtx(t, 2*longTimeout))
			if took := time.Since(start); took > hangLimit {
				t.Errorf("refused after %v", took)
			}
			t.Logf("%v", err)
			if Classify(err) != AuthRefused {
				t.Fatalf("err %v (class %q), want auth-refused", err, Classify(err))
			}
			noPassword(t, err, tc.password)
		})
	}
	if got := sets(bmc); len(got) != 0 {
		t.Errorf("refused sessions changed the machine: %q", got)
	}
}

// TestIPMIUnreachable checks the failures of a BMC that does not answer. On loopback, a port with
// nothing bound draws an ICMP port unreachable, which the socket reports at once as connection
// refused: unreachable, without waiting. A port that swallows datagrams (a BMC that is down
// behind a router, a firewall) is unreachable once the timeout has passed with no answer. A BMC
// that answered and then went silent has timed out.
func TestIPMIUnreachable(t *testing.T) {
	t.Parallel()
	bmc := startBMC(t, "off")
	d := newTestIPMI(t, bmc, IPMIConfig{})
	if _, err := d.Status(testCtx(t, 2*longTimeout)); err != nil {
		t.Fatalf("status before: %v", err)
	}

	for _, tc := range []struct {
		name    string
		pass    int           // datagrams the relay forwards to the BMC (-1: no relay, BMC stopped)
		timeout time.Duration // IPMIConfig.Timeout
		ctx     time.Duration // the call's context
		want    Class
	}{
		{"port closed", -1, longTimeout, 2 * longTimeout, Unreachable},
		{"no answer", 0, 500 * time.Millisecond, 2 * longTimeout, Unreachable},
		{"no answer, context deadline", 0, longTimeout, time.Second, Unreachable},
		// The relay passes the session setup (Open Session with cipher suites 17, refused,
		// and 3, RAKP 1 and 3, Set Session Privilege Level) and drops the rest: Get Chassis
		// Status goes unanswered.
		{"silent after answering", 5, 2 * time.Second, 2 * longTimeout, TimedOut},
		{"silent after answering, context deadline", 5, longTimeout, 3 * time.Second, TimedOut},
	} {
		if tc.pass < 0 {
			// Here, not in the subtest: Restart may fail the test it was started by.
			bmc.Stop()
		}
		t.Run(tc.name, func(t *testing.T) {
			cfg := IPMIConfig{Timeout: tc.timeout}
			if tc.pass >= 0 {
				cfg.Host, cfg.Port = "127.0.0.1", udpRelay(t, bmc.Addr(), tc.pass)
			}
			d := newTestIPMI(t, bmc, cfg)
			start := time.Now()
			err := d.Cycle(testCtx(t, tc.ctx))
			if took := time.Since(start); took > hangLimit {
				t.Errorf("failed after %v", took)
			}
			t.Logf("%v", err)
			if Classify(err) != tc.want {
				t.Fatalf("err %v (class %q), want %s", err, Classify(err), tc.want)
			}
			if tc.ctx < tc.timeout && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err %v does not wrap the context's deadline", err)
			}
			noPassword(t, err)
		})
		if tc.pass < 0 {
			bmc.Restart()
		}
	}

	// Back up, the BMC answers again: nothing of the failures stuck.
	if err := d.On(testCtx(t, 2*longTimeout)); err != nil {
		t.Fatalf("on after restart: %v", err)
	}
	if got := bmc.Power(); got != "on" {
		t.Errorf("machine is %s, want on", got)
	}
}

// TestIPMIBusy fills the BMC's session table (ipmi_sim has about 60 slots) and checks that a call
// finds it busy, then that the BMC takes calls again once the sessions are gone.
func TestIPMIBusy(t *testing.T) {
	t.Parallel()
	bmc := startBMC(t, "off")
	ctx := testCtx(t, 2*longTimeout)
	held, lost := 0, 0
	for held < 200 && lost < 5 {
		// Open Session alone takes a slot until the BMC times it out.
		c, err := client.NewClient(bmc.Host, bmc.Port, bmc.User, bmc.Password)
		if err != nil {
			t.Fatal(err)
		}
		c.WithTimeout(5 * time.Second).WithRetry(2).WithCipherSuiteID(types.CipherSuiteID3)
		_, err = c.OpenSession(ctx)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			lost++ // no answer (a loaded machine): not the refusal awaited
			continue
		}
		if err != nil {
			break // refused: the table is full
		}
		held++
	}
	if held == 0 || held == 200 {
		t.Fatalf("held %d sessions before the BMC refused one", held)
	}
	d := newTestIPMI(t, bmc, IPMIConfig{})
	_, err := d.Status(ctx)
	t.Logf("%v", err)
	if Classify(err) != Busy {
		t.Fatalf("with %d sessions held: err %v (class %q), want busy", held, err, Classify(err))
	}
	noPassword(t, err)

	// A restarted BMC has no sessions.
	bmc.Stop()
	bmc.Restart()
	if st, err := d.Status(ctx); err != nil || st != Off {
		t.Fatalf("status after restart: %q, %v", st, err)
	}
}

// TestIPMIConcurrent runs calls on three BMCs at once, several on each: every call has its own
// session, and the BMCs their own machines.
func TestIPMIConcurrent(t *testing.T) {
	t.Parallel()
	var bmcs []*ipmisim.BMC
	for range 3 {
		bmcs = append(bmcs, startBMC(t, "off"))
	}
	ctx := testCtx(t, 2*longTimeout)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i, bmc := range bmcs {
		d := newTestIPMI(t, bmc, IPMIConfig{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i != 1 { // BMC 1's machine stays off
				errs <- d.On(ctx)
			}
		}()
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := d.Status(ctx)
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for i, want := range []string{"on", "off", "on"} {
		if got := bmcs[i].Power(); got != want {
			t.Errorf("BMC %d: machine is %s, want %s", i, got, want)
		}
	}
}

func TestNewIPMI(t *testing.T) {
	d, err := NewIPMI(IPMIConfig{Host: "bmc1", Username: "admin", Password: ipmiTestPassword})
	if err != nil {
		t.Fatal(err)
	}
	if d.addr != "bmc1:623" || d.cfg.Timeout != 5*time.Second {
		t.Errorf("defaults: %s, %v; want bmc1:623, 5s", d.addr, d.cfg.Timeout)
	}
	// 5 s: five datagrams a second apart, as ipmitool's lanplus.
	if d.perTry != time.Second || d.retries != 4 {
		t.Errorf("per try %v, retries %d; want 1s, 4", d.perTry, d.retries)
	}
	if d, _ := NewIPMI(IPMIConfig{Host: "h", Timeout: 300 * time.Millisecond}); d.perTry != 300*time.Millisecond || d.retries != 0 {
		t.Errorf("300ms: per try %v, retries %d; want 300ms, 0", d.perTry, d.retries)
	}

	for _, cfg := range []IPMIConfig{
		{},
		{Host: "h", Port: 70000},
		{Host: "h", Timeout: -time.Second},
		{Host: "h", Username: strings.Repeat("u", 17)},
		{Host: "h", Username: "admin", Password: ipmiTestPassword + "-and-more-than-20"},
	} {
		_, err := NewIPMI(cfg)
		if err == nil {
			t.Errorf("%+v: no error", cfg)
		}
		noPassword(t, err, cfg.Password)
	}
}

// TestIPMIClassify checks the classes of go-ipmi's errors and of what the wire saw, without a BMC.
func TestIPMIClassify(t *testing.T) {
	refused := &net.OpError{Op: "read", Net: "udp", Err: os.NewSyscallError("read", syscall.ECONNREFUSED)}
	timeout := &net.OpError{Op: "read", Net: "udp", Err: os.ErrDeadlineExceeded}
	sent := ipmiFacts{sent: true}
	answered := ipmiFacts{sent: true, answered: true}
	for _, tc := range []struct {
		name string
		err  error
		f    ipmiFacts
		want Class
	}{
		{"rakp 2 mismatch", fmt.Errorf("rakp 1: %w", fmt.Errorf("validate: %w", client.ErrRAKPAuthentication)), answered, AuthRefused},
		{"unauthorized name", types.NewRmcpStatusError(types.RmcpStatusCodeUnauthorizedName), answered, AuthRefused},
		{"rakp 4 integrity", types.NewRmcpStatusError(types.RmcpStatusCodeInvalidIntegrityCheckValue), answered, AuthRefused},
		{"privilege level", fmt.Errorf("x: %w", &ipmiPrivilegeError{types.NewResponseError(0x81, "")}), answered, AuthRefused},
		{"insufficient privilege", types.NewResponseError(types.CodeInsufficientPrivilege, ""), answered, AuthRefused},
		{"no session slot", types.NewRmcpStatusError(types.RmcpStatusCodeNoResToCreateSess), answered, Busy},
		{"node busy", fmt.Errorf("chassis control: %w", types.NewResponseError(types.CodeNodeBusy, "")), answered, Busy},
		{"bmc initializing", types.NewResponseError(types.CodeCannotProvideResponseBMCInitialize, ""), answered, Busy},
		{"bmc timeout", types.NewResponseError(types.CodeProcessTimeout, ""), answered, TimedOut},
		{"invalid data field", types.NewResponseError(types.CodeRequestDataFieldInvalid, ""), answered, Failed},
		{"cipher suite refused", types.NewRmcpStatusError(types.RmcpStatusCodeNoCipherSuiteMatch), answered, Failed},
		{"connection refused", fmt.Errorf("exchange: %w", refused), sent, Unreachable},
		{"no such host", &net.DNSError{Err: "no such host", Name: "bmc9", IsNotFound: true}, ipmiFacts{}, Unreachable},
		{"read timeout, no answer", fmt.Errorf("x: %w", timeout), ipmiFacts{sent: true, silent: true}, Unreachable},
		{"read timeout after answer", fmt.Errorf("x: %w", timeout), ipmiFacts{sent: true, answered: true, silent: true}, TimedOut},
		{"no datagram matched after answer", errors.New("no datagram matched"), ipmiFacts{sent: true, answered: true, silent: true}, TimedOut},
		{"deadline, no answer", context.DeadlineExceeded, sent, Unreachable},
		{"deadline after answer", context.DeadlineExceeded, answered, TimedOut},
		{"deadline before sending", context.DeadlineExceeded, ipmiFacts{}, TimedOut},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), answered, Failed},
		{"anything else", errors.New("unpack response failed"), answered, Failed},
	} {
		if got := ipmiClassify(tc.err, tc.f); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestIPMIFailMasksPassword checks the last line of defence: a message with the password in it
// (go-ipmi's never have it) is masked.
func TestIPMIFailMasksPassword(t *testing.T) {
	d, err := NewIPMI(IPMIConfig{Host: "bmc1", Username: "admin", Password: ipmiTestPassword})
	if err != nil {
		t.Fatal(err)
	}
	w := &ipmiWire{ctx: context.Background()}
	err = d.fail(context.Background(), "on", w, fmt.Errorf("bad key %q", ipmiTestPassword))
	noPassword(t, err)
	if !strings.Contains(err.Error(), "***") || Classify(err) != Failed {
		t.Errorf("masked error %v (class %q)", err, Classify(err))
	}
}

// TestIPMISetupStatus checks the status read off session setup replies: ipmi_sim's two-byte
// Open Session refusal, which go-ipmi cannot parse, and a RAKP 2 refusal.
func TestIPMISetupStatus(t *testing.T) {
	hdr := func(payloadType byte, payload ...byte) []byte {
		b := []byte{0x06, 0x00, 0xff, 0x07, 0x06, payloadType, 0, 0, 0, 0, 0, 0, 0, 0, byte(len(payload)), 0}
		return append(b, payload...)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want types.RmcpStatusCode
		ok   bool
	}{
		{"open session refused", hdr(0x11, 0x00, 0x04), 0x04, true},
		{"rakp 2 unauthorized name", hdr(0x13, 0x00, 0x0d, 0, 0, 1, 2, 3, 4), 0x0d, true},
		{"rakp 4 ok", hdr(0x15, 0x00, 0x00, 0, 0, 1, 2, 3, 4), 0x00, true},
		{"ipmi payload", hdr(0x00, 0x00, 0x04), 0, false},
		{"encrypted ipmi payload", hdr(0xc0, 0x00, 0x04), 0, false},
		{"asf pong", []byte{0x06, 0x00, 0xff, 0x06, 0, 0, 0x11, 0xbe, 0x40, 0, 0, 0x10, 1, 2, 3, 4, 5, 6}, 0, false},
		{"short", hdr(0x11, 0x00), 0, false},
	} {
		st, ok := ipmiSetupStatus(tc.b)
		if st != tc.want || ok != tc.ok {
			t.Errorf("%s: %#x, %v; want %#x, %v", tc.name, st, ok, tc.want, tc.ok)
		}
	}
}

// udpRelay relays datagrams between its clients and target on a port of 127.0.0.1 it returns:
// the first pass datagrams from clients are forwarded (and the answers to them returned), later
// ones dropped, as a BMC that answers and then falls silent. With pass 0 it is a port that
// swallows everything, without the ICMP error of a closed one.
func udpRelay(t *testing.T, target string, pass int) int {
	t.Helper()
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	taddr, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.DialUDP("udp", nil, taddr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		front.Close()
		back.Close()
		wg.Wait()
	})
	var mu sync.Mutex
	var client *net.UDPAddr
	wg.Add(2)
	go func() { // clients -> target, the first pass datagrams
		defer wg.Done()
		buf := make([]byte, 4096)
		for n := 0; ; n++ {
			k, from, err := front.ReadFromUDP(buf)
			if err != nil {
				return
			}
			mu.Lock()
			client = from
			mu.Unlock()
			if n < pass {
				back.Write(buf[:k])
			}
		}
	}()
	go func() { // target -> the client
		defer wg.Done()
		buf := make([]byte, 4096)
		for {
			k, err := back.Read(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue // an ICMP error from the target: not the client's business
			}
			mu.Lock()
			to := client
			mu.Unlock()
			front.WriteToUDP(buf[:k], to)
		}
	}()
	return front.LocalAddr().(*net.UDPAddr).Port
}
