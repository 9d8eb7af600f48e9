package power

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"
)

// IPMI limits and defaults.
const (
	ipmiDefaultPort    = 623
	ipmiDefaultTimeout = 5 * time.Second
	// ipmiRetransmit is how long one datagram waits for its answer before it is sent again,
	// within IPMIConfig.Timeout: ipmitool's lanplus interval. UDP loses datagrams; a BMC that
	// missed one answers the copy.
	ipmiRetransmit  = time.Second
	ipmiMaxUser     = 16 // RMCP+ user name (IPMI 2.0 §13.20)
	ipmiMaxPassword = 20 // IPMI 2.0 password (Kuid, §13.31)
)

// IPMIConfig is one BMC's address and credentials.
type IPMIConfig struct {
	Host string
	// Port is the BMC's UDP port (0: 623).
	Port               int
	Username, Password string
	// Timeout bounds each IPMI request, its retransmissions included (default 5 s); the
	// context bounds the whole call.
	Timeout time.Duration
}

// IPMI is a Controller over IPMI 2.0 RMCP+ ("lanplus", what ipmitool -I lanplus speaks).
//
// Every call opens its own session and closes it before returning: power actions are seconds or
// minutes apart, so a kept session would mostly sit idle until the BMC times it out (and a BMC
// that rebooted has forgotten it), while BMCs have only a few session slots, which an idle
// session of each of many callers would hold. A session costs four round trips, milliseconds on
// the management network. It also makes an IPMI safe for concurrent use with no lock: calls
// share nothing but the configuration.
//
// Sessions are opened at the Administrator privilege level, as ipmitool does by default, with
// cipher suite 17 (RAKP-HMAC-SHA256, HMAC-SHA256-128, AES-CBC-128) and, when the BMC refuses it,
// 3 (RAKP-HMAC-SHA1, HMAC-SHA1-96, AES-CBC-128). The suites are proposed in turn rather than
// asked of the BMC with Get Channel Cipher Suites, which some BMCs (OpenIPMI's ipmi_sim) never
// answer: the client would wait for its timeout on every call.
type IPMI struct {
	cfg    IPMIConfig
	addr   string // host:port, for errors
	suites []types.CipherSuiteID
	// perTry and retries split Timeout into retransmissions (ipmiRetransmit apart).
	perTry  time.Duration
	retries int
}

// NewIPMI checks cfg and returns a controller for the BMC. It does not contact the BMC.
func NewIPMI(cfg IPMIConfig) (*IPMI, error) {
	if cfg.Port == 0 {
		cfg.Port = ipmiDefaultPort
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = ipmiDefaultTimeout
	}
	switch {
	case cfg.Host == "":
		return nil, errors.New("ipmi: no BMC host")
	case cfg.Port < 1 || cfg.Port > 65535:
		return nil, fmt.Errorf("ipmi %s: port %d out of range", cfg.Host, cfg.Port)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("ipmi %s: negative timeout %v", cfg.Host, cfg.Timeout)
	case len(cfg.Username) > ipmiMaxUser:
		return nil, fmt.Errorf("ipmi %s: user name longer than IPMI's %d bytes", cfg.Host, ipmiMaxUser)
	case len(cfg.Password) > ipmiMaxPassword:
		// go-ipmi would cut it to 20 bytes, and the BMC would refuse a password the operator
		// never typed: say so here instead. (Never the password itself in an error.)
		return nil, fmt.Errorf("ipmi %s: password longer than IPMI 2.0's %d bytes", cfg.Host, ipmiMaxPassword)
	}
	tries := int((cfg.Timeout + ipmiRetransmit - 1) / ipmiRetransmit)
	return &IPMI{
		cfg:     cfg,
		addr:    net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)),
		suites:  []types.CipherSuiteID{types.CipherSuiteID17, types.CipherSuiteID3},
		perTry:  cfg.Timeout / time.Duration(tries),
		retries: tries - 1,
	}, nil
}

// On implements Controller. The power state is read first, and a machine that is on gets no
// command: the contract is that nothing happens, and what a BMC makes of a power-up of a running
// machine is its own business.
func (d *IPMI) On(ctx context.Context) error {
	return d.session(ctx, "on", func(c *client.Client) error {
		on, err := ipmiPowerIsOn(ctx, c)
		if err != nil || on {
			return err
		}
		return ipmiControl(ctx, c, chassis.ChassisControlPowerUp)
	})
}

// Off implements Controller: a hard power-down (Chassis Control 0), not an ACPI shutdown. A
// machine that is off is left alone.
func (d *IPMI) Off(ctx context.Context) error {
	return d.session(ctx, "off", func(c *client.Client) error {
		on, err := ipmiPowerIsOn(ctx, c)
		if err != nil || !on {
			return err
		}
		return ipmiControl(ctx, c, chassis.ChassisControlPowerDown)
	})
}

// Cycle implements Controller. A power cycle of a machine that is off "should" do nothing (IPMI 2.0
// §28.3), and BMCs either ignore it or refuse it, so the power state is read first: a machine
// that is off is powered up, one that is on is cycled. If the BMC refuses the cycle all the same,
// the state is read again, and a machine found off (it went off in between) is powered up;
// otherwise the refusal is the error.
func (d *IPMI) Cycle(ctx context.Context) error {
	return d.session(ctx, "cycle", func(c *client.Client) error {
		on, err := ipmiPowerIsOn(ctx, c)
		if err != nil {
			return err
		}
		if !on {
			return ipmiControl(ctx, c, chassis.ChassisControlPowerUp)
		}
		err = ipmiControl(ctx, c, chassis.ChassisControlPowerCycle)
		if _, refused := types.IsResponseError(err); !refused {
			return err
		}
		if on, serr := ipmiPowerIsOn(ctx, c); serr != nil || on {
			return err
		}
		return ipmiControl(ctx, c, chassis.ChassisControlPowerUp)
	})
}

// Status implements Controller: Get Chassis Status's "power is on" bit.
func (d *IPMI) Status(ctx context.Context) (State, error) {
	var st State
	err := d.session(ctx, "status", func(c *client.Client) error {
		on, err := ipmiPowerIsOn(ctx, c)
		st = Off
		if on {
			st = On
		}
		return err
	})
	if err != nil {
		return "", err
	}
	return st, nil
}

// PXENext implements Controller: the boot flags (Set System Boot Options parameter 5) with the
// device "force PXE", valid, for the next boot only, and the EFI bit for UEFI. BMCs drop the
// request when no restart follows within 60 s (IPMI 2.0 §28.12): call On or Cycle right after.
//
// The write is bracketed by "set in progress" and "set complete" (parameter 0) when the BMC
// implements that lock, which is optional: a BMC that refuses it gets the flags alone, as
// ipmitool does.
func (d *IPMI) PXENext(ctx context.Context, mode BootMode) error {
	if mode != Legacy && mode != UEFI {
		return &Error{Class: Failed, Op: "pxe", Err: fmt.Errorf("ipmi %s: boot mode %q, want %s or %s", d.addr, mode, Legacy, UEFI)}
	}
	return d.session(ctx, "pxe", func(c *client.Client) error {
		locked := true
		if err := c.SetBootParamSetInProgress(ctx, types.SetInProgress_SetInProgress); err != nil {
			if _, refused := types.IsResponseError(err); !refused {
				return fmt.Errorf("set in progress: %w", err)
			}
			locked = false
		}
		err := c.SetSystemBootOptionsParamFor(ctx, ipmiBootFlags(mode))
		if err != nil {
			err = fmt.Errorf("boot flags: %w", err)
		}
		if locked {
			// Released even when the flags failed: a BMC keeps the lock until told, and would
			// refuse the next writer.
			if cerr := c.SetBootParamSetInProgress(ctx, types.SetInProgress_SetComplete); cerr != nil && err == nil {
				err = fmt.Errorf("set complete: %w", cerr)
			}
		}
		return err
	})
}

// ipmiBootFlags is boot flags parameter 5 for a one-time network boot in mode: valid bit on,
// persistent bit off, EFI bit for UEFI, device selector 0001b (force PXE).
func ipmiBootFlags(mode BootMode) *types.BootOptionParam_BootFlags {
	return &types.BootOptionParam_BootFlags{
		BootFlagsValid:     true,
		Persist:            false,
		BIOSBootType:       types.BIOSBootType(mode == UEFI),
		BootDeviceSelector: types.BootDeviceSelectorForcePXE,
	}
}

func ipmiPowerIsOn(ctx context.Context, c *client.Client) (bool, error) {
	st, err := c.GetChassisStatus(ctx)
	if err != nil {
		return false, fmt.Errorf("get chassis status: %w", err)
	}
	return st.PowerIsOn, nil
}

func ipmiControl(ctx context.Context, c *client.Client, ctl chassis.ChassisControl) error {
	if _, err := c.ChassisControl(ctx, ctl); err != nil {
		name := map[chassis.ChassisControl]string{
			chassis.ChassisControlPowerDown:  "power down",
			chassis.ChassisControlPowerUp:    "power up",
			chassis.ChassisControlPowerCycle: "power cycle",
		}[ctl]
		return fmt.Errorf("chassis control %s: %w", name, err)
	}
	return nil
}

// session opens a session, runs f in it, closes it, and returns f's error classified.
func (d *IPMI) session(ctx context.Context, op string, f func(*client.Client) error) error {
	w := &ipmiWire{ctx: ctx}
	defer w.close()
	c, err := d.open(ctx, w)
	if err != nil {
		return d.fail(ctx, op, w, err)
	}
	err = f(c)
	// Close Session's answer is not waited for beyond ctx and Timeout, and its failure is not
	// the call's: the action is done (reporting an error would have a caller cycle a machine
	// twice), and a session left open times out on the BMC.
	_ = c.Close(ctx)
	if err != nil {
		return d.fail(ctx, op, w, err)
	}
	return nil
}

// open establishes an RMCP+ session (IPMI 2.0 §13.15) step by step rather than with go-ipmi's
// Connect: Connect first asks for the cipher suites (which ipmi_sim does not answer: a wait of
// its whole timeout), and it reports a failed setup as text, which loses the wrapped errors that
// tell a refused password from a refused cipher suite. Get Channel Authentication Capabilities,
// a discovery step, is skipped: go-ipmi can send it only in IPMI 2.0 framing here, which ipmi_sim
// ignores.
func (d *IPMI) open(ctx context.Context, w *ipmiWire) (*client.Client, error) {
	c, err := client.NewClient(d.cfg.Host, d.cfg.Port, d.cfg.Username, d.cfg.Password)
	if err != nil {
		return nil, err
	}
	c.WithTimeout(d.perTry).WithRetry(d.retries).WithUDPProxy(w)
	c.WithMaxPrivilegeLevel(types.PrivilegeLevelAdministrator)

	if err := d.openSession(ctx, c, w); err != nil {
		return nil, err
	}
	if _, err := c.RAKPMessage1(ctx); err != nil {
		return nil, fmt.Errorf("rakp 1: %w", err)
	}
	if _, err := c.RAKPMessage3(ctx); err != nil {
		return nil, fmt.Errorf("rakp 3: %w", err)
	}
	if _, err := c.SetSessionPrivilegeLevel(ctx, types.PrivilegeLevelAdministrator); err != nil {
		_ = c.Close(ctx) // the session is active: free its slot
		if re, ok := types.IsResponseError(err); ok && (re.CompletionCode() == 0x80 || re.CompletionCode() == 0x81) {
			// 80h, 81h: the level is above the user's or the channel's limit (§22.18).
			err = &ipmiPrivilegeError{err}
		}
		return nil, fmt.Errorf("set session privilege level: %w", err)
	}
	return c, nil
}

// openSession sends Open Session with each cipher suite in turn, until one is accepted or the
// BMC's answer shows the next would not do better.
func (d *IPMI) openSession(ctx context.Context, c *client.Client, w *ipmiWire) (err error) {
	var refused []string // earlier suites' refusals, for the message
	for i, suite := range d.suites {
		c.WithCipherSuiteID(suite)
		w.forgetStatus() // a refusal of the suite before is not this one's answer
		if _, err = c.OpenSession(ctx); err == nil {
			break
		}
		f := w.facts()
		var rs *types.RmcpStatusError
		if f.hasStatus && f.status != types.RmcpStatusCodeNoErrors && !errors.As(err, &rs) {
			// A refusal go-ipmi could not parse (ipmi_sim's): the status read off the wire
			// says what it was, for the message and the class.
			err = fmt.Errorf("%w: %w", types.NewRmcpStatusError(f.status), err)
		}
		err = fmt.Errorf("open session, cipher suite %d: %w", suite, err)
		// Only a BMC that answered with a refusal of the algorithms is asked again with the
		// next suite: one that did not answer, or is out of sessions, would not do better.
		if i == len(d.suites)-1 || !f.hasStatus || !ipmiCipherRefused(f.status) {
			break
		}
		refused = append(refused, err.Error())
	}
	if err != nil {
		if len(refused) > 0 {
			// Only the last failure is wrapped: it decides the class.
			err = fmt.Errorf("%w (after %s)", err, strings.Join(refused, "; "))
		}
		return err
	}
	return nil
}

// fail wraps err as a classified *Error. The password is never in it: go-ipmi's messages do not
// carry it, and a message that does anyway is replaced by one with the password masked and
// nothing wrapped (what it wrapped would have it too).
func (d *IPMI) fail(ctx context.Context, op string, w *ipmiWire, err error) error {
	cerr := ctx.Err()
	if dl, ok := ctx.Deadline(); ok && cerr == nil && !time.Now().Before(dl) {
		// go-ipmi reads up to the context's deadline, then fails with its own timeout, which
		// can come before the context marks itself done.
		cerr = context.DeadlineExceeded
	}
	if cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	class := ipmiClassify(err, w.facts())
	err = fmt.Errorf("ipmi %s: %w", d.addr, err)
	if p := d.cfg.Password; p != "" && strings.Contains(err.Error(), p) {
		err = errors.New(strings.ReplaceAll(err.Error(), p, "***"))
	}
	return &Error{Class: class, Op: op, Err: err}
}

// ipmiPrivilegeError marks a session refused the requested privilege level.
type ipmiPrivilegeError struct{ err error }

func (e *ipmiPrivilegeError) Error() string { return "privilege level refused: " + e.err.Error() }
func (e *ipmiPrivilegeError) Unwrap() error { return e.err }

// ipmiFacts is what was seen on the wire during one call.
type ipmiFacts struct {
	sent     bool // a datagram went out
	answered bool // a datagram came back
	silent   bool // the last read waited until its deadline for nothing
	// status is the RMCP+ status code of the last session setup reply, if hasStatus.
	status    types.RmcpStatusCode
	hasStatus bool
}

// ipmiClassify returns err's class, from the errors go-ipmi wraps and what the wire saw. Refusals
// the BMC stated come first: they are the most specific.
func ipmiClassify(err error, f ipmiFacts) Class {
	var (
		rs *types.RmcpStatusError
		re *types.ResponseError
		pe *ipmiPrivilegeError
		de *net.DNSError
	)
	switch {
	case errors.Is(err, client.ErrRAKPAuthentication), errors.As(err, &pe):
		// The BMC's RAKP 2 does not match the password (or it refused our RAKP 3), or the user
		// may not have the privilege level.
		return AuthRefused
	case errors.As(err, &rs):
		return ipmiStatusClass(rs.StatusCode())
	case errors.As(err, &re):
		switch re.CompletionCode() {
		case types.CodeNodeBusy, types.CodeCannotProvideResponseSDRRInUpdate,
			types.CodeCannotProvideResponseFirmwareUpdate, types.CodeCannotProvideResponseBMCInitialize:
			return Busy
		case types.CodeInsufficientPrivilege:
			return AuthRefused
		case types.CodeProcessTimeout:
			return TimedOut // the BMC says it ran out of time itself
		}
		return Failed
	case errors.Is(err, context.Canceled):
		return Failed // the caller gave up: nothing is known of the BMC
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTDOWN), errors.As(err, &de):
		// An ICMP error (port or host unreachable) or a name that does not resolve.
		return Unreachable
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), f.silent:
		switch {
		case f.answered:
			return TimedOut
		case f.sent:
			return Unreachable // asked, and never a word back
		}
		return TimedOut // the time was up before anything was sent
	}
	return Failed
}

// ipmiStatusClass is the class of an RMCP+ session setup status code (IPMI 2.0 Table 13-15).
func ipmiStatusClass(st types.RmcpStatusCode) Class {
	switch st {
	case types.RmcpStatusCodeNoResToCreateSess, types.RmcpStatusCodeNoResToCreateSessAtRole:
		return Busy // out of sessions
	case types.RmcpStatusCodeUnauthorizedRoleOfPriLevel, types.RmcpStatusCodeUnauthorizedName,
		types.RmcpStatusCodeUnauthorizedGUID, types.RmcpStatusCodeInvalidIntegrityCheckValue:
		// Unknown user, privilege above the user's, or (in RAKP 4) our RAKP 3 did not match:
		// the password.
		return AuthRefused
	}
	return Failed
}

// ipmiCipherRefused reports whether an Open Session status refuses the proposed algorithms.
func ipmiCipherRefused(st types.RmcpStatusCode) bool {
	switch st {
	case types.RmcpStatusCodeInvalidAuthAlg, types.RmcpStatusCodeInvalidIntegrityAlg,
		types.RmcpStatusCodeNoMatchingAuthPayload, types.RmcpStatusCodeNoMatchingIntegrityPayload,
		types.RmcpStatusCodeInvalidConfidentAlg, types.RmcpStatusCodeNoCipherSuiteMatch:
		return true
	}
	return false
}

// ipmiWire is one call's UDP socket, dialled by go-ipmi through it (WithUDPProxy): it bounds the
// socket by the call's context (closing it when ctx ends, which wakes a read go-ipmi would
// otherwise leave waiting until its deadline) and records what came back, for classification.
// go-ipmi drops the status of an Open Session refusal it cannot parse (ipmi_sim's has 2 bytes of
// the 8 it expects), so ipmiWire reads setup statuses off the datagrams itself.
type ipmiWire struct {
	ctx context.Context

	mu    sync.Mutex
	conns []net.Conn
	stops []func() bool
	f     ipmiFacts
}

// Dial implements golang.org/x/net/proxy.Dialer for go-ipmi.
func (w *ipmiWire) Dial(network, addr string) (net.Conn, error) {
	var nd net.Dialer
	conn, err := nd.DialContext(w.ctx, network, addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(w.ctx, func() { conn.Close() })
	w.mu.Lock()
	w.conns = append(w.conns, conn)
	w.stops = append(w.stops, stop)
	w.mu.Unlock()
	return &ipmiConn{Conn: conn, w: w}, nil
}

// close closes the sockets (go-ipmi's Close may not have run: a failed setup has no session to
// close) and forgets the context.
func (w *ipmiWire) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, c := range w.conns {
		w.stops[i]()
		c.Close()
	}
	w.conns, w.stops = nil, nil
}

func (w *ipmiWire) facts() ipmiFacts {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f
}

func (w *ipmiWire) forgetStatus() {
	w.mu.Lock()
	w.f.status, w.f.hasStatus = 0, false
	w.mu.Unlock()
}

func (w *ipmiWire) wrote() {
	w.mu.Lock()
	w.f.sent = true
	w.mu.Unlock()
}

func (w *ipmiWire) read(p []byte, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		w.f.answered, w.f.silent = true, false
		if st, ok := ipmiSetupStatus(p); ok {
			w.f.status, w.f.hasStatus = st, true
		}
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.f.silent = true
	}
}

// ipmiConn is a socket that reports its traffic to its ipmiWire.
type ipmiConn struct {
	net.Conn
	w *ipmiWire
}

func (c *ipmiConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.w.read(p[:n], err)
	return n, err
}

func (c *ipmiConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil {
		c.w.wrote()
	}
	return n, err
}

// ipmiSetupStatus returns the RMCP+ status code of a session setup reply (Open Session Response,
// RAKP 2, RAKP 4: payload types 11h, 13h, 15h), which are sent in the clear. The layout: RMCP
// header (4 bytes, class 7: IPMI), auth type 6 (RMCP+), payload type, session ID (4), sequence
// (4), payload length (2), then the payload: message tag, status code.
func ipmiSetupStatus(b []byte) (types.RmcpStatusCode, bool) {
	if len(b) < 18 || b[0] != 0x06 || b[3]&0x1f != 0x07 || b[4] != 0x06 {
		return 0, false
	}
	switch b[5] & 0x3f {
	case 0x11, 0x13, 0x15:
		return types.RmcpStatusCode(b[17]), true
	}
	return 0, false
}
