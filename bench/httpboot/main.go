// Command httpboot measures a UEFI network boot of one QEMU VM (OVMF, TCG or KVM) three ways in
// one run, rounds interleaved so that host load hits every way alike:
//
//   - uefi-pxe: bootctl serve; OVMF's PXE client fetches ipxe.efi over TFTP;
//   - uefi-http: bootctl serve; OVMF's HTTP boot client fetches ipxe.efi over HTTP, no TFTP;
//   - dnsmasq-http: the same HTTP boot from dnsmasq (DHCP with option 60 "HTTPClient" and the
//     boot URL, iPXE's script URL for user class iPXE) and busybox httpd serving the same
//     ipxe.efi, iPXE script, kernel and initramfs as static files (a CGI takes the health report).
//
// Each way boots the same kernel and initramfs to the same health report; the figure is the time
// from QEMU start to the console line saying the report was sent, with the console's steps.
// It needs root, qemu-system-x86, ovmf, ipxe, dnsmasq-base and busybox; bench/httpboot/run.sh
// builds bootctl and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/testcluster"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap"
)

func main() {
	bootctl := flag.String("bootctl", "", "bootctl binary (built by run.sh)")
	rounds := flag.Int("rounds", 3, "boots per way")
	ways := flag.String("ways", "uefi-pxe,uefi-http,dnsmasq-http", "ways to boot, comma-separated")
	accel := flag.String("accel", "", "kvm, tcg or auto (default: $BOOTFABRIC_ACCEL, else auto)")
	stateDir := flag.String("state-dir", "", "cluster state directory (default: a temporary one)")
	flag.Parse()
	if err := run(*bootctl, *rounds, strings.Split(*ways, ","), *accel, *stateDir); err != nil {
		fmt.Fprintln(os.Stderr, "httpboot:", err)
		os.Exit(1)
	}
}

// machine is one node and one boot server on gigabit links.
func machine(name string) *topology.Machine {
	return &topology.Machine{
		Name: name,
		Levels: []topology.LevelSpec{
			{Name: "board", Prefix: "b", Count: 1},
			{Name: "node", Prefix: "n", Count: 1, Uplink: &topology.LinkSpec{Segment: "N1", CapacityMbps: 1000, LatencyUS: 10}},
		},
		Servers: topology.ServerSpec{Count: 1, NIC: topology.LinkSpec{Segment: "N5", CapacityMbps: 1000, LatencyUS: 10}},
	}
}

// step is a console mark of a boot, in boot order, as a column of the table.
type step struct{ event, column string }

func steps() []step {
	return []step{
		{"serial_station_ip", "firmware start+DHCP"},
		{"serial_ipxe", "ipxe.efi fetched+started"},
		{"serial_script", "iPXE DHCP+script"},
		{"serial_init", "kernel+initrd+boot"},
		{"serial_report", "/init to report"},
	}
}

func run(bootctl string, rounds int, ways []string, accel, stateDir string) error {
	for _, w := range ways {
		if !slices.Contains([]string{"uefi-pxe", "uefi-http", "dnsmasq-http"}, w) {
			return fmt.Errorf("-ways: %q is not one of uefi-pxe, uefi-http, dnsmasq-http", w)
		}
	}
	if bootctl == "" {
		return fmt.Errorf("-bootctl: the bootctl binary is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds*len(ways))*3*time.Minute+2*time.Minute)
	defer cancel()
	log := zap.NewNop()
	if stateDir == "" {
		d, err := os.MkdirTemp("", "bf-httpboot")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		stateDir = d
	}
	// Two clusters, each one node and one server: bootctl serve in one, dnsmasq and busybox
	// httpd in the other.
	bf, err := testcluster.Up(ctx, testcluster.Spec{Name: "hbbf", Machine: machine("hbbf"), Scale: 1, StateDir: stateDir}, log)
	if err != nil {
		return err
	}
	defer bf.Down(context.Background())
	if err := bf.StartQEMUServers(ctx, testcluster.ServerOptions{Bootctl: bootctl, Mapping: "bcda", Files: testcluster.BootFiles{NBP: images.DebianIPXEDir + "/undionly.kpxe"}}, testcluster.VMImage{}); err != nil {
		return err
	}
	dm, err := testcluster.Up(ctx, testcluster.Spec{Name: "hbdm", Machine: machine("hbdm"), Scale: 1, StateDir: stateDir}, log)
	if err != nil {
		return err
	}
	defer dm.Down(context.Background())
	if slices.Contains(ways, "dnsmasq-http") {
		if err := startDnsmasq(ctx, dm, filepath.Join(stateDir, "static")); err != nil {
			return err
		}
	}

	// Settled once per cluster; a VM that KVM fails falls back to TCG (VMResult.Accel says).
	acc, why, err := bf.Accel(ctx, accel, log)
	if err != nil {
		return err
	}
	load0 := loadAvg()
	results, err := boots(ctx, bf, dm, rounds, ways, accel, log)
	if err != nil {
		return err
	}
	printTable(ways, results, acc, why, load0)
	return nil
}

// boots boots one VM per way and round, rounds outermost, so that the ways share the host's load.
func boots(ctx context.Context, bf, dm *testcluster.Cluster, rounds int, ways []string, accel string, log *zap.Logger) (map[string][]testcluster.VMResult, error) {
	results := map[string][]testcluster.VMResult{}
	for r := 0; r < rounds; r++ {
		for _, w := range ways {
			c, fw := bf, w
			if w == "dnsmasq-http" {
				c, fw = dm, "uefi-http"
			}
			rs, err := testcluster.BootVMs(ctx, c, 1, testcluster.QEMUOptions{Accel: accel, Firmware: fw, Log: log, Timeout: 150 * time.Second})
			// Without bootctl serve nobody records the health report on the server side, so the
			// VM's exit after its console says "sent=yes" is the end of a dnsmasq boot.
			if len(rs) == 1 && rs[0].Events["serial_report"] > 0 {
				err = nil
			}
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", w, r+1, err)
			}
			results[w] = append(results[w], rs[0])
			fmt.Fprintf(os.Stderr, "%s round %d: report sent %.2f s after QEMU start\n", w, r+1, rs[0].Events["serial_report"])
		}
	}
	return results, nil
}

func printTable(ways []string, results map[string][]testcluster.VMResult, acc, why, load0 string) {
	fmt.Printf("UEFI network boot of one VM (OVMF), %s (%s); %d CPUs; load average %s at the start, %s at the end\n",
		acc, why, numCPU(), load0, loadAvg())
	fmt.Printf("seconds from QEMU start; steps are the median over the rounds, between console lines\n\n")
	fmt.Printf("| way | rounds | report sent s (median) | min | max |")
	for _, s := range steps() {
		fmt.Printf(" %s |", s.column)
	}
	fmt.Printf("\n|---|---|---|---|---|%s\n", strings.Repeat("---|", len(steps())))
	for _, w := range ways {
		printRow(w, results[w])
	}
	for _, w := range ways {
		for _, r := range results[w] {
			if r.NBP != "" {
				fmt.Printf("%s: first file %s\n", w, r.NBP)
				break
			}
		}
	}
}

// printRow prints one way's line: the total's median, min and max, and each step's median.
func printRow(w string, rs []testcluster.VMResult) {
	var total []float64
	for _, r := range rs {
		total = append(total, r.Events["serial_report"])
	}
	sort.Float64s(total)
	fmt.Printf("| %s | %d | %.2f | %.2f | %.2f |", w, len(rs), median(total), total[0], total[len(total)-1])
	prev := ""
	for _, s := range steps() {
		var d []float64
		for _, r := range rs {
			to, ok := r.Events[s.event]
			from, okf := r.Events[prev]
			if prev == "" {
				from, okf = 0, true
			}
			if ok && okf {
				d = append(d, to-from)
			}
		}
		if len(d) == 0 {
			fmt.Printf(" - |")
		} else {
			sort.Float64s(d)
			fmt.Printf(" %.2f |", median(d))
		}
		prev = s.event
	}
	fmt.Println()
}

func median(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func numCPU() int {
	out, err := exec.Command("nproc").Output()
	if err != nil {
		return 0
	}
	var n int
	fmt.Sscan(string(out), &n)
	return n
}
