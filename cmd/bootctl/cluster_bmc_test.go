package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/power"
	"github.com/bootfabric/bootfabric/testcluster"
)

// TestClusterBMC starts `bootctl cluster bmc` in front of a small QEMU VM and drives it with
// `bootctl power` over HTTPS with the CA the BMC wrote: status off, a one-time PXE override, on
// (QEMU started with -boot once=n and answering QMP), cycle (started again without it), off
// (QEMU gone). Interrupting the BMC powers the VM off. The same holds with the awkward BMC's
// switches on (Boot read-only on the system, Mode refused, the first override dropped).
func TestClusterBMC(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"well-behaved", nil},
		{"awkward", []string{"--boot-read-only", "--reject-mode", "--drop-overrides", "1", "--legacy-led"}},
	} {
		t.Run(tc.name, func(t *testing.T) { testClusterBMC(t, tc.flags) })
	}
}

// labBMCFiles makes a directory with a lab BMC's password file (lab-secret) and the credentials
// file bootctl power reads for it.
func labBMCFiles(t *testing.T) (dir, pwFile, creds string) {
	dir = t.TempDir()
	pwFile = testfix.WriteFile(t, filepath.Join(dir, "bmc-password"), []byte("lab-secret\n"))
	creds = testfix.WriteFile(t, filepath.Join(dir, "bmc.yaml"), []byte("default: {user: admin, password: lab-secret}\n"))
	if err := os.Chmod(creds, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, pwFile, creds
}

func testClusterBMC(t *testing.T, flags []string) {
	qemu := testenv.NeedTool(t, "qemu-system-x86_64", "qemu-system-x86")
	dir, pw, creds := labBMCFiles(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testfix.FreePort(t))
	bmcDir := filepath.Join(dir, "bmc")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw2 := io.Pipe()
	var stderr strings.Builder
	exited := make(chan struct{}) // closed when run has returned code
	var code int
	go func() {
		defer close(exited)
		args := append([]string{"bootctl", "cluster", "bmc", "--listen", addr, "--dir", bmcDir, "--password-file", pw, "--system", "lab1", "-o", "json"}, flags...)
		code = run(ctx, append(args, "--", qemu, "-machine", "pc,accel=tcg", "-nodefaults", "-no-user-config", "-nographic", "-m", "32",
			"-serial", "none", "-monitor", "none"), pw2, &stderr)
		pw2.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			t.Error("cluster bmc did not end within 60 s of its interruption")
		}
	})
	var info testcluster.LabBMCReport
	if err := json.NewDecoder(pr).Decode(&info); err != nil {
		t.Fatalf("cluster bmc's report: %v (stderr %s)", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	if info.BMC != addr || info.BMCDriver != "redfish" || info.CA != filepath.Join(bmcDir, "ca.pem") || info.Endpoint != "https://"+addr {
		t.Errorf("report: %+v", info)
	}
	inv := testfix.WriteFile(t, filepath.Join(dir, "inv.csv"), []byte("name,mac,bmc,bmc_driver\nlab1,52:54:00:00:00:01,"+addr+",redfish\n"))
	power1 := func(op string, args ...string) powerResult {
		t.Helper()
		all := append([]string{"power", op, "lab1", "--inventory", inv, "--credentials", creds, "--redfish-ca", info.CA,
			"--interval", "0s", "--timeout", "60s", "-o", "json"}, args...)
		code, out, errs := runBootctl(t, context.Background(), all...)
		if code != 0 {
			t.Fatalf("power %s: exit %d: %s %s", op, code, out, errs)
		}
		return decodeJSONOut[powerResult](t, out)
	}
	starts := func() []string {
		data, _ := os.ReadFile(info.Console)
		var s []string
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "== ") {
				s = append(s, l)
			}
		}
		return s
	}
	if r := power1("status"); r.Result[0].State != power.Off {
		t.Errorf("status before power on: %+v", r.Result)
	}
	power1("pxe")
	power1("on")
	if r := power1("status"); r.Result[0].State != power.On {
		t.Errorf("status after on: %+v", r.Result)
	}
	power1("identify", "on") // LocationIndicatorActive, or IndicatorLED with --legacy-led
	power1("identify", "off")
	power1("cycle")
	s := starts()
	if len(s) != 2 || !strings.Contains(s[0], "-boot once=n") || strings.Contains(s[1], "-boot once=n") {
		t.Errorf("VM starts: want the first alone with -boot once=n:\n%s", strings.Join(s, "\n"))
	}
	power1("off")
	if r := power1("status"); r.Result[0].State != power.Off {
		t.Errorf("status after off: %+v", r.Result)
	}
	power1("on")
	cancel()
	select {
	case <-exited:
		if code != 0 {
			t.Errorf("interrupted BMC: exit %d, want 0: a stop asked for (%s)", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("cluster bmc did not end within 60 s of its interruption")
	}
	if c, err := net.Dial("unix", info.QMP); err == nil {
		c.Close()
		t.Error("the VM's QMP socket still answers after its BMC ended")
	}
}

// TestClusterBMCBadInput: each mistake is one line naming it, exit 2, before anything starts.
func TestClusterBMCBadInput(t *testing.T) {
	dir := t.TempDir()
	pw := testfix.WriteFile(t, filepath.Join(dir, "pw"), []byte("secret\n"))
	empty := testfix.WriteFile(t, filepath.Join(dir, "empty"), []byte("\n"))
	long := testfix.WriteFile(t, filepath.Join(dir, "long"), []byte("0123456789abcdef0123\n"))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", []string{"--dir", dir, "--password-file", pw}, "no VM command: give it after --"},
		{"no dir", []string{"--password-file", pw, "--", "qemu"}, "--dir: required"},
		{"no password", []string{"--dir", dir, "--", "qemu"}, "--password-file: required"},
		{"empty password", []string{"--dir", dir, "--password-file", empty, "--", "qemu"}, "first line is empty"},
		{"missing password file", []string{"--dir", dir, "--password-file", filepath.Join(dir, "nope"), "--", "qemu"}, "--password-file:"},
		{"bad listen", []string{"--dir", dir, "--password-file", pw, "--listen", "8443", "--", "qemu"}, "--listen:"},
		{"bad system", []string{"--dir", dir, "--password-file", pw, "--system", "a/b", "--", "qemu"}, "--system:"},
		{"comma dir", []string{"--dir", filepath.Join(dir, "a,b"), "--password-file", pw, "--", "qemu"}, "comma"},
		{"bad output", []string{"--dir", dir, "--password-file", pw, "-o", "xml", "--", "qemu"}, "--output"},
		{"negative lag", []string{"--dir", dir, "--password-file", pw, "--lag", "-1s", "--", "qemu"}, "must not be negative"},
		{"bad drop count", []string{"--dir", dir, "--password-file", pw, "--drop-overrides", "-2", "--", "qemu"}, "--drop-overrides: -2"},
		{"command without =", []string{"--dir", dir, "--password-file", pw, "--command", "n1"}, "--command: \"n1\": want NAME=SHELL-COMMAND"},
		{"command named twice", []string{"--dir", dir, "--password-file", pw, "--command", "n1=true", "--command", "n1=false"}, "named twice"},
		{"command bad name", []string{"--dir", dir, "--password-file", pw, "--command", "a/b=true"}, "path segment"},
		{"command and a VM", []string{"--dir", dir, "--password-file", pw, "--command", "n1=true", "--", "qemu"}, "give no QEMU command"},
		{"command and system", []string{"--dir", dir, "--password-file", pw, "--command", "n1=true", "--system", "x"}, "--system: with --command"},
		{"ipmi with commands", []string{"--protocol", "ipmi", "--dir", dir, "--password-file", pw, "--command", "n1=true", "--", "qemu"}, "--command: a Redfish BMC's switch"},
		{"unknown protocol", []string{"--protocol", "ssh", "--dir", dir, "--password-file", pw, "--", "qemu"}, "--protocol"},
		{"ipmi with a Redfish switch", []string{"--protocol", "ipmi", "--dir", dir, "--password-file", pw, "--reject-mode", "--", "qemu"}, "--reject-mode: a Redfish BMC's switch"},
		{"ipmi host name", []string{"--protocol", "ipmi", "--dir", dir, "--password-file", pw, "--listen", "localhost:623", "--", "qemu"}, "not an IPv4 address"},
		{"ipmi no port", []string{"--protocol", "ipmi", "--dir", dir, "--password-file", pw, "--listen", "127.0.0.1", "--", "qemu"}, "--listen"},
		{"ipmi long password", []string{"--protocol", "ipmi", "--dir", dir, "--password-file", long, "--", "qemu"}, "too long"},
		{"ipmi no command", []string{"--protocol", "ipmi", "--dir", dir, "--password-file", pw}, "no VM command: give it after --"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runBootctl(t, context.Background(), append([]string{"cluster", "bmc"}, tc.args...)...)
			if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Errorf("exit %d, stderr %q (stdout %q), want 2 and one line with %q", code, errs, out, tc.want)
			}
		})
	}
}

// TestClusterUpBMCBadInput: cluster up's --bmc and --vms are refused, one line, exit 2, before
// anything is built.
func TestClusterUpBMCBadInput(t *testing.T) {
	testenv.NeedRoot(t, "cluster up checks that it runs as root before its flags")
	for tool, pkg := range map[string]string{"ip": "iproute2", "tc": "iproute2", "curl": "curl", "udhcpc": "udhcpc", "busybox": "busybox"} {
		testenv.NeedTool(t, tool, pkg)
	}
	testenv.NeedFile(t, "/usr/lib/ipxe/undionly.kpxe", "ipxe")
	state := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown BMC", []string{"--bmc", "ilo", "--kind", "qemu"}, "--bmc"},
		{"netns with an IPMI BMC", []string{"--bmc", "ipmi"}, "--bmc ipmi: only VMs have IPMI BMCs here"},
		{"no IPMI VMs", []string{"--bmc", "ipmi", "--kind", "qemu", "--vms", "0"}, "--vms: 0"},
		{"no VMs", []string{"--bmc", "redfish", "--kind", "qemu", "--vms", "0"}, "--vms: 0"},
		{"bad output", []string{"--bmc", "redfish", "--kind", "qemu", "-o", "xml"}, "--output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runBootctl(t, context.Background(), append([]string{"cluster", "up", "--name", "bmcbad", "--state-dir", state}, tc.args...)...)
			if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Errorf("exit %d, stderr %q (stdout %q), want 2 and one line with %q", code, errs, out, tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("refused cluster ups left %d files in the state directory", len(entries))
	}
}
