package power

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"
)

// UEFIHTTP is a one-time UEFI HTTP boot (Redfish's UefiHttp target): the firmware fetches its
// loader by HTTP, from RedfishConfig.HTTPBootURI where the BMC takes one, else from DHCP.
const UEFIHTTP BootMode = "uefi-http"

// Redfish defaults.
const (
	// redfishSystems is the systems collection: a fixed URI since Redfish 1.6 (DSP0266 §6.2).
	redfishSystems      = "/redfish/v1/Systems"
	redfishPollInterval = 500 * time.Millisecond
	// redfishLogoutTimeout bounds the session's DELETE, which runs even when the call's
	// context has ended: a session left open holds one of the BMC's few slots until it times out.
	redfishLogoutTimeout = 5 * time.Second
)

// RedfishConfig is one BMC's address, login and trust.
type RedfishConfig struct {
	// Endpoint is the service: https://host[:port], or host[:port], taken as https. http:// is
	// accepted only written out (a BMC's plain port on an isolated network, a test).
	Endpoint           string
	Username, Password string
	// System picks the ComputerSystem of a service that has several (a chassis manager): the
	// member whose Id, the last segment of its URI, is System. A service with one system uses
	// it, whatever System says.
	System string
	// RootCAs are the certificates that may sign the BMC's (nil: the system's roots).
	RootCAs *x509.CertPool
	// InsecureSkipVerify accepts any certificate the BMC presents: anyone on the management
	// network could then take the BMC's place and its password. Only on the admin's explicit word.
	InsecureSkipVerify bool
	// BasicAuth sends the login with every request instead of opening a session, for BMCs whose
	// session service is broken.
	BasicAuth bool
	// HTTPBootURI is what a UEFIHTTP boot fetches, set where the BMC takes one ("": DHCP says).
	HTTPBootURI string
	// PollInterval spaces the power-state reads of a cycle done as off then on (default 500 ms).
	PollInterval time.Duration
}

// Redfish is a Controller over a Redfish service (DMTF DSP0266), through gofish.
//
// As IPMI, every call opens its own session and deletes it before returning, even when the call
// failed or its context ended: BMCs have few session slots and forget sessions when they restart.
// A session that the BMC ends in the middle of a call (401) is opened again, once.
type Redfish struct {
	cfg       RedfishConfig
	endpoint  string // scheme://host[:port]
	transport *http.Transport

	mu     sync.Mutex
	sysURI string // the system's URI, once found
}

var _ Identifier = (*Redfish)(nil)

// NewRedfish checks cfg and returns a controller for the BMC. It does not contact the BMC.
func NewRedfish(cfg RedfishConfig) (*Redfish, error) {
	ep := cfg.Endpoint
	if ep == "" {
		return nil, errors.New("redfish: no BMC endpoint")
	}
	if !strings.Contains(ep, "://") {
		ep = "https://" + ep
	}
	u, err := url.Parse(ep)
	switch {
	case err != nil:
		return nil, fmt.Errorf("redfish %s: %w", cfg.Endpoint, err)
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("redfish %s: scheme %q, want https (or http)", cfg.Endpoint, u.Scheme)
	case u.Host == "" || strings.HasPrefix(u.Host, "-") || (u.Path != "" && u.Path != "/") || u.User != nil:
		return nil, fmt.Errorf("redfish %s: want https://host[:port] with no path or user", cfg.Endpoint)
	case cfg.Username == "":
		return nil, fmt.Errorf("redfish %s: no user", cfg.Endpoint)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = redfishPollInterval
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil                                                                                                                   // a BMC is on the management network, never behind the user's web proxy
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: cfg.RootCAs, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // the admin's explicit opt-in
	return &Redfish{cfg: cfg, endpoint: u.Scheme + "://" + u.Host, transport: tr}, nil
}

// LoadRedfishCA reads a PEM file of CA certificates for RedfishConfig.RootCAs.
func LoadRedfishCA(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("redfish CA: %w", err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("redfish CA %s: no PEM certificate in it", file)
	}
	return p, nil
}

// On implements Controller: a machine that is on (or powering on) gets no command.
func (d *Redfish) On(ctx context.Context) error {
	return d.call(ctx, "on", func(c *rfCall) error {
		sys, err := c.system()
		if err != nil || rfIsOn(sys.PowerState) {
			return err
		}
		return c.reset(sys, "On", "ForceOn")
	})
}

// Off implements Controller: ForceOff, not a graceful shutdown. A machine that is off is left
// alone.
func (d *Redfish) Off(ctx context.Context) error {
	return d.call(ctx, "off", func(c *rfCall) error {
		sys, err := c.system()
		if err != nil || sys.PowerState == schemas.OffPowerState {
			return err
		}
		return c.reset(sys, "ForceOff")
	})
}

// Cycle implements Controller: a machine that is off is powered on; one that is on is reset
// with ForceRestart or PowerCycle, whichever the BMC offers, or else switched off, watched until
// it reads off, and switched on.
func (d *Redfish) Cycle(ctx context.Context) error {
	return d.call(ctx, "cycle", func(c *rfCall) error {
		sys, err := c.system()
		if err != nil {
			return err
		}
		if sys.PowerState == schemas.OffPowerState {
			return c.reset(sys, "On", "ForceOn")
		}
		allowed, err := sys.GetSupportedResetTypes()
		if err != nil {
			return fmt.Errorf("reset types: %w", err)
		}
		if rfPick(allowed, "ForceRestart", "PowerCycle") != "" {
			return c.reset(sys, "ForceRestart", "PowerCycle")
		}
		if err := c.reset(sys, "ForceOff"); err != nil {
			return err
		}
		if sys, err = c.waitOff(); err != nil {
			return err
		}
		return c.reset(sys, "On", "ForceOn")
	})
}

// Status implements Controller: PowerState, where PoweringOn, PoweringOff and Paused are on
// (the machine has power).
func (d *Redfish) Status(ctx context.Context) (State, error) {
	var st State
	err := d.call(ctx, "status", func(c *rfCall) error {
		sys, err := c.system()
		if err != nil {
			return err
		}
		switch {
		case sys.PowerState == schemas.OffPowerState:
			st = Off
		case rfIsOn(sys.PowerState):
			st = On
		default:
			return fmt.Errorf("PowerState %q is neither on nor off", sys.PowerState)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return st, nil
}

// PXENext implements Controller: a boot override for the next boot only
// (BootSourceOverrideEnabled Once), target Pxe (UefiHttp for UEFIHTTP), mode Legacy or UEFI, read
// back after it is written (see setBoot for the BMCs that need more than one PATCH).
func (d *Redfish) PXENext(ctx context.Context, mode BootMode) error {
	want := rfBoot{Enabled: "Once", Target: "Pxe", Mode: "UEFI"}
	switch mode {
	case Legacy:
		want.Mode = "Legacy"
	case UEFI:
	case UEFIHTTP:
		want.Target, want.URI = "UefiHttp", d.cfg.HTTPBootURI
	default:
		return &Error{Class: Failed, Op: "pxe", Err: fmt.Errorf("redfish %s: boot mode %q, want %s, %s or %s", d.endpoint, mode, Legacy, UEFI, UEFIHTTP)}
	}
	return d.call(ctx, "pxe", func(c *rfCall) error {
		sys, err := c.system()
		if err != nil {
			return err
		}
		if allowed := sys.Boot.AllowableBootSourceOverrideTargetValues; len(allowed) > 0 && !slices.Contains(allowed, schemas.BootSource(want.Target)) {
			return fmt.Errorf("system %s: boot target %s is not among the BMC's %v", sys.ODataID, want.Target, allowed)
		}
		return c.setBoot(sys, want)
	})
}

// Identify lights the machine's identify LED, or puts it out: LocationIndicatorActive where the
// system has it, else the deprecated IndicatorLED (Lit, Off).
func (d *Redfish) Identify(ctx context.Context, on bool) error {
	return d.call(ctx, "identify", func(c *rfCall) error {
		sys, err := c.system()
		if err != nil {
			return err
		}
		var body any = map[string]bool{"LocationIndicatorActive": on}
		if sys.LocationIndicatorActive == nil {
			body = map[string]string{"IndicatorLED": map[bool]string{true: "Lit", false: "Off"}[on]}
		}
		return c.do(func() error { return rfClose(c.api.Patch(sys.ODataID, body)) })
	})
}

// rfIsOn reports whether a PowerState has the machine powered.
func rfIsOn(s schemas.PowerState) bool {
	switch s {
	case schemas.OnPowerState, schemas.PoweringOnPowerState, schemas.PoweringOffPowerState, schemas.PausedPowerState:
		return true
	}
	return false
}

// rfPick returns the first of want the BMC allows (all of them when it lists none), or "".
func rfPick(allowed []schemas.ResetType, want ...schemas.ResetType) schemas.ResetType {
	if len(allowed) == 0 {
		return want[0]
	}
	for _, w := range want {
		if slices.Contains(allowed, w) {
			return w
		}
	}
	return ""
}

// rfClose closes a response's body, keeping the request's error.
func rfClose(resp *http.Response, err error) error {
	if resp != nil && resp.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	}
	return err
}

// rfGet reads a resource's JSON into v.
func rfGet(api *gofish.APIClient, uri string, v any) error {
	resp, err := api.Get(uri)
	if err != nil {
		return rfClose(resp, err)
	}
	defer rfClose(resp, nil)
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", uri, err)
	}
	return nil
}

// rfMemberID is the Id a collection member's URI ends in.
func rfMemberID(uri string) string { return path.Base(strings.TrimSuffix(uri, "/")) }
