package testcluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/nodestate"
	"go.uber.org/zap"
)

// QEMUOptions configure BootVMs. Zero values take the defaults named on the fields.
type QEMUOptions struct {
	// QEMU is the emulator binary. Default qemu-system-x86_64.
	QEMU string
	// Accel is kvm, tcg, auto or "" (AccelVar from the environment, else auto): see ResolveAccel.
	// The cluster settles it once (the probe takes seconds) and remembers it. Under auto, a VM that
	// KVM fails anyway (QEMU's "KVM internal error", or a console silent for kvmSilentLimit) is
	// started again under TCG with a warning, and so are the cluster's later VMs; kvm insists, and
	// such a VM fails with the reason.
	Accel string
	// Firmware is bios (SeaBIOS, the default), uefi (OVMF; Debian package ovmf, with iPXE's EFI
	// driver from the NIC's option ROM booting the NIC), uefi-pxe (OVMF with no option ROM: its
	// own virtio-net driver and PXE client do DHCP and fetch ipxe.efi over TFTP, as UEFI servers
	// without iPXE in their NIC do) or uefi-http (OVMF with no option ROM and its PXE client
	// switched off: its HTTP boot client does DHCP as "HTTPClient" and fetches ipxe.efi from the
	// URL in the answer, with no TFTP at all).
	Firmware string
	// ROM is the NIC's iPXE option ROM. Default /usr/lib/ipxe/qemu/pxe-virtio.rom for bios,
	// efi-virtio.rom (iPXE's EFI driver) for uefi, both from ipxe-qemu; none for uefi-pxe.
	ROM string
	// OVMFCode and OVMFVars are the UEFI firmware and its variable store template (copied per
	// VM). Defaults: Debian's /usr/share/OVMF/OVMF_CODE_4M.fd and OVMF_VARS_4M.fd.
	OVMFCode, OVMFVars string
	// MemoryMB is each VM's memory. Default 256.
	MemoryMB int
	// Timeout bounds the whole batch, from the first QEMU start. Default 120 s.
	Timeout time.Duration
	// WaitBanner lets iPXE wait out its "Press Ctrl-B for the iPXE command line" banner (2 s in
	// Debian's build) instead of answering it with a key on the serial console, which SeaBIOS's
	// serial console passes to iPXE as a key press.
	WaitBanner bool
	// Linger keeps the VMs running this long after the last one finished, so that a test sees in
	// the serial logs what the booted system does after its health report (an imported image's
	// own init starting). Zero: they are stopped at once.
	Linger time.Duration
	// LingerUntil, when set, ends Linger early once it holds for every VM: it is given the node's
	// name and its serial log so far, so that a test waiting for the booted system to print
	// something waits only until it has.
	LingerUntil func(node, serial string) bool
	// Log receives progress; nil: the cluster's logger.
	Log *zap.Logger
	// Progress, when set, is told how many VMs have finished (healthy, failed or stopped) of all,
	// every 100 ms while BootVMs waits: for a progress bar, as a batch of VMs takes tens of seconds.
	Progress func(done, total int)

	// detect stands in for DetectAccel (tests); nil: DetectAccel.
	detect func() (accel, reason string)
	// accelForced is set by prepareVMs when KVM was asked for by name: no fallback to TCG.
	accelForced bool
	// accelKey is Accel as asked for (AccelVar read), under which the cluster keeps its choice.
	accelKey string
}

// uefi says whether the VM boots OVMF.
func (o QEMUOptions) uefi() bool {
	return o.Firmware == "uefi" || o.Firmware == "uefi-pxe" || o.Firmware == "uefi-http"
}

// Firmwares returns the values of QEMUOptions.Firmware.
func Firmwares() []string { return []string{"bios", "uefi", "uefi-pxe", "uefi-http"} }

// ovmfNoPXE are the fw_cfg knobs with which OVMF's PXE driver (NetworkPkg's UefiPxeBcDxe, read
// by OvmfPkg's PxeBcPcdProducerLib) binds to no NIC: the NIC then offers OVMF's boot manager only
// its HTTP boot options ("UEFI HTTPv4", then "UEFI HTTPv6"), so HTTP boot over IPv4 is the first
// boot attempt, instead of the third after PXE over IPv4 and over IPv6 have each waited out their
// DHCP. The knobs exist since edk2-stable202008 (Debian 12's ovmf is 2022.11).
func ovmfNoPXE() []string {
	return []string{
		"-fw_cfg", "name=opt/org.tianocore/IPv4PXESupport,string=no",
		"-fw_cfg", "name=opt/org.tianocore/IPv6PXESupport,string=no",
	}
}

// Debian's iPXE option ROMs for virtio-net (package ipxe-qemu): BIOS only, and BIOS plus EFI.
const (
	DefaultIPXEROM    = "/usr/lib/ipxe/qemu/pxe-virtio.rom"
	DefaultIPXEEFIROM = "/usr/lib/ipxe/qemu/efi-virtio.rom"
)

func (o *QEMUOptions) defaults(c *Cluster) {
	if o.QEMU == "" {
		o.QEMU = "qemu-system-x86_64"
	}
	if o.Firmware == "" {
		o.Firmware = "bios"
	}
	if o.ROM == "" {
		switch o.Firmware {
		case "bios":
			o.ROM = DefaultIPXEROM
		case "uefi":
			o.ROM = DefaultIPXEEFIROM
		}
	}
	if o.OVMFCode == "" {
		o.OVMFCode = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	}
	if o.OVMFVars == "" {
		o.OVMFVars = "/usr/share/OVMF/OVMF_VARS_4M.fd"
	}
	if o.MemoryMB == 0 {
		o.MemoryMB = 256
	}
	if o.Timeout == 0 {
		o.Timeout = 120 * time.Second
	}
	if o.Log == nil {
		o.Log = c.log
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
}

// CheckQEMUHost reports what the qemu kind is missing on this host, naming the Debian packages.
func CheckQEMUHost(opt QEMUOptions) error {
	var missing []string
	opt.defaults(&Cluster{})
	if opt.Firmware != "bios" && !opt.uefi() {
		return fmt.Errorf("qemu cluster: firmware %q: want one of %s", opt.Firmware, strings.Join(Firmwares(), ", "))
	}
	if _, err := exec.LookPath(opt.QEMU); err != nil {
		missing = append(missing, opt.QEMU+" (qemu-system-x86)")
	}
	if _, err := os.Stat(opt.ROM); opt.ROM != "" && err != nil {
		missing = append(missing, opt.ROM+" (ipxe-qemu)")
	}
	if opt.uefi() {
		for _, f := range []string{opt.OVMFCode, opt.OVMFVars} {
			if _, err := os.Stat(f); err != nil {
				missing = append(missing, f+" (ovmf)")
			}
		}
	}
	if _, err := FindKernel("", ""); err != nil {
		missing = append(missing, "a kernel with modules (linux-image-amd64)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		missing = append(missing, "/dev/net/tun (tun module)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("qemu cluster: missing %s", strings.Join(missing, ", "))
	}
	return nil
}

// VMResult is one VM's boot. Events are seconds from the VM's QEMU start: server states
// (dhcp_discover, dhcp_offered, dhcp_bound, script, kernel, initrd, booted, healthy, failed, from
// the boot server's state timestamps) and console marks (serial_ipxe, serial_script,
// serial_init, serial_modules, serial_dhcp, serial_report, qemu_exit, from the serial log).
type VMResult struct {
	Node    string             `json:"node"`
	MAC     string             `json:"mac"`
	Server  string             `json:"server,omitempty"`
	Accel   string             `json:"accel"`
	Started time.Time          `json:"started"`
	Events  map[string]float64 `json:"events"`
	// GuestUptime maps console marks of /init to the guest kernel's uptime then.
	GuestUptime map[string]float64 `json:"guest_uptime,omitempty"`
	// NBP is the server's account of the network boot program's transfer, when the firmware
	// fetched one: "tftp ipxe.efi: ok (...)" with uefi-pxe, "http ipxe.efi" with uefi-http (the
	// BIOS and uefi iPXE ROMs fetch none; their first file is the iPXE script).
	NBP string `json:"nbp,omitempty"`
	// Seconds is the time from QEMU start to the server's healthy (or failed) state.
	Seconds   float64 `json:"seconds"`
	Health    string  `json:"health,omitempty"`
	SerialLog string  `json:"serial_log"`
	// KVMFault, when set, is why KVM failed this VM's first start; it was started again under TCG
	// (Accel), and the first start's console is in SerialLog with the suffix ".kvm".
	KVMFault string `json:"kvm_fault,omitempty"`
	Err      string `json:"error,omitempty"`
}

// serverStateEvents names bootsrv's states as VMResult events.
var serverStateEvents = map[string]string{
	"discover": "dhcp_discover", "offered": "dhcp_offered", "bound": "dhcp_bound", "nbp": "script",
	"kernel": "kernel", "initrd": "initrd", "booted": "booted", "healthy": "healthy", "failed": "failed",
}

// serialMarks are the console lines that mark boot steps.
var serialMarks = []struct{ event, substr string }{
	// OVMF's PXE or HTTP boot client bound by DHCP (its ">>Start PXE over IPv4." line ends only
	// then, so it marks nothing earlier).
	{"serial_station_ip", "Station IP address is"},
	{"serial_ipxe", "iPXE"},
	{"serial_script", "bootfabric: booting"},
	{"serial_init", "init started"},
	{"serial_modules", "modules loaded"},
	{"serial_dhcp", "dhcp done"},
	{"serial_report", "health report sent=yes"},
}

var guestUptime = regexp.MustCompile(`bootfabric: \[([0-9.]+)\]`)

// qemuArgs is the emulator's command line for one VM: no default devices or user config, the
// network as the only boot device with SeaBIOS's menu off, the serial console on stdout (SeaBIOS
// copies its and iPXE's screen there when there is no VGA), and exit instead of reboot. The NIC is
// modern-only virtio (disable-legacy=on, PCI id 1af4:1041): Debian's pxe-virtio.rom declares
// 1af4:1041, and SeaBIOS runs no option ROM whose id differs from the device's (the transitional
// default, 1af4:1000), which would leave nothing to boot from.
//
// Under UEFI (q35 with OVMF in pflash, the variable store a per-VM copy at vars), OVMF loads the
// EFI driver of efi-virtio.rom, and iPXE's EFI build boots the NIC ahead of OVMF's own PXE; with
// uefi-pxe the NIC has no ROM (romfile=), so OVMF's own PXE client boots it; with uefi-http it
// has none either and OVMF's PXE driver is switched off (ovmfNoPXE), so its HTTP boot client does.
func qemuArgs(o QEMUOptions, mac, tap, vars string) []string {
	args := []string{"-nodefaults", "-no-user-config", "-nographic"}
	nic := "virtio-net-pci,netdev=n0,mac=" + mac + ",disable-legacy=on,romfile=" + o.ROM
	if o.uefi() {
		args = append(args, "-machine", "q35,accel="+o.Accel,
			"-drive", "if=pflash,format=raw,unit=0,readonly=on,file="+o.OVMFCode,
			"-drive", "if=pflash,format=raw,unit=1,file="+vars)
		nic = "virtio-net-pci,netdev=n0,mac=" + mac + ",romfile=" + o.ROM + ",bootindex=1"
		if o.Firmware == "uefi-http" {
			args = append(args, ovmfNoPXE()...)
		}
	} else {
		args = append(args, "-machine", "pc,accel="+o.Accel, "-boot", "order=n,menu=off,strict=on")
	}
	return append(args,
		"-m", strconv.Itoa(o.MemoryMB), "-smp", "1",
		"-serial", "stdio", "-monitor", "none",
		"-no-reboot",
		"-netdev", "tap,id=n0,ifname="+tap+",script=no,downscript=no",
		"-device", nic,
	)
}

// vmTap is the tap device of a node's VM.
const vmTap = "tap0"

// attachTap puts a bridge between node i's veth and a tap device in the node's namespace (once).
func (c *Cluster) attachTap(ctx context.Context, i int) error {
	n := c.Nodes[i]
	if _, err := c.run.Run(ctx, "ip", "-n", n.Namespace, "link", "show", vmTap); err == nil {
		return nil
	}
	// The node namespace only forwards; without IPv6 it sends no solicitations of its own.
	if _, err := c.run.Run(ctx, "ip", "netns", "exec", n.Namespace, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"); err != nil {
		c.log.Debug("disabling IPv6 in node namespace", zap.Error(err))
	}
	steps := [][]string{
		{"link", "add", "br0", "type", "bridge", "forward_delay", "0", "stp_state", "0", "mcast_snooping", "0"},
		{"link", "set", "eth0", "address", vethMAC(i)},
		{"link", "set", "eth0", "master", "br0"},
		{"tuntap", "add", "dev", vmTap, "mode", "tap"},
		{"link", "set", vmTap, "master", "br0"},
		{"link", "set", vmTap, "up"},
		{"link", "set", "br0", "up"},
	}
	for _, s := range steps {
		if _, err := c.run.Run(ctx, append([]string{"ip", "-n", n.Namespace}, s...)...); err != nil {
			return fmt.Errorf("node %s: attaching a tap: %w", n.Name, err)
		}
	}
	return nil
}

// vethMAC is the address node i's veth takes when its VM takes the node's MAC.
func vethMAC(i int) string {
	return fmt.Sprintf("02:bf:fe:%02x:%02x:%02x", byte(i>>16), byte(i>>8), byte(i))
}

// BootVMs boots the cluster's first n nodes as QEMU VMs at once, from boot servers started with
// StartQEMUServers, and returns each VM's timeline. (The servers tell iPXE that the boot network
// has no IPv6 router: dhcp.ipv6_ra, on by default in reservation mode.) It stops every VM
// before it returns and records their pids in the cluster state first, so Down stops them after
// an interrupt. Serial consoles are logged in the cluster directory as vm-NODE.log.
//
// Each VM's tap and its node's shaped veth share a bridge in the node's namespace, so a VM crosses
// exactly the links the netns kind measures; the veth gives its MAC up to the VM.
func BootVMs(ctx context.Context, c *Cluster, n int, opt QEMUOptions) ([]VMResult, error) {
	opt, err := c.prepareVMs(ctx, n, opt)
	if err != nil {
		return nil, err
	}
	log := opt.Log
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	clients, closeClients := serverClients(c.Servers)
	defer closeClients()
	vms := make([]*vmRun, n)
	defer c.stopVMs(vms, log)
	for i := range vms {
		vm, err := c.startVM(ctx, i, opt)
		if err != nil {
			return nil, err
		}
		vms[i] = vm
	}
	log.Info("VMs started", zap.Int("n", n), zap.String("accel", opt.Accel))
	c.watchVMs(ctx, vms, clients, opt)
	linger(ctx, vms, opt)
	return vmResults(vms, opt.Timeout)
}

// linger keeps the VMs running for opt.Linger, or until opt.LingerUntil holds for every VM's
// serial log (read every 250 ms), or ctx ends.
func linger(ctx context.Context, vms []*vmRun, opt QEMUOptions) {
	if opt.Linger <= 0 {
		return
	}
	deadline := time.NewTimer(opt.Linger)
	defer deadline.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if opt.LingerUntil != nil && serialsHold(vms, opt.LingerUntil) {
			return
		}
		select {
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// serialsHold reports whether cond holds for every VM's serial log as written so far.
func serialsHold(vms []*vmRun, cond func(node, serial string) bool) bool {
	for _, vm := range vms {
		b, err := os.ReadFile(vm.res.SerialLog)
		if err != nil || !cond(vm.res.Node, string(b)) {
			return false
		}
	}
	return true
}

// prepareVMs checks the host and the request, settles the accelerator, tells the servers the
// first n nodes reboot, and gives each a tap. It returns opt with the defaults and accelerator
// filled in.
func (c *Cluster) prepareVMs(ctx context.Context, n int, opt QEMUOptions) (QEMUOptions, error) {
	opt.defaults(c)
	if n <= 0 || n > len(c.Nodes) {
		return opt, fmt.Errorf("qemu cluster %s: %d VMs asked, the cluster has %d nodes", c.Name, n, len(c.Nodes))
	}
	if err := CheckQEMUHost(opt); err != nil {
		return opt, err
	}
	choice, err := c.settleAccel(ctx, opt)
	if err != nil {
		return opt, fmt.Errorf("qemu cluster %s: %w", c.Name, err)
	}
	opt.Log.Info("accelerator", zap.String("accel", choice.accel), zap.String("why", choice.why))
	opt.accelKey, _ = accelRequest(opt.Accel)
	opt.Accel, opt.accelForced = choice.accel, choice.forced
	first := make([]int, n)
	for i := range first {
		first[i] = i
	}
	if err := c.announceReboots(ctx, first); err != nil {
		return opt, fmt.Errorf("qemu cluster %s: %w", c.Name, err)
	}
	for i := 0; i < n; i++ {
		if err := c.attachTap(ctx, i); err != nil {
			return opt, err
		}
	}
	return opt, nil
}

// serverClients returns an HTTP client per server (by name) that connects from inside its
// namespace, and a function that closes their idle connections.
func serverClients(servers []Endpoint) (map[string]*http.Client, func()) {
	clients := map[string]*http.Client{}
	var trs []*http.Transport
	for _, s := range servers {
		tr := &http.Transport{DialContext: nsDialer(s.Namespace), MaxIdleConnsPerHost: 1}
		trs = append(trs, tr)
		clients[s.Name] = &http.Client{Timeout: 2 * time.Second, Transport: tr}
	}
	return clients, func() {
		for i := len(trs) - 1; i >= 0; i-- {
			trs[i].CloseIdleConnections()
		}
	}
}

// stopVMs stops every started VM and forgets the pids of those reaped; a VM not reaped yet keeps
// its pid recorded, and Down stops it.
func (c *Cluster) stopVMs(vms []*vmRun, log *zap.Logger) {
	for _, vm := range vms {
		if vm == nil {
			continue
		}
		vm.stop()
		select {
		case <-vm.waitDone:
			if err := c.forgetPid(vm.cmd.Process.Pid); err != nil {
				log.Warn("updating cluster state", zap.Error(err))
			}
		default:
		}
	}
}

// watchVMs polls the servers every 100 ms until every VM has ended (healthy, failed, or QEMU
// exited without a report) or ctx ends (opt.Timeout bounds it), telling opt.Progress (when not
// nil) how many have. A VM that KVM fails is started again under TCG (rescueFromKVM).
func (c *Cluster) watchVMs(ctx context.Context, vms []*vmRun, clients map[string]*http.Client, opt QEMUOptions) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for pending := len(vms); pending > 0; {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c.rescueFromKVM(ctx, vms, opt)
		c.observeVMs(ctx, vms, clients)
		pending = pendingVMs(vms)
		if opt.Progress != nil {
			opt.Progress(len(vms)-pending, len(vms))
		}
	}
}

// Accel settles the accelerator of the cluster's VMs for requested (as QEMUOptions.Accel), once:
// later calls and BootVMs reuse the answer, so the probe runs once per cluster and process.
func (c *Cluster) Accel(ctx context.Context, requested string, log *zap.Logger) (accel, why string, err error) {
	opt := QEMUOptions{Accel: requested, Log: log}
	opt.defaults(c)
	choice, err := c.settleAccel(ctx, opt)
	return choice.accel, choice.why, err
}

func (c *Cluster) settleAccel(ctx context.Context, opt QEMUOptions) (accelChoice, error) {
	key, _ := accelRequest(opt.Accel)
	if choice, ok := c.accels[key]; ok {
		return choice, nil
	}
	detect := opt.detect
	if detect == nil {
		detect = DetectAccel
	}
	choice, err := resolveAccel(ctx, opt.QEMU, opt.Accel, detect, opt.Log)
	if err != nil {
		return choice, err
	}
	if c.accels == nil {
		c.accels = map[string]accelChoice{}
	}
	c.accels[key] = choice
	return choice, nil
}

// kvmSilentLimit is how long a VM under KVM may keep its console silent before it counts as a
// guest KVM cannot run: SeaBIOS and OVMF print within a second or two under a KVM that works.
const kvmSilentLimit = 30 * time.Second

// rescueFromKVM starts again under TCG each unfinished VM that KVM failed. Nested KVM has been
// seen to run the probe guest and then fail a real one inside iPXE, where QEMU pauses it for good.
// The cluster's later VMs then start under TCG too. With KVM forced (accelForced), such a VM
// fails instead, with the reason.
func (c *Cluster) rescueFromKVM(ctx context.Context, vms []*vmRun, opt QEMUOptions) {
	for i, vm := range vms {
		if vm.finished || vm.res.Accel != "kvm" {
			continue
		}
		why := vm.kvmFault()
		if why == "" {
			continue
		}
		if opt.accelForced {
			vm.res.Err = "KVM failed the guest: " + why + " (KVM was asked for by name; auto falls back to TCG)"
			vm.finished = true
			continue
		}
		opt.Log.Warn("KVM failed a VM; starting it again under TCG", zap.String("node", vm.res.Node), zap.String("why", why))
		c.accels[opt.accelKey] = accelChoice{accel: "tcg", why: "KVM failed VM " + vm.res.Node + ": " + why}
		c.stopVMs([]*vmRun{vm}, opt.Log)
		if err := os.Rename(vm.res.SerialLog, vm.res.SerialLog+".kvm"); err != nil {
			opt.Log.Warn("keeping the KVM run's console", zap.Error(err))
		}
		if err := c.announceReboots(ctx, []int{i}); err != nil {
			opt.Log.Warn("re-arming the node's boot", zap.String("node", vm.res.Node), zap.Error(err))
		}
		tcg := opt
		tcg.Accel = "tcg"
		again, err := c.startVM(ctx, i, tcg)
		if err != nil {
			vm.res.Err = fmt.Sprintf("KVM failed the guest (%s), and starting it under TCG failed: %v", why, err)
			vm.finished = true
			continue
		}
		again.res.KVMFault = why
		vms[i] = again
	}
}

// observeVMs gives each unfinished VM every server's view of its node.
func (c *Cluster) observeVMs(ctx context.Context, vms []*vmRun, clients map[string]*http.Client) {
	for name, cl := range clients {
		nodes, err := fetchNodes(ctx, cl, c.serverAddr(c.serverIP(name)))
		if err != nil {
			continue
		}
		for _, vm := range vms {
			if vm.finished {
				continue
			}
			if nv, ok := nodes[vm.res.Node]; ok {
				vm.observe(name, nv)
			}
		}
	}
}

// pendingVMs counts the VMs not finished, after finishing those whose QEMU exited more than 3 s
// ago without a health report.
func pendingVMs(vms []*vmRun) int {
	pending := 0
	for _, vm := range vms {
		if !vm.finished && vm.exitedFor() > 3*time.Second {
			vm.res.Err = "QEMU exited without a health report"
			vm.finished = true
		}
		if !vm.finished {
			pending++
		}
	}
	return pending
}

// vmResults stops the VMs and returns their results, with an error naming the VMs that did not
// boot within timeout or reported failed.
func vmResults(vms []*vmRun, timeout time.Duration) ([]VMResult, error) {
	var failed []string
	out := make([]VMResult, len(vms))
	for i, vm := range vms {
		vm.stop()
		vm.mergeSerial()
		if !vm.finished && vm.res.Err == "" {
			vm.res.Err = fmt.Sprintf("no health report within %s", timeout)
		}
		if vm.res.Health == "failed" && vm.res.Err == "" {
			vm.res.Err = "node reported failed"
		}
		if vm.res.Err != "" {
			failed = append(failed, vm.res.Node+": "+vm.res.Err+" (serial log "+vm.res.SerialLog+")")
		}
		out[i] = vm.res
	}
	sort.Strings(failed)
	if len(failed) > 0 {
		return out, fmt.Errorf("%d of %d VMs did not boot; first: %s", len(failed), len(vms), failed[0])
	}
	return out, nil
}

func (c *Cluster) serverIP(name string) string {
	for _, s := range c.Servers {
		if s.Name == name {
			return s.IP
		}
	}
	return ""
}

// fetchNodes reads the nodes, by name, of the server at addr (host:port), through the status
// API's client.
func fetchNodes(ctx context.Context, cl *http.Client, addr string) (map[string]nodestate.NodeStatus, error) {
	res, err := (&bootapi.Client{BaseURL: "http://" + addr, HTTP: cl}).Nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]nodestate.NodeStatus, len(res.Nodes))
	for _, n := range res.Nodes {
		out[n.Name] = n
	}
	return out, nil
}

// vmRun is one running VM.
type vmRun struct {
	res      VMResult
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	finished bool
	// skipBanner: answer iPXE's banner prompt (only the serial reader uses it).
	skipBanner bool

	mu       sync.Mutex
	serial   map[string]float64 // console marks, seconds from start
	uptime   map[string]float64
	exited   time.Time
	console  bool   // the console has printed a line
	fault    string // QEMU's stderr line saying KVM failed the guest
	waitDone chan struct{}
	readers  sync.WaitGroup // the console and stderr readers
}

func (c *Cluster) startVM(ctx context.Context, i int, opt QEMUOptions) (*vmRun, error) {
	node := c.Nodes[i]
	logf, vars, err := c.vmFiles(node, opt)
	if err != nil {
		return nil, err
	}
	vm, stdout, err := newVMRun(node, opt, logf.Name(), vars)
	if err != nil {
		logf.Close()
		return nil, err
	}
	stderr, err := vm.cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	fmt.Fprintf(logf, "# %s\n", strings.Join(vm.cmd.Args, " "))
	vm.res.Started = time.Now()
	if err := vm.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("node %s: starting QEMU: %w", node.Name, err)
	}
	// `ip netns exec` execs QEMU, so this pid is QEMU's.
	if err := c.AddPid(vm.cmd.Process.Pid); err != nil {
		_ = vm.cmd.Process.Kill()
		logf.Close()
		return nil, err
	}
	log := &lockedWriter{w: logf}
	vm.readers.Add(2)
	go vm.readSerial(stdout, log)
	go vm.readStderr(stderr, log)
	go vm.reap(logf)
	return vm, nil
}

// lockedWriter serialises whole writes: the console and stderr readers share the VM's log.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// vmFiles creates the VM's serial log, CLUSTER-DIR/vm-NODE.log, and under UEFI its copy of the
// variable store, vm-NODE.vars.fd (vars, empty under BIOS).
func (c *Cluster) vmFiles(node Endpoint, opt QEMUOptions) (logf *os.File, vars string, err error) {
	// The directory exists once servers were started; a cluster whose servers are someone
	// else's (bench/httpboot's dnsmasq) may not have it yet.
	if err := os.MkdirAll(c.dir(), 0o755); err != nil {
		return nil, "", err
	}
	logf, err = os.Create(filepath.Join(c.dir(), "vm-"+node.Name+".log"))
	if err != nil {
		return nil, "", err
	}
	if opt.uefi() {
		vars = filepath.Join(c.dir(), "vm-"+node.Name+".vars.fd")
		if err := copyFile(opt.OVMFVars, vars); err != nil {
			logf.Close()
			return nil, "", fmt.Errorf("node %s: UEFI variable store: %w", node.Name, err)
		}
	}
	return logf, vars, nil
}

// newVMRun prepares node's QEMU in its namespace, not started, with its serial console on the
// returned pipe and its keyboard on vm.stdin.
func newVMRun(node Endpoint, opt QEMUOptions, logPath, vars string) (*vmRun, io.Reader, error) {
	argv := append([]string{"netns", "exec", node.Namespace, opt.QEMU}, qemuArgs(opt, node.MAC, vmTap, vars)...)
	cmd := exec.Command("ip", argv...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	return &vmRun{
		res: VMResult{Node: node.Name, MAC: node.MAC, Accel: opt.Accel, Events: map[string]float64{}, SerialLog: logPath},
		cmd: cmd, stdin: stdin, skipBanner: !opt.WaitBanner,
		serial: map[string]float64{}, uptime: map[string]float64{},
		waitDone: make(chan struct{}),
	}, stdout, nil
}

// reap waits for QEMU once its console and stderr are read to the end, closes the log, and
// records when QEMU exited.
func (vm *vmRun) reap(logf *os.File) {
	vm.readers.Wait()
	logf.Close()
	_ = vm.cmd.Wait()
	vm.mu.Lock()
	vm.exited = time.Now()
	vm.serial["qemu_exit"] = time.Since(vm.res.Started).Seconds()
	vm.mu.Unlock()
	close(vm.waitDone)
}

// ansi matches terminal control sequences SeaBIOS and iPXE print.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?=]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1bc`)

// readStderr copies QEMU's stderr to the log as readSerial does, and records the first line that
// says KVM failed the guest.
func (vm *vmRun) readStderr(r io.Reader, w io.Writer) {
	defer vm.readers.Done()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		fmt.Fprintf(w, "[%7.3f] %s\n", time.Since(vm.res.Started).Seconds(), line)
		if kvmFault(line) {
			vm.mu.Lock()
			if vm.fault == "" {
				vm.fault = line
			}
			vm.mu.Unlock()
		}
	}
}

// kvmFault says why KVM failed the VM, or "" while nothing says so: QEMU's own word on stderr, or
// a console still silent kvmSilentLimit after the start.
func (vm *vmRun) kvmFault() string {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	switch {
	case vm.fault != "":
		return "QEMU says " + strconv.Quote(vm.fault)
	case !vm.console && time.Since(vm.res.Started) > kvmSilentLimit:
		return fmt.Sprintf("its console stayed silent for %v", kvmSilentLimit)
	}
	return ""
}

// readSerial copies the console to the log, each line prefixed with the host time since QEMU
// start, and records the console marks.
func (vm *vmRun) readSerial(r io.Reader, w io.Writer) {
	defer vm.readers.Done()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		at := time.Since(vm.res.Started).Seconds()
		line := strings.TrimSpace(ansi.ReplaceAllString(strings.ReplaceAll(sc.Text(), "\r", " "), ""))
		if line == "" {
			continue
		}
		fmt.Fprintf(w, "[%7.3f] %s\n", at, line)
		// iPXE prints its features just before the banner prompt; any key but Ctrl-B ends the
		// prompt at once, and iPXE goes on to configure the network.
		if vm.skipBanner && strings.HasPrefix(line, "Features:") {
			vm.skipBanner = false
			_, _ = io.WriteString(vm.stdin, "\r")
		}
		vm.mu.Lock()
		vm.console = true
		for _, m := range serialMarks {
			if _, seen := vm.serial[m.event]; !seen && strings.Contains(line, m.substr) {
				vm.serial[m.event] = at
				if g := guestUptime.FindStringSubmatch(line); g != nil {
					if v, err := strconv.ParseFloat(g[1], 64); err == nil {
						vm.uptime[m.event] = v
					}
				}
			}
		}
		vm.mu.Unlock()
	}
}

// observe takes the server's view of the node: state times of this boot and the health report.
func (vm *vmRun) observe(server string, nv nodestate.NodeStatus) {
	for st, t := range nv.Times {
		if ev, ok := serverStateEvents[st.String()]; ok && !t.Before(vm.res.Started) {
			vm.res.Events[ev] = t.Sub(vm.res.Started).Seconds()
			vm.res.Server = server
		}
	}
	for _, h := range nv.History {
		if h.To == nodestate.NBP && !h.At.Before(vm.res.Started) && (strings.HasPrefix(h.Detail, "tftp ") || strings.HasPrefix(h.Detail, "http ")) {
			vm.res.NBP = h.Detail
		}
	}
	if nv.Health != nil && !nv.Health.At.Before(vm.res.Started) && (nv.State == nodestate.Healthy || nv.State == nodestate.Failed) {
		vm.res.Health = nv.Health.Status
		vm.res.Seconds = nv.Health.At.Sub(vm.res.Started).Seconds()
		vm.finished = true
	}
}

// exitedFor is how long ago QEMU exited (0 while it runs).
func (vm *vmRun) exitedFor() time.Duration {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if vm.exited.IsZero() {
		return 0
	}
	return time.Since(vm.exited)
}

// stop ends QEMU (a booted VM has powered off already) and waits for it.
func (vm *vmRun) stop() {
	select {
	case <-vm.waitDone:
		return
	default:
	}
	// A VM that reported is powering off: give it a moment, so its console log ends cleanly.
	select {
	case <-vm.waitDone:
		return
	case <-time.After(time.Second):
	}
	_ = vm.stdin.Close()
	stopPid(vm.cmd.Process.Pid)
	select {
	case <-vm.waitDone:
	case <-time.After(5 * time.Second):
	}
}

// forgetPid removes a reaped process from the cluster state, so that Down never signals a pid
// the system has since given to another process.
func (c *Cluster) forgetPid(pid int) error {
	kept := c.Pids[:0]
	for _, p := range c.Pids {
		if p != pid {
			kept = append(kept, p)
		}
	}
	c.Pids = kept
	return c.save()
}

func (vm *vmRun) mergeSerial() {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	for k, v := range vm.serial {
		vm.res.Events[k] = v
	}
	if len(vm.uptime) > 0 {
		vm.res.GuestUptime = map[string]float64{}
		for k, v := range vm.uptime {
			vm.res.GuestUptime[k] = v
		}
	}
}

// Step is one step of a VM boot and its duration.
type Step struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// Breakdown returns the steps of one VM's boot as (step, seconds) in boot order: QEMU start to
// DHCP bound (firmware, iPXE and its DHCP), bound to script fetched, script to kernel loaded,
// kernel to initrd loaded, initrd to /init started (kernel boot), init to health report.
func Breakdown(r VMResult) []Step {
	steps := []struct{ name, from, to string }{
		{"firmware+iPXE DHCP", "", "dhcp_bound"},
		{"iPXE script", "dhcp_bound", "script"},
		{"kernel download", "script", "kernel"},
		{"initrd download", "kernel", "initrd"},
		{"kernel boot to /init", "initrd", "serial_init"},
		{"/init to health", "serial_init", "healthy"},
	}
	var out []Step
	for _, s := range steps {
		from := 0.0
		if s.from != "" {
			v, ok := r.Events[s.from]
			if !ok {
				continue
			}
			from = v
		}
		to, ok := r.Events[s.to]
		if !ok {
			continue
		}
		out = append(out, Step{s.name, to - from})
	}
	return out
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
