package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{"exits", "", "qemu: could not open /dev/kvm", false, "exited before iPXE came up: qemu: could not open /dev/kvm"},
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
