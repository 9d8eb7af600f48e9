package testcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// fakeQEMU writes a shell script that stands in for the emulator: it prints stdout on its stdout
// (the serial console), stderr on its stderr, then sleeps or exits.
func fakeQEMU(t *testing.T, stdout, stderr string, sleep bool) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "qemu")
	script := "#!/bin/sh\nprintf '%s' '" + stdout + "'\nprintf '%s\\n' '" + stderr + "' >&2\n"
	if sleep {
		script += "exec sleep 30\n"
	} else {
		script += "exit 1\n"
	}
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProbeKVM(t *testing.T) {
	for _, tc := range []struct {
		name, stdout, stderr string
		sleep                bool
		wantErr              string // "" = success
	}{
		{"iPXE comes up", "SeaBIOS\r\niPXE (PCI 00:02.0) starting execution...ok\r\n" + probeReady + "\r\n", "", true, ""},
		{"emulation failure", "iPXE (PCI 00:02.0) starting execution..", "KVM internal error. Suberror: 1", false, `QEMU says "KVM internal error. Suberror: 1"`},
		{"exits", "", "qemu: could not open /dev/kvm", false, "exited before iPXE asked for DHCP: qemu: could not open /dev/kvm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ProbeKVM(context.Background(), fakeQEMU(t, tc.stdout, tc.stderr, tc.sleep), "/r.rom")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ProbeKVM: %v, want success", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ProbeKVM: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestResolveAccel(t *testing.T) {
	kvmUsable, _ := DetectAccel()
	broken := "iPXE (PCI 00:02.0) starting execution.."
	for _, tc := range []struct {
		name, env, requested string
		qemuOut, qemuErr     string
		want, wantErr        string
	}{
		{name: "env tcg needs no probe", env: "tcg", want: "tcg"},
		{name: "flag tcg beats env kvm", env: "kvm", requested: "tcg", want: "tcg"},
		{name: "bad env value", env: "xen", wantErr: `BOOTFABRIC_ACCEL: "xen" is not one of kvm, tcg, auto`},
		{name: "bad flag value", requested: "hvf", wantErr: `--accel: "hvf" is not one of kvm, tcg, auto`},
		// A host whose /dev/kvm opens but cannot run guests: forcing kvm is refused at once.
		{name: "forced kvm, guest dies", env: "kvm", qemuOut: broken, qemuErr: "KVM internal error. Suberror: 1", wantErr: "BOOTFABRIC_ACCEL=kvm: "},
		// Without forcing, the same host falls back to TCG.
		{name: "auto, guest dies", qemuOut: broken, qemuErr: "KVM internal error. Suberror: 1", want: "tcg"},
		{name: "auto, guest runs", qemuOut: probeReady, want: kvmUsable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(AccelVar, tc.env)
			qemu := "/nonexistent/qemu" // any probe of the cases that need none fails loudly
			if tc.qemuOut != "" || tc.qemuErr != "" {
				qemu = fakeQEMU(t, tc.qemuOut, tc.qemuErr, tc.qemuErr == "")
			}
			got, why, err := ResolveAccel(context.Background(), qemu, tc.requested, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ResolveAccel = %q (%s), %v; want an error containing %q", got, why, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ResolveAccel = %q (%s), %v; want %q", got, why, err, tc.want)
			}
			if why == "" {
				t.Errorf("ResolveAccel gave no reason for %q", got)
			}
		})
	}
}

// kvmFailingQEMU writes an emulator that behaves as nested KVM has been seen to: the probe guest
// gets as far as iPXE's first DHCP request (after the banner key the probe must send), and every
// real VM started under KVM prints QEMU's "KVM internal error" and hangs, paused, as QEMU does.
// Under TCG it is the real QEMU.
func kvmFailingQEMU(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "qemu")
	script := `#!/bin/sh
case "$*" in
*restrict=on*)
	printf 'iPXE initialising devices...ok\r\nFeatures: DNS HTTP\r\n'
	dd bs=1 count=1 2>/dev/null >/dev/null
	printf 'Configuring (net0 52:54:00:12:34:56)......\r\n'
	exec sleep 30 ;;
*accel=kvm*)
	printf 'SeaBIOS (version test)\r\niPXE (PCI 00:02.0) starting execution...ok\r\n'
	echo 'KVM internal error. Suberror: 1' >&2
	echo 'emulation failure' >&2
	exec sleep 300 ;;
esac
exec qemu-system-x86_64 "$@"
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestQEMUKVMFallback: a probe guest runs under KVM, then KVM fails the real VM. Under auto the VM
// is started again under TCG and boots, and the cluster's next VM starts under TCG at once; with
// KVM forced the VM fails with the reason instead of hanging.
func TestQEMUKVMFallback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := qemuCluster(t, ctx)
	log := zaptest.NewLogger(t)
	qemu := kvmFailingQEMU(t)
	kvmHere := func() (string, string) { return "kvm", "" }
	t.Setenv(AccelVar, "")

	rs, err := BootVMs(ctx, c, 1, QEMUOptions{QEMU: qemu, Log: log, detect: kvmHere})
	if err != nil {
		t.Fatalf("auto, KVM failing the VM: %v", err)
	}
	r := rs[0]
	t.Logf("%s: accel %s, kvm fault %q, health %q after %.2f s", r.Node, r.Accel, r.KVMFault, r.Health, r.Seconds)
	if r.Accel != "tcg" || !strings.Contains(r.KVMFault, "KVM internal error") || r.Health != "ok" {
		t.Fatalf("got accel %q, kvm fault %q, health %q; want tcg after a KVM internal error, health ok", r.Accel, r.KVMFault, r.Health)
	}
	if b, err := os.ReadFile(r.SerialLog + ".kvm"); err != nil || !strings.Contains(string(b), "KVM internal error") {
		t.Errorf("the KVM run's console %s.kvm: %v; want QEMU's error in it:\n%s", r.SerialLog, err, b)
	}
	again, err := BootVMs(ctx, c, 1, QEMUOptions{QEMU: qemu, Log: log, detect: kvmHere})
	if err != nil || again[0].Accel != "tcg" || again[0].KVMFault != "" {
		t.Fatalf("the next VM: accel %q, kvm fault %q, %v; want TCG from the start", again[0].Accel, again[0].KVMFault, err)
	}

	t.Setenv(AccelVar, "kvm")
	start := time.Now()
	forced, err := BootVMs(ctx, c, 1, QEMUOptions{QEMU: qemu, Log: log, detect: kvmHere})
	if err == nil || !strings.Contains(forced[0].Err, "KVM failed the guest") || forced[0].Accel != "kvm" {
		t.Fatalf("forced kvm: %+v, %v; want the VM failed, saying KVM failed it", forced, err)
	}
	t.Logf("forced kvm: %v after %.1f s", err, time.Since(start).Seconds())
}
