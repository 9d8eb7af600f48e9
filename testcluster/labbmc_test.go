package testcluster

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/procgroup"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/power"
)

// TestLabIPMIBMC runs the IPMI lab BMC of docs/cluster.md as an admin would set it up: the files
// of examples/lab-bmc copied, lan.conf's port, script path and password edited, vm.sh a small
// QEMU VM. Our IPMI driver and ipmitool (with -C 3, as ipmi_sim needs) read the power, set a
// one-time PXE boot and power the VM on and off; the start after the PXE one has no -boot once=n.
func TestLabIPMIBMC(t *testing.T) {
	vmLane(t)
	sim := testenv.NeedTool(t, "ipmi_sim", "openipmi")
	qemu := testenv.NeedTool(t, "qemu-system-x86_64", "qemu-system-x86")
	ipmitool := testenv.NeedTool(t, "ipmitool", "ipmitool")
	dir := t.TempDir()
	if strings.ContainsAny(dir, " \"'\\") {
		t.Skipf("temporary directory %q cannot be written into lan.conf", dir)
	}
	for _, f := range []string{"chassis.sh", "lan.conf", "sim.cmds"} {
		data, err := os.ReadFile(filepath.Join("..", "examples", "lab-bmc", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "lan.conf" {
			data = []byte(strings.NewReplacer("/var/lib/lab-bmc/lab1", dir, "change-me", "lab-secret").Replace(string(data)))
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	testfix.WriteFile(t, filepath.Join(dir, "vm.sh"), []byte("#!/bin/sh\necho \"start: $*\"\nexec "+qemu+
		" -machine pc,accel=tcg -nodefaults -no-user-config -nographic -m 32 -serial none -monitor none \"$@\"\n"))
	if err := os.Chmod(filepath.Join(dir, "vm.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	conf := filepath.Join(dir, "lan.conf")
	data, _ := os.ReadFile(conf)
	if err := os.WriteFile(conf, []byte(strings.Replace(string(data), "addr 127.0.0.1 9623", "addr 127.0.0.1 "+strconv.Itoa(port), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "ipmi_sim.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(sim, "-c", conf, "-f", filepath.Join(dir, "sim.cmds"), "-s", filepath.Join(dir, "state"), "-n")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		procgroup.Stop(cmd.Process.Pid, done, syscall.SIGKILL)
		// The VM is in a session of its own (setsid): its pid is its group's.
		if data, err := os.ReadFile(filepath.Join(dir, "vm.pid")); err == nil {
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(data))); pid > 0 {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	})

	ctl, err := power.NewIPMI(power.IPMIConfig{Host: "127.0.0.1", Port: port, Username: "admin", Password: "lab-secret", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	status := func() power.State {
		t.Helper()
		st, err := ctl.Status(ctx)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		return st
	}
	testfix.WaitFor(t, "ipmi_sim to answer", 30*time.Second, func() bool {
		_, err := ctl.Status(ctx)
		return err == nil
	})
	if st := status(); st != power.Off {
		t.Fatalf("status at start: %s", st)
	}
	// chassis.sh starts vm.sh in the background, which logs its start: a power off before that
	// line is written would kill the VM unlogged, so each power on waits for its line.
	starts := func() []string {
		console, _ := os.ReadFile(filepath.Join(dir, "console.log"))
		var out []string
		for _, l := range strings.Split(string(console), "\n") {
			if strings.HasPrefix(l, "start:") {
				out = append(out, strings.TrimSpace(l))
			}
		}
		return out
	}
	waitStarts := func(n int) {
		testfix.WaitFor(t, "VM start "+strconv.Itoa(n)+" in console.log", 30*time.Second, func() bool { return len(starts()) >= n })
	}
	if err := ctl.PXENext(ctx, power.Legacy); err != nil {
		t.Fatal(err)
	}
	if err := ctl.On(ctx); err != nil {
		t.Fatal(err)
	}
	waitStarts(1)
	if st := status(); st != power.On {
		t.Errorf("status after on: %s", st)
	}
	out, err := exec.CommandContext(ctx, ipmitool, "-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p", strconv.Itoa(port),
		"-U", "admin", "-P", "lab-secret", "chassis", "power", "off").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Down/Off") {
		t.Errorf("ipmitool -C 3 chassis power off: %v %s", err, out)
	}
	if st := status(); st != power.Off {
		t.Errorf("status after ipmitool's off: %s", st)
	}
	if err := ctl.On(ctx); err != nil {
		t.Fatal(err)
	}
	waitStarts(2)
	if err := ctl.Off(ctx); err != nil {
		t.Fatal(err)
	}
	if starts := starts(); len(starts) != 2 || starts[0] != "start: -boot once=n" || starts[1] != "start:" {
		t.Errorf("VM starts %q, want the PXE one with -boot once=n, then one without\nipmi_sim: %s", starts, readLog(filepath.Join(dir, "ipmi_sim.log")))
	}
	if st := status(); st != power.Off {
		t.Errorf("status after off: %s", st)
	}
}

func readLog(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}
