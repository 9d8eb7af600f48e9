package testcluster

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"go.uber.org/zap/zaptest"
)

// TestQEMUHTTPBoot boots VMs with OVMF's own UEFI HTTP boot client (--firmware uefi-http): one
// VM, then four at once. Each must reach health with ipxe.efi as its first file, fetched over
// HTTP from the URL in the DHCP answer, and the boot servers must count no TFTP transfer at all.
func TestQEMUHTTPBoot(t *testing.T) {
	vmLane(t)
	testenv.NeedFile(t, "/usr/share/OVMF/OVMF_CODE_4M.fd", "ovmf")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c := qemuCluster(t, ctx)
	log := zaptest.NewLogger(t)
	testAccel(t, ctx, c, log)
	const tftpTransfers = "bootfabric_tftp_transfers_total"
	boot := func(n int, timeout time.Duration) []VMResult {
		t.Helper()
		before, err := ServerCounter(ctx, c, tftpTransfers)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("load average before %d uefi-http VMs: %s", n, loadAvg())
		rs, err := BootVMs(ctx, c, n, QEMUOptions{Log: log, Firmware: "uefi-http", Timeout: timeout})
		for _, r := range rs {
			t.Logf("%s (%s, %s): health %q after %.2f s; first file %q; events %v", r.Node, r.Server, r.Accel, r.Health, r.Seconds, r.NBP, r.Events)
			if r.Err != "" {
				b, _ := os.ReadFile(r.SerialLog)
				t.Logf("serial log of %s:\n%s", r.Node, tail(string(b), 40))
			}
		}
		if err != nil {
			t.Fatalf("%d uefi-http VMs: %v", n, err)
		}
		after, err := ServerCounter(ctx, c, tftpTransfers)
		if err != nil {
			t.Fatal(err)
		}
		if after != before {
			t.Errorf("%d uefi-http VMs: the boot servers counted %v TFTP transfers, want none", n, after-before)
		}
		for _, r := range rs {
			if r.NBP != "http ipxe.efi" {
				t.Errorf("%s: first file %q, want %q (ipxe.efi over HTTP)", r.Node, r.NBP, "http ipxe.efi")
			}
		}
		return rs
	}

	one := boot(1, 120*time.Second)
	b, err := os.ReadFile(one[0].SerialLog)
	if err != nil {
		t.Fatal(err)
	}
	// OVMF's boot manager must start its HTTP boot option first: no PXE attempt waited out.
	serial := string(b)
	if !strings.Contains(serial, "Start HTTP Boot over IPv4") || strings.Contains(serial, "Start PXE over") {
		t.Errorf("OVMF did not go straight to HTTP boot over IPv4:\n%s", tail(serial, 40))
	}
	t.Logf("1 uefi-http VM: healthy after %.2f s; load average %s", one[0].Seconds, loadAvg())

	four := boot(4, 180*time.Second)
	batch := slowestFromEveryServer(t, four, len(c.Servers))
	t.Logf("4 uefi-http VMs at once: all healthy, slowest after %.2f s; load average %s", batch, loadAvg())
}

// TestQEMUArgsFirmware: uefi-http is OVMF with a NIC without option ROM and OVMF's PXE driver
// switched off through fw_cfg; uefi-pxe keeps the PXE driver, uefi the iPXE EFI ROM.
func TestQEMUArgsFirmware(t *testing.T) {
	const noPXE4, noPXE6 = "-fw_cfg name=opt/org.tianocore/IPv4PXESupport,string=no", "-fw_cfg name=opt/org.tianocore/IPv6PXESupport,string=no"
	for _, tc := range []struct {
		firmware  string
		want, not []string
	}{
		{"uefi-http", []string{"q35,accel=tcg", "if=pflash", noPXE4, noPXE6, "romfile=,bootindex=1"}, []string{"order=n"}},
		{"uefi-pxe", []string{"q35,accel=tcg", "romfile=,bootindex=1"}, []string{"-fw_cfg"}},
		{"uefi", []string{"romfile=" + DefaultIPXEEFIROM + ",bootindex=1"}, []string{"-fw_cfg"}},
		{"bios", []string{"pc,accel=tcg", "romfile=" + DefaultIPXEROM}, []string{"-fw_cfg", "pflash"}},
	} {
		o := QEMUOptions{Firmware: tc.firmware, Accel: "tcg"}
		o.defaults(&Cluster{})
		got := strings.Join(qemuArgs(o, "02:bf:00:00:00:01", "tap0", "/v.fd"), " ")
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: args %q lack %q", tc.firmware, got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: args %q have %q", tc.firmware, got, n)
			}
		}
	}
	if err := CheckQEMUHost(QEMUOptions{Firmware: "uefi-tftp"}); err == nil || !strings.Contains(err.Error(), "bios, uefi, uefi-pxe, uefi-http") {
		t.Errorf("unknown firmware: %v", err)
	}
}
