package power

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"
)

// rfCall is one call's connection to the BMC: gofish's client over a transport that adds the
// session's token to each request and notes what the network did, for classification.
type rfCall struct {
	d   *Redfish
	ctx context.Context
	api *gofish.APIClient

	mu        sync.Mutex
	token     string // X-Auth-Token ("" before login, or with basic authentication)
	session   string // the session's URI, to delete it
	relogged  bool
	connected bool // a TCP connection to the BMC was made
	answered  bool // an HTTP response began
}

// RoundTrip implements http.RoundTripper.
func (c *rfCall) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	c.mu.Lock()
	if c.token != "" {
		req.Header.Set("X-Auth-Token", c.token)
	}
	c.mu.Unlock()
	trace := &httptrace.ClientTrace{
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				c.note(&c.connected)
			}
		},
		GotConn:              func(httptrace.GotConnInfo) { c.note(&c.connected) },
		GotFirstResponseByte: func() { c.note(&c.answered) },
	}
	return c.d.transport.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
}

func (c *rfCall) note(b *bool) {
	c.mu.Lock()
	*b = true
	c.mu.Unlock()
}

// call connects, logs in, runs f, logs out, and returns f's error classified.
func (d *Redfish) call(ctx context.Context, op string, f func(*rfCall) error) error {
	c := &rfCall{d: d, ctx: ctx}
	defer d.transport.CloseIdleConnections()
	err := c.connect()
	if err == nil {
		err = f(c)
		c.logout()
	}
	if err != nil {
		return d.fail(ctx, op, c, err)
	}
	return nil
}

// connect reads the service root and opens a session (or sets basic authentication).
func (c *rfCall) connect() error {
	// One connection for the call's requests (one TLS handshake, not five); closed when the
	// call ends (call), as a BMC's few connection slots are not ours to hold between actions.
	cfg := gofish.ClientConfig{
		Endpoint: c.d.endpoint, HTTPClient: &http.Client{Transport: c}, NoModifyTransport: true, ReuseConnections: true,
	}
	if c.d.cfg.BasicAuth {
		cfg.Username, cfg.Password, cfg.BasicAuth = c.d.cfg.Username, c.d.cfg.Password, true
	}
	api, err := gofish.ConnectContext(c.ctx, cfg)
	if err != nil {
		return fmt.Errorf("service root: %w", err)
	}
	c.api = api
	if c.d.cfg.BasicAuth {
		return nil
	}
	return c.login()
}

// login opens a session.
func (c *rfCall) login() error {
	auth, err := c.api.Service.CreateSession(c.d.cfg.Username, c.d.cfg.Password)
	if err != nil {
		return fmt.Errorf("login: %w", err)
	}
	if auth.Token == "" {
		return errors.New("login: the BMC answered with no X-Auth-Token")
	}
	c.mu.Lock()
	c.token, c.session = auth.Token, auth.Session
	c.mu.Unlock()
	return nil
}

// logout deletes the session, on a context of its own: the call's may have ended, and the
// session would hold a slot of the BMC's until it timed out.
func (c *rfCall) logout() {
	c.mu.Lock()
	uri := c.session
	c.mu.Unlock()
	if uri == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), redfishLogoutTimeout)
	defer cancel()
	_ = schemas.DeleteSession(c.api.WithContext(ctx), uri)
}

// do runs one request; a session the BMC ended (401 with a token) is opened again, once, and
// the request repeated.
func (c *rfCall) do(f func() error) error {
	err := f()
	var se *schemas.Error
	if err == nil || !errors.As(err, &se) || se.HTTPReturnedStatusCode != http.StatusUnauthorized {
		return err
	}
	c.mu.Lock()
	again := c.token != "" && !c.relogged
	c.relogged = true
	c.token, c.session = "", ""
	c.mu.Unlock()
	if !again {
		return err
	}
	if lerr := c.login(); lerr != nil {
		return fmt.Errorf("session ended, and logging in again failed: %w", lerr)
	}
	return f()
}

// system finds the node's ComputerSystem and reads it.
func (c *rfCall) system() (*schemas.ComputerSystem, error) {
	c.d.mu.Lock()
	uri := c.d.sysURI
	c.d.mu.Unlock()
	if uri == "" {
		var coll struct {
			Members []struct {
				ID string `json:"@odata.id"`
			}
		}
		if err := c.do(func() error { return rfGet(c.api, redfishSystems, &coll) }); err != nil {
			return nil, fmt.Errorf("systems: %w", err)
		}
		var ids []string
		for _, m := range coll.Members {
			ids = append(ids, rfMemberID(m.ID))
			if len(coll.Members) == 1 || rfMemberID(m.ID) == c.d.cfg.System {
				uri = m.ID
			}
		}
		if uri == "" {
			return nil, c.noSystem(ids)
		}
		c.d.mu.Lock()
		c.d.sysURI = uri
		c.d.mu.Unlock()
	}
	var sys *schemas.ComputerSystem
	err := c.do(func() (err error) { sys, err = schemas.GetComputerSystem(c.api, uri); return err })
	if err != nil {
		return nil, fmt.Errorf("system %s: %w", uri, err)
	}
	return sys, nil
}

func (c *rfCall) noSystem(ids []string) error {
	if len(ids) == 0 {
		return errors.New("the BMC has no system")
	}
	if len(ids) > 5 {
		ids = append(ids[:5], fmt.Sprintf("and %d more", len(ids)-5))
	}
	if c.d.cfg.System == "" {
		return fmt.Errorf("the BMC has several systems (%s): say which", strings.Join(ids, ", "))
	}
	return fmt.Errorf("the BMC has no system %q (it has %s)", c.d.cfg.System, strings.Join(ids, ", "))
}

// reset posts ComputerSystem.Reset with the first of want the BMC allows.
func (c *rfCall) reset(sys *schemas.ComputerSystem, want ...schemas.ResetType) error {
	allowed, err := sys.GetSupportedResetTypes()
	if err != nil {
		return fmt.Errorf("reset types: %w", err)
	}
	rt := rfPick(allowed, want...)
	if rt == "" {
		return fmt.Errorf("system %s: the BMC offers no reset %v (it offers %v)", sys.ODataID, want, allowed)
	}
	if err := c.do(func() error { _, err := sys.Reset(rt); return err }); err != nil {
		return fmt.Errorf("reset %s: %w", rt, err)
	}
	return nil
}

// waitOff reads the system until it is off, for BMCs that apply a reset after answering it.
func (c *rfCall) waitOff() (*schemas.ComputerSystem, error) {
	t := time.NewTicker(c.d.cfg.PollInterval)
	defer t.Stop()
	for {
		sys, err := c.system()
		if err != nil || sys.PowerState == schemas.OffPowerState {
			return sys, err
		}
		select {
		case <-t.C:
		case <-c.ctx.Done():
			return nil, fmt.Errorf("waiting for the system to be off after ForceOff (it reads %s): %w", sys.PowerState, c.ctx.Err())
		}
	}
}

// fail wraps err as a classified *Error, with the password masked if a message carries it.
func (d *Redfish) fail(ctx context.Context, op string, c *rfCall, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	c.mu.Lock()
	connected, answered := c.connected, c.answered
	c.mu.Unlock()
	class := rfClassify(err, connected, answered)
	if rfCertError(err) {
		err = fmt.Errorf("%w (the BMC's certificate is not signed by a trusted CA: give its CA, --redfish-ca)", err)
	}
	err = fmt.Errorf("redfish %s: %w", d.endpoint, err)
	if p := d.cfg.Password; p != "" && strings.Contains(err.Error(), p) {
		err = errors.New(strings.ReplaceAll(err.Error(), p, "***"))
	}
	return &Error{Class: class, Op: op, Err: err}
}

// rfClassify returns err's class from the BMC's HTTP status or what the network did: no
// connection within the time is an unreachable BMC, a connection with no answer a timeout.
func rfClassify(err error, connected, answered bool) Class {
	var (
		se *schemas.Error
		de *net.DNSError
	)
	switch {
	case errors.As(err, &se):
		switch se.HTTPReturnedStatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return AuthRefused
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			return Busy
		case http.StatusRequestTimeout, http.StatusGatewayTimeout:
			return TimedOut
		}
		return Failed
	case errors.Is(err, context.Canceled):
		return Failed // the caller gave up: nothing is known of the BMC
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTDOWN), errors.As(err, &de):
		return Unreachable
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		if connected || answered {
			return TimedOut
		}
		return Unreachable
	}
	return Failed
}

// rfCertError reports whether err is a refused certificate.
func rfCertError(err error) bool {
	var (
		ua x509.UnknownAuthorityError
		ve *tls.CertificateVerificationError
		he x509.HostnameError
	)
	return errors.As(err, &ua) || errors.As(err, &ve) || errors.As(err, &he)
}
