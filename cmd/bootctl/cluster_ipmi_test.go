package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/power"
	"github.com/bootfabric/bootfabric/testcluster"
)

// asBootctlEnv, set, makes the test binary bootctl itself: `cluster bmc --protocol ipmi` names its
// own executable as ipmi_sim's chassis program, and under `go test` that is this binary.
const asBootctlEnv = "BOOTCTL_TEST_AS_BOOTCTL"

func TestMain(m *testing.M) {
	if os.Getenv(asBootctlEnv) == "1" {
		main() // exits
	}
	os.Exit(m.Run())
}

// startIPMIBMC runs `bootctl cluster bmc --protocol ipmi` (this binary as bootctl) in front of a
// small QEMU VM and returns its report; the BMC is sent SIGTERM at the end of the test and must
// end with exit 0 within 60 s.
func startIPMIBMC(t *testing.T, dir, pw string) (testcluster.LabBMCReport, *exec.Cmd, <-chan struct{}) {
	qemu := testenv.NeedTool(t, "qemu-system-x86_64", "qemu-system-x86")
	testenv.NeedTool(t, "ipmi_sim", "openipmi")
	cmd := exec.Command(os.Args[0], "cluster", "bmc", "--protocol", "ipmi", "--listen", "127.0.0.1:0", "--dir", filepath.Join(dir, "bmc"),
		"--password-file", pw, "--system", "lab1", "-o", "json", "--",
		qemu, "-machine", "pc,accel=tcg", "-nodefaults", "-no-user-config", "-nographic", "-m", "32", "-serial", "none", "-monitor", "none")
	cmd.Env = append(os.Environ(), asBootctlEnv+"=1")
	cmd.Stderr = testWriter{t}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("cluster bmc did not end within 60 s of SIGTERM")
		}
	})
	var info testcluster.LabBMCReport
	if err := json.NewDecoder(out).Decode(&info); err != nil {
		t.Fatalf("cluster bmc's report: %v", err)
	}
	return info, cmd, exited
}

// testWriter logs what is written to it, line by line, as the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestClusterBMCIPMI: `bootctl cluster bmc --protocol ipmi` in front of a small QEMU VM, driven by
// ipmitool (a client nobody here wrote) and by `bootctl power` (bmc_driver ipmi): status off, a
// one-time PXE boot device, on (QEMU started with -boot once=n), cycle (started again without it),
// off (QEMU gone, QMP's quit); SIGTERM to the BMC ends it with 0 and powers the VM off.
func TestClusterBMCIPMI(t *testing.T) {
	if testing.Short() {
		// In the race run beside the main run, on a fresh machine, the lab BMC's answers came
		// after the IPMI client's 5 s: the main run drives the VM through it.
		t.Skip("-short: a QEMU VM behind the lab BMC, timed by the host's load")
	}
	ipmitool := testenv.NeedTool(t, "ipmitool", "ipmitool")
	dir, pw, creds := labBMCFiles(t)
	info, cmd, exited := startIPMIBMC(t, dir, pw)
	host, port, _ := net.SplitHostPort(info.BMC)
	if info.BMCDriver != "ipmi" || host != "127.0.0.1" || info.Endpoint != "ipmi://"+info.BMC || info.CA != "" {
		t.Errorf("report: %+v", info)
	}
	if fi, err := os.Stat(filepath.Join(dir, "bmc", "chassis.sock")); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("the chassis socket's mode %v, want 0600: whoever reaches it powers the VM", fi.Mode())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tool := func(args ...string) string {
		t.Helper()
		all := append([]string{"-I", "lanplus", "-C", "3", "-N", "10", "-H", host, "-p", port, "-U", "admin", "-P", "lab-secret"}, args...)
		out, err := exec.CommandContext(ctx, ipmitool, all...).CombinedOutput()
		if err != nil {
			t.Fatalf("ipmitool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	inv := testfix.WriteFile(t, filepath.Join(dir, "inv.csv"), []byte("name,mac,bmc,bmc_driver\nlab1,52:54:00:00:00:01,"+info.BMC+",ipmi\n"))
	power1 := func(op string) power.State {
		t.Helper()
		code, out, errs := runBootctl(t, ctx, "power", op, "lab1", "--inventory", inv, "--credentials", creds, "--interval", "0s", "--timeout", "30s", "-o", "json")
		if code != 0 {
			t.Fatalf("power %s: exit %d: %s %s", op, code, out, errs)
		}
		return decodeJSONOut[powerResult](t, out).Result[0].State
	}
	if out := tool("chassis", "power", "status"); !strings.Contains(out, "is off") {
		t.Errorf("ipmitool power status at start: %q", out)
	}
	tool("chassis", "bootdev", "pxe")
	tool("chassis", "power", "on")
	if out := tool("chassis", "power", "status"); !strings.Contains(out, "is on") {
		t.Errorf("ipmitool power status after on: %q", out)
	}
	testfix.WaitFor(t, "QEMU's QMP socket", 60*time.Second, func() bool { return dials(info.QMP) })
	if st := power1("status"); st != power.On {
		t.Errorf("bootctl power status after ipmitool's on: %s", st)
	}
	power1("cycle")
	testfix.WaitFor(t, "the cycled VM's second start", 60*time.Second, func() bool { return len(vmStarts(info.Console)) == 2 && dials(info.QMP) })
	if s := vmStarts(info.Console); !strings.Contains(s[0], "-boot once=n") || strings.Contains(s[1], "-boot once=n") {
		t.Errorf("VM starts: want the first alone with -boot once=n:\n%s", strings.Join(s, "\n"))
	}
	power1("off")
	if out := tool("chassis", "power", "status"); !strings.Contains(out, "is off") || dials(info.QMP) {
		t.Errorf("after bootctl power off: ipmitool reads %q; QMP answers %v", out, dials(info.QMP))
	}
	power1("on")
	testfix.WaitFor(t, "the VM's third start", 60*time.Second, func() bool { return dials(info.QMP) })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("BMC ended by SIGTERM: exit %d, want 0", code)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("cluster bmc did not end within 60 s of SIGTERM")
	}
	if dials(info.QMP) {
		t.Error("the VM's QMP socket still answers after its BMC ended")
	}
}

// dials reports whether a unix socket accepts a connection.
func dials(sock string) bool {
	c, err := net.Dial("unix", sock)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// vmStarts are the start lines ("== ... power on ...") of a QEMUMachine's console log.
func vmStarts(console string) []string {
	data, _ := os.ReadFile(console)
	var s []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "== ") {
			s = append(s, l)
		}
	}
	return s
}

// TestClusterChassisBadInput: the chassis relay without its socket or request is refused with
// exit 2; one whose BMC is gone fails with exit 1, which ipmi_sim takes as a failed request.
func TestClusterChassisBadInput(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "chassis.sock")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"0x20", "get", "power"}, 2, "want --socket"},
		{[]string{"--socket", gone, "--", "0x20"}, 2, "missing argument"},
		{[]string{"--socket", gone, "--", "0x20", "get", "power"}, 1, "chassis relay"},
	} {
		code, out, errs := runBootctl(t, context.Background(), append([]string{"cluster", "chassis"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out, errs, tc.code, tc.want)
		}
	}
}
