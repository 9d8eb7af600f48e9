package power

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/redfishsim"
	"github.com/bootfabric/bootfabric/internal/testenv"
)

// rfClient drives a simulated BMC's system "1" with one client, and reads back its state.
type rfClient interface {
	act(t *testing.T, ctx context.Context, action string) // on, off, restart, pxe
	read(t *testing.T, ctx context.Context) rfSeen
}

// rfSeen is a system's state as a client reads it.
type rfSeen struct {
	Power, Target, Enabled, Mode string
}

// TestRedfishInterop checks the simulator against clients nobody here wrote (DMTF's redfishtool,
// OpenStack's sushy) and the driver against the same BMC: power on, off, restart, and a boot
// override set and read back, each client reading what it did with its own reading.
func TestRedfishInterop(t *testing.T) {
	for _, name := range []string{"driver", "redfishtool", "sushy"} {
		t.Run(name, func(t *testing.T) {
			bmc := redfishsim.Start(t, redfishsim.Options{TLS: true})
			var c rfClient
			switch name {
			case "driver":
				c = &rfDriverClient{d: rfController(t, bmc, RedfishConfig{})}
			case "redfishtool":
				c = &rfToolClient{bin: testenv.NeedTool(t, "redfishtool", "redfishtool"), bmc: bmc}
			case "sushy":
				testenv.NeedFile(t, "/usr/lib/python3/dist-packages/sushy", "python3-sushy")
				c = &rfSushyClient{bmc: bmc}
			}
			// redfishtool takes a second or two a command, mostly in Python's start.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for _, step := range []struct {
				action      string
				power       string // "" : not checked
				target, enb string
			}{
				{"on", "On", "", ""}, {"off", "Off", "", ""}, {"on", "On", "", ""}, {"restart", "On", "", ""},
				{"pxe", "", "Pxe", "Once"},
			} {
				c.act(t, ctx, step.action)
				got := c.read(t, ctx)
				if step.power != "" && !strings.EqualFold(got.Power, step.power) {
					t.Errorf("%s: the client reads power %q, want %s", step.action, got.Power, step.power)
				}
				if step.target != "" && (!strings.EqualFold(got.Target, step.target) || !strings.EqualFold(got.Enabled, step.enb)) {
					t.Errorf("%s: the client reads override %+v, want %s %s", step.action, got, step.enb, step.target)
				}
			}
			if got := bmc.Resets("1"); strings.Join(got, " ") != "On ForceOff On ForceRestart" {
				t.Errorf("the BMC applied %v, want On ForceOff On ForceRestart", got)
			}
			if b, _ := bmc.BootOverride("1"); b.Target != "Pxe" || b.Enabled != "Once" {
				t.Errorf("the BMC holds override %+v, want Once Pxe", b)
			}
			if n := bmc.Sessions(); n != 0 {
				t.Errorf("%d sessions left open", n)
			}
		})
	}
}

type rfDriverClient struct{ d *Redfish }

func (c *rfDriverClient) act(t *testing.T, ctx context.Context, action string) {
	f := map[string]func(context.Context) error{
		"on": c.d.On, "off": c.d.Off, "restart": c.d.Cycle,
		"pxe": func(ctx context.Context) error { return c.d.PXENext(ctx, UEFI) },
	}[action]
	if err := f(ctx); err != nil {
		t.Fatalf("driver %s: %v", action, err)
	}
}

func (c *rfDriverClient) read(t *testing.T, ctx context.Context) rfSeen {
	var s rfSeen
	err := c.d.call(ctx, "status", func(rc *rfCall) error {
		sys, err := rc.system()
		if err == nil {
			s = rfSeen{Power: string(sys.PowerState), Target: string(sys.Boot.BootSourceOverrideTarget),
				Enabled: string(sys.Boot.BootSourceOverrideEnabled), Mode: string(sys.Boot.BootSourceOverrideMode)}
		}
		return err
	})
	if err != nil {
		t.Fatalf("driver read: %v", err)
	}
	return s
}

// rfToolClient is DMTF's redfishtool, with sessions over HTTPS (it does not check certificates:
// it has no option for a CA).
type rfToolClient struct {
	bin string
	bmc *redfishsim.BMC
}

func (c *rfToolClient) run(t *testing.T, ctx context.Context, args ...string) []byte {
	t.Helper()
	base := []string{"-r", c.bmc.Host(), "-u", c.bmc.User, "-p", c.bmc.Password, "-S", "Always", "-A", "Session", "-T", "10", "Systems", "-I", "1"}
	cmd := exec.CommandContext(ctx, c.bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("redfishtool %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.Bytes()
}

func (c *rfToolClient) act(t *testing.T, ctx context.Context, action string) {
	switch action {
	case "on":
		c.run(t, ctx, "reset", "On")
	case "off":
		c.run(t, ctx, "reset", "ForceOff")
	case "restart":
		c.run(t, ctx, "reset", "ForceRestart")
	case "pxe":
		c.run(t, ctx, "setBootOverride", "Once", "Pxe")
	}
}

func (c *rfToolClient) read(t *testing.T, ctx context.Context) rfSeen {
	var sys struct {
		PowerState string
		Boot       struct{ BootSourceOverrideTarget, BootSourceOverrideEnabled, BootSourceOverrideMode string }
	}
	out := c.run(t, ctx, "get")
	if err := json.Unmarshal(out, &sys); err != nil {
		t.Fatalf("redfishtool get: %v\n%s", err, out)
	}
	return rfSeen{sys.PowerState, sys.Boot.BootSourceOverrideTarget, sys.Boot.BootSourceOverrideEnabled, sys.Boot.BootSourceOverrideMode}
}

// rfSushyClient is OpenStack's sushy (Ironic's Redfish library), through testdata/sushy_client.py
// under Debian's python3, checking the BMC's certificate against its CA.
type rfSushyClient struct {
	bmc  *redfishsim.BMC
	last rfSeen
}

func (c *rfSushyClient) act(t *testing.T, ctx context.Context, action string) {
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", "testdata/sushy_client.py", c.bmc.URL, c.bmc.User, c.bmc.CAFile, "1", action)
	// requests takes REQUESTS_CA_BUNDLE over the verify argument it is given: without it here.
	cmd.Env = append(rfEnvWithout(os.Environ(), "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"), "BMC_PASSWORD="+c.bmc.Password)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("sushy %s: %v\n%s", action, err, errb.String())
	}
	var s struct{ Power, Target, Enabled, Mode string }
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("sushy %s: %v\n%s", action, err, out.String())
	}
	c.last = rfSeen(s)
}

// read is what the script printed after its action: sushy refreshed the system then.
func (c *rfSushyClient) read(*testing.T, context.Context) rfSeen { return c.last }

// rfEnvWithout is env less the named variables.
func rfEnvWithout(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}
