package power

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/redfishsim"
)

// rfController makes a controller for a simulated BMC, trusting its certificate.
func rfController(t *testing.T, bmc *redfishsim.BMC, cfg RedfishConfig) *Redfish {
	t.Helper()
	cfg.Endpoint = bmc.URL
	if cfg.Username == "" {
		cfg.Username, cfg.Password = bmc.User, bmc.Password
	}
	if bmc.CAFile != "" && cfg.RootCAs == nil && !cfg.InsecureSkipVerify {
		pool, err := LoadRedfishCA(bmc.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RootCAs = pool
	}
	cfg.PollInterval = 20 * time.Millisecond
	d, err := NewRedfish(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func rfCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestRedfishPower switches a system through every action and checks the power, the resets the
// BMC saw, and that no session is left open.
func TestRedfishPower(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   redfishsim.Options
		resets []string // after on, on, off, off, cycle (from off), cycle (from on)
	}{
		{"restart", redfishsim.Options{TLS: true}, []string{"On", "ForceOff", "On", "ForceRestart"}},
		{"power cycle only", redfishsim.Options{ResetTypes: []string{"On", "ForceOff", "PowerCycle"}}, []string{"On", "ForceOff", "On", "PowerCycle"}},
		{"off then on, lagging", redfishsim.Options{ResetTypes: []string{"On", "ForceOff"}, Lag: 50 * time.Millisecond},
			[]string{"On", "ForceOff", "On", "ForceOff", "On"}},
		{"basic auth", redfishsim.Options{}, []string{"On", "ForceOff", "On", "ForceRestart"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bmc := redfishsim.Start(t, tc.opts)
			d := rfController(t, bmc, RedfishConfig{BasicAuth: tc.name == "basic auth"})
			ctx := rfCtx(t)
			steps := []struct {
				op   string
				f    func(context.Context) error
				want string
			}{
				{"on", d.On, "On"}, {"on again", d.On, "On"}, {"off", d.Off, "Off"}, {"off again", d.Off, "Off"},
				{"cycle from off", d.Cycle, "On"}, {"cycle from on", d.Cycle, "On"},
			}
			for _, s := range steps {
				if err := s.f(ctx); err != nil {
					t.Fatalf("%s: %v", s.op, err)
				}
				if !rfWaitPower(d, s.want) {
					t.Fatalf("%s: power reads %s, want %s", s.op, bmc.Power("1"), s.want)
				}
				if n := bmc.Sessions(); n != 0 {
					t.Fatalf("%s: %d sessions left open", s.op, n)
				}
			}
			if got := bmc.Resets("1"); !slices.Equal(got, tc.resets) {
				t.Errorf("resets %v, want %v", got, tc.resets)
			}
			if tc.name == "basic auth" && bmc.Logins() != 0 {
				t.Errorf("basic auth opened %d sessions", bmc.Logins())
			}
		})
	}
}

// rfWaitPower reads the status until it is want, a bounded number of times: a lagging BMC
// applies a reset after answering it.
func rfWaitPower(d *Redfish, want string) bool {
	for range 100 {
		st, err := d.Status(context.Background())
		if err == nil && strings.EqualFold(string(st), want) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// TestRedfishPXE sets a one-time network boot on well-behaved and awkward BMCs.
func TestRedfishPXE(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    redfishsim.Options
		mode    BootMode
		uri     string
		want    redfishsim.Boot // the system's override ("" Mode: unchanged UEFI)
		pending bool            // want is in the Settings resource
		patches int
		errHas  string
	}{
		{"legacy", redfishsim.Options{}, Legacy, "", redfishsim.Boot{Target: "Pxe", Enabled: "Once", Mode: "Legacy"}, false, 1, ""},
		{"uefi", redfishsim.Options{}, UEFI, "", redfishsim.Boot{Target: "Pxe", Enabled: "Once", Mode: "UEFI"}, false, 1, ""},
		{"uefi http", redfishsim.Options{}, UEFIHTTP, "http://10.0.0.1/boot.efi",
			redfishsim.Boot{Target: "UefiHttp", Enabled: "Once", Mode: "UEFI", URI: "http://10.0.0.1/boot.efi"}, false, 1, ""},
		{"mode refused", redfishsim.Options{RejectMode: true}, Legacy, "", redfishsim.Boot{Target: "Pxe", Enabled: "Once", Mode: "UEFI"}, false, 2, ""},
		{"boot read-only", redfishsim.Options{BootReadOnly: true}, Legacy, "", redfishsim.Boot{Target: "Pxe", Enabled: "Once", Mode: "Legacy"}, true, 3, ""},
		{"dropped once", redfishsim.Options{DropOverrides: 1}, UEFI, "", redfishsim.Boot{Target: "Pxe", Enabled: "Once", Mode: "UEFI"}, false, 2, ""},
		{"never holds", redfishsim.Options{DropOverrides: -1}, UEFI, "", redfishsim.Boot{Target: "None", Enabled: "Disabled", Mode: "UEFI"}, false, 2, "does not hold"},
		{"bad mode", redfishsim.Options{}, "floppy", "", redfishsim.Boot{Target: "None", Enabled: "Disabled", Mode: "UEFI"}, false, 0, "boot mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bmc := redfishsim.Start(t, tc.opts)
			d := rfController(t, bmc, RedfishConfig{HTTPBootURI: tc.uri})
			err := d.PXENext(rfCtx(t), tc.mode)
			switch {
			case tc.errHas == "" && err != nil:
				t.Fatalf("pxe: %v", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas) || Classify(err) != Failed):
				t.Fatalf("pxe: %v (class %s), want a failure saying %q", err, Classify(err), tc.errHas)
			}
			sys, pending := bmc.BootOverride("1")
			got := sys
			if tc.pending {
				if pending == nil {
					t.Fatal("nothing in the Settings resource")
				}
				got = *pending
			}
			if got != tc.want {
				t.Errorf("override %+v, want %+v", got, tc.want)
			}
			if n := bmc.BootPatches(); n != tc.patches {
				t.Errorf("%d boot PATCHes, want %d", n, tc.patches)
			}
			if n := bmc.Sessions(); n != 0 {
				t.Errorf("%d sessions left open", n)
			}
		})
	}
}

// TestRedfishPXEThenBoot checks that the override is what the next power-on boots from, and only
// that one (read-only Boot: the Settings resource is applied at the reset).
func TestRedfishPXEThenBoot(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		bmc := redfishsim.Start(t, redfishsim.Options{BootReadOnly: readOnly})
		d := rfController(t, bmc, RedfishConfig{})
		ctx := rfCtx(t)
		for _, f := range []func(context.Context) error{
			func(ctx context.Context) error { return d.PXENext(ctx, UEFI) }, d.On, d.Cycle,
		} {
			if err := f(ctx); err != nil {
				t.Fatalf("read-only %v: %v", readOnly, err)
			}
		}
		if got := bmc.Boots("1"); !slices.Equal(got, []string{"Pxe", ""}) {
			t.Errorf("read-only %v: boots %q, want Pxe then the normal order", readOnly, got)
		}
	}
}

// TestRedfishSessionEnds ends the session in the middle of a call: the driver logs in again, once.
func TestRedfishSessionEnds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   redfishsim.Options
		logins int
		class  Class
	}{
		{"runs out once", redfishsim.Options{SessionUses: 3}, 2, ""},
		{"runs out at once, every time", redfishsim.Options{SessionUses: 1}, 2, AuthRefused},
		{"expired by time", redfishsim.Options{SessionLifetime: time.Nanosecond}, 2, AuthRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bmc := redfishsim.Start(t, tc.opts)
			d := rfController(t, bmc, RedfishConfig{})
			err := d.PXENext(rfCtx(t), UEFI)
			if Classify(err) != tc.class {
				t.Fatalf("pxe: %v (class %q), want class %q", err, Classify(err), tc.class)
			}
			if n := bmc.Logins(); n != tc.logins {
				t.Errorf("%d logins, want %d", n, tc.logins)
			}
		})
	}
}

// TestRedfishErrors checks the classes of the failures an operator meets.
func TestRedfishErrors(t *testing.T) {
	good := redfishsim.Start(t, redfishsim.Options{TLS: true})
	// A listener that never accepts: the kernel completes the handshake, nothing answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	for _, tc := range []struct {
		name   string
		cfg    RedfishConfig
		class  Class
		errHas string
	}{
		{"wrong password", RedfishConfig{Endpoint: good.URL, Username: "admin", Password: "wrong-secret"}, AuthRefused, "401"},
		{"unknown CA", RedfishConfig{Endpoint: good.URL, Username: "admin", Password: "x"}, Failed, "--redfish-ca"},
		{"no answer", RedfishConfig{Endpoint: "http://" + silent.Addr().String(), Username: "admin"}, TimedOut, "deadline"},
		{"port closed", RedfishConfig{Endpoint: "http://" + closedAddr, Username: "admin"}, Unreachable, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.class == AuthRefused {
				pool, err := LoadRedfishCA(good.CAFile)
				if err != nil {
					t.Fatal(err)
				}
				tc.cfg.RootCAs = pool
			}
			d, err := NewRedfish(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			// Only the silent BMC must time out; the others get a deadline a loaded
			// race run cannot reach (a TLS handshake took over 300 ms under CI).
			wait := 20 * time.Second
			if tc.class == TimedOut {
				wait = 300 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			_, err = d.Status(ctx)
			if Classify(err) != tc.class || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("status: %v (class %s), want class %s saying %q", err, Classify(err), tc.class, tc.errHas)
			}
			if strings.Contains(err.Error(), "wrong-secret") {
				t.Errorf("the password is in the error: %v", err)
			}
		})
	}
	// The explicit opt-in takes any certificate.
	d := rfController(t, good, RedfishConfig{InsecureSkipVerify: true})
	if _, err := d.Status(rfCtx(t)); err != nil {
		t.Errorf("insecure: %v", err)
	}
}

// TestRedfishConfig checks that bad configurations are refused, saying what.
func TestRedfishConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg    RedfishConfig
		errHas string
	}{
		{RedfishConfig{Username: "a"}, "no BMC endpoint"},
		{RedfishConfig{Endpoint: "ftp://bmc", Username: "a"}, "scheme"},
		{RedfishConfig{Endpoint: "https://bmc/redfish/v1", Username: "a"}, "no path"},
		{RedfishConfig{Endpoint: "bmc:443"}, "no user"},
	} {
		if _, err := NewRedfish(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("%+v: %v, want an error saying %q", tc.cfg, err, tc.errHas)
		}
	}
	if d, err := NewRedfish(RedfishConfig{Endpoint: "bmc7:8443", Username: "a"}); err != nil || d.endpoint != "https://bmc7:8443" {
		t.Errorf("a bare host:port: %v, endpoint %v, want https", err, d)
	}
	if _, err := LoadRedfishCA("/nonexistent/ca.pem"); err == nil {
		t.Error("a missing CA file was taken")
	}
}

// TestRedfishSystems picks a system of a BMC that has several.
func TestRedfishSystems(t *testing.T) {
	bmc := redfishsim.Start(t, redfishsim.Options{Systems: []string{"n1", "n2", "n3"}})
	ctx := rfCtx(t)
	if err := rfController(t, bmc, RedfishConfig{System: "n2"}).On(ctx); err != nil {
		t.Fatal(err)
	}
	if bmc.Power("n2") != "On" || bmc.Power("n1") != "Off" || bmc.Power("n3") != "Off" {
		t.Errorf("powers n1 %s n2 %s n3 %s, want only n2 on", bmc.Power("n1"), bmc.Power("n2"), bmc.Power("n3"))
	}
	for sys, want := range map[string]string{"": "several systems (n1, n2, n3)", "n9": `no system "n9"`} {
		_, err := rfController(t, bmc, RedfishConfig{System: sys}).Status(ctx)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("system %q: %v, want %q", sys, err, want)
		}
	}
}

// TestRedfishIdentify lights and puts out the LED, by either property.
func TestRedfishIdentify(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		bmc := redfishsim.Start(t, redfishsim.Options{LegacyLED: legacy})
		d := rfController(t, bmc, RedfishConfig{})
		for _, on := range []bool{true, false} {
			if err := d.Identify(rfCtx(t), on); err != nil {
				t.Fatalf("legacy %v, identify %v: %v", legacy, on, err)
			}
			if bmc.LED("1") != on {
				t.Errorf("legacy %v: LED %v, want %v", legacy, bmc.LED("1"), on)
			}
		}
	}
}
