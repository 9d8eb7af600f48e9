package testcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Host facts the qemu kind depends on: which accelerator works, where Debian's kernel and its
// modules are, and how to reach a namespace's network from this process.

// AccelVar is the environment variable that forces the accelerator of test-cluster VMs: tcg
// (never try KVM) or kvm (use KVM, and fail at once when a probe guest cannot run under it).
const AccelVar = "BOOTFABRIC_ACCEL"

// DetectAccel returns "kvm" when /dev/kvm is present and can create a VM, else "tcg" with the
// reason KVM is not used. Creating a VM is not running one: under nested, software-assisted
// virtualisation KVM_CREATE_VM succeeds and the guest then dies in its firmware, which only
// ProbeKVM finds out.
func DetectAccel() (accel, reason string) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "tcg", fmt.Sprintf("no usable /dev/kvm (%v)", err)
	}
	defer f.Close()
	const kvmGetAPIVersion, kvmCreateVM = 0xAE00, 0xAE01
	v, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), kvmGetAPIVersion, 0)
	if errno != 0 || v != 12 {
		return "tcg", fmt.Sprintf("/dev/kvm: KVM_GET_API_VERSION = %d (%v), want 12", v, errno)
	}
	vm, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), kvmCreateVM, 0)
	if errno != 0 {
		return "tcg", fmt.Sprintf("/dev/kvm: KVM_CREATE_VM: %v", errno)
	}
	unix.Close(int(vm))
	return "kvm", ""
}

// ResolveAccel decides the accelerator of test-cluster VMs. requested is kvm, tcg, auto or ""
// (take AccelVar from the environment, else auto). auto uses KVM only when DetectAccel finds it and
// ProbeKVM then runs a real guest through its firmware up to its first DHCP request; otherwise TCG,
// with the reason. kvm (asked for, or forced through AccelVar) is an error when the probe fails, so
// that a forced choice never turns into a 10-minute hang inside a guest.
func ResolveAccel(ctx context.Context, qemu, requested string, log *zap.Logger) (accel, reason string, err error) {
	c, err := resolveAccel(ctx, qemu, requested, DetectAccel, log)
	return c.accel, c.why, err
}

// accelChoice is a settled accelerator: which one, why, and whether KVM was asked for by name.
// A forced KVM has no fallback: a VM that KVM fails then fails, saying so.
type accelChoice struct {
	accel, why string
	forced     bool
}

// accelRequest is requested as ResolveAccel takes it, with AccelVar read when it is empty, and
// the name of where it came from (for messages).
func accelRequest(requested string) (value, source string) {
	if requested == "" {
		return os.Getenv(AccelVar), AccelVar
	}
	return requested, "--accel"
}

func resolveAccel(ctx context.Context, qemu, requested string, detect func() (string, string), log *zap.Logger) (accelChoice, error) {
	requested, src := accelRequest(requested)
	switch requested {
	case "tcg":
		return accelChoice{accel: "tcg", why: src + "=tcg"}, nil
	case "", "auto":
		a, why := detect()
		if a != "kvm" {
			return accelChoice{accel: "tcg", why: why}, nil
		}
		if err := ProbeKVM(ctx, qemu, DefaultIPXEROM); err != nil {
			if log != nil {
				log.Warn("KVM cannot run a guest here; using TCG", zap.Error(err))
			}
			return accelChoice{accel: "tcg", why: err.Error()}, nil
		}
		return accelChoice{accel: "kvm", why: "a probe guest ran under KVM up to its first DHCP request"}, nil
	case "kvm":
		if a, why := detect(); a != "kvm" {
			return accelChoice{}, fmt.Errorf("%s=kvm: %s (use tcg, or auto to choose)", src, why)
		}
		if err := ProbeKVM(ctx, qemu, DefaultIPXEROM); err != nil {
			return accelChoice{}, fmt.Errorf("%s=kvm: %w (use tcg, or auto to choose)", src, err)
		}
		return accelChoice{accel: "kvm", why: src + "=kvm, and a probe guest ran under KVM", forced: true}, nil
	}
	return accelChoice{}, fmt.Errorf("%s: %q is not one of kvm, tcg, auto", src, requested)
}

// probeTimeout bounds ProbeKVM. Under KVM the probe guest asks for DHCP within about a second;
// under TCG within about 4 s here. A KVM that is slower than that is worth less than TCG.
const probeTimeout = 20 * time.Second

// probeReady is what iPXE prints on the serial console when it sends its first DHCP request: the
// probe guest has then run SeaBIOS, the option ROM's set-up and iPXE's own code, everything a
// test-cluster VM runs before the boot server sees it. Nested KVM has been seen to run a guest up to
// "iPXE initialising devices" and fail it just after.
const probeReady = "Configuring (net0"

// ProbeKVM boots a real tiny guest under KVM the way test-cluster VMs boot (SeaBIOS, then the iPXE
// option ROM rom of a virtio NIC on QEMU's own isolated user network, which sends nothing off the
// host) and reports whether iPXE gets as far as its first DHCP request. It returns nil then, and an
// error naming what happened otherwise: QEMU's "KVM internal error", an exit, or silence until
// probeTimeout.
func ProbeKVM(ctx context.Context, qemu, rom string) error {
	if qemu == "" {
		qemu = "qemu-system-x86_64"
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, qemu,
		"-nodefaults", "-no-user-config", "-nographic",
		"-machine", "pc,accel=kvm", "-boot", "order=n,menu=off,strict=on",
		"-m", "64", "-smp", "1", "-serial", "stdio", "-monitor", "none", "-no-reboot",
		"-netdev", "user,id=n0,restrict=on",
		"-device", "virtio-net-pci,netdev=n0,disable-legacy=on,romfile="+rom)
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("KVM probe: %w", err)
	}
	keys, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("KVM probe: %w", err)
	}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("KVM probe: starting %s: %w", qemu, err)
	}
	ok := consoleShows(out, probeReady, keys)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if ok {
		return nil
	}
	return probeFailure(qemu, stderr.String(), ctx.Err() != nil)
}

// consoleShows reads the serial console r until want appears in it (true) or r ends (false). It
// looks in a sliding window of the output, so want may span reads. When iPXE prints its features
// it answers the banner prompt that follows with a key on keys, as BootVMs does, so that iPXE goes
// on at once instead of after 2 s.
func consoleShows(r io.Reader, want string, keys io.Writer) bool {
	buf := make([]byte, 4096)
	var tail []byte
	answered := false
	for {
		n, err := r.Read(buf)
		tail = append(tail, buf[:n]...)
		if strings.Contains(string(tail), want) {
			return true
		}
		if !answered && strings.Contains(string(tail), "Features:") {
			answered = true
			_, _ = io.WriteString(keys, "\r")
		}
		if len(tail) > 256 {
			tail = tail[len(tail)-256:]
		}
		if err != nil {
			return false
		}
	}
}

// kvmFault says whether a line QEMU wrote on its stderr is KVM failing the guest: QEMU then
// pauses the VM for good instead of exiting.
func kvmFault(line string) bool {
	return strings.Contains(line, "KVM internal error") || strings.Contains(line, "emulation failure")
}

// probeFailure says why the probe guest did not reach iPXE's first DHCP request, from QEMU's
// stderr and whether the probe timed out.
func probeFailure(qemu, stderr string, timedOut bool) error {
	msg := strings.TrimSpace(stderr)
	for _, l := range strings.Split(msg, "\n") {
		if kvmFault(l) {
			return fmt.Errorf("KVM cannot run a guest here (nested virtualisation?): QEMU says %q", strings.TrimSpace(l))
		}
	}
	if timedOut {
		return fmt.Errorf("KVM cannot run a guest here (nested virtualisation?): the probe guest did not reach iPXE's first DHCP request within %v", probeTimeout)
	}
	if msg == "" {
		msg = "no message"
	}
	return fmt.Errorf("KVM probe: %s exited before iPXE asked for DHCP: %s", qemu, msg)
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// Kernel is an installed kernel image and its modules.
type Kernel struct {
	Release    string `json:"release"`
	Image      string `json:"image"`
	ModulesDir string `json:"modules_dir"`
}

// FindKernel returns the newest kernel in bootDir (vmlinuz-RELEASE, default /boot) whose modules
// are installed under modulesRoot/RELEASE (default /lib/modules).
func FindKernel(bootDir, modulesRoot string) (Kernel, error) {
	if bootDir == "" {
		bootDir = "/boot"
	}
	if modulesRoot == "" {
		modulesRoot = "/lib/modules"
	}
	imgs, _ := filepath.Glob(filepath.Join(bootDir, "vmlinuz-*"))
	var found []Kernel
	for _, img := range imgs {
		rel := strings.TrimPrefix(filepath.Base(img), "vmlinuz-")
		dir := filepath.Join(modulesRoot, rel)
		if _, err := os.Stat(filepath.Join(dir, "modules.dep")); err == nil {
			found = append(found, Kernel{Release: rel, Image: img, ModulesDir: dir})
		}
	}
	if len(found) == 0 {
		return Kernel{}, fmt.Errorf("no kernel in %s with modules in %s (install the Debian package linux-image-amd64)", bootDir, modulesRoot)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Release < found[j].Release })
	return found[len(found)-1], nil
}

// DefaultVMModules are the modules a VM's initramfs loads to reach the network: Debian builds the
// virtio PCI transport and virtio-net as modules.
var DefaultVMModules = []string{"virtio_pci", "virtio_net"}

// ModuleFiles returns the module files that loading names needs, dependencies first, read from
// modulesDir's modules.dep; built-in modules (modules.builtin) need no file.
func ModuleFiles(modulesDir string, names []string) ([]string, error) {
	dep, err := os.Open(filepath.Join(modulesDir, "modules.dep"))
	if err != nil {
		return nil, fmt.Errorf("kernel modules: %w", err)
	}
	defer dep.Close()
	builtin := map[string]bool{}
	if b, err := os.Open(filepath.Join(modulesDir, "modules.builtin")); err == nil {
		sc := bufio.NewScanner(b)
		for sc.Scan() {
			builtin[moduleName(sc.Text())] = true
		}
		b.Close()
	}
	rel, err := moduleOrder(dep, builtin, names)
	if err != nil {
		return nil, fmt.Errorf("kernel modules in %s: %w", modulesDir, err)
	}
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = filepath.Join(modulesDir, r)
	}
	return out, nil
}

// moduleName turns "kernel/drivers/net/virtio_net.ko" or "virtio-net" into "virtio_net".
func moduleName(s string) string {
	s = filepath.Base(strings.TrimSpace(s))
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		s = strings.TrimSuffix(s, ext)
	}
	return strings.ReplaceAll(strings.TrimSuffix(s, ".ko"), "-", "_")
}

// moduleOrder resolves names against a modules.dep text: the relative paths of every module
// needed, each after the modules it depends on, each once.
func moduleOrder(dep io.Reader, builtin map[string]bool, names []string) ([]string, error) {
	paths, deps, err := parseModulesDep(dep)
	if err != nil {
		return nil, err
	}
	o := &loadOrder{paths: paths, deps: deps, builtin: builtin, done: map[string]bool{}, visiting: map[string]bool{}}
	for _, n := range names {
		if err := o.visit(moduleName(n), ""); err != nil {
			return nil, err
		}
	}
	return o.out, nil
}

// parseModulesDep reads a modules.dep text: each module's relative path, and the modules it
// depends on, as listed (nearest last).
func parseModulesDep(dep io.Reader) (paths map[string]string, deps map[string][]string, err error) {
	paths = map[string]string{}
	deps = map[string][]string{}
	sc := bufio.NewScanner(dep)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		path, rest, ok := strings.Cut(text, ":")
		if !ok {
			return nil, nil, fmt.Errorf("modules.dep line %d: no colon in %q", line, text)
		}
		m := moduleName(path)
		paths[m] = path
		for _, d := range strings.Fields(rest) {
			deps[m] = append(deps[m], moduleName(d))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("modules.dep: %w", err)
	}
	return paths, deps, nil
}

// loadOrder is a depth-first walk of modules.dep that lists each module's path after those of its
// dependencies, each once.
type loadOrder struct {
	paths    map[string]string
	deps     map[string][]string
	builtin  map[string]bool
	done     map[string]bool
	visiting map[string]bool // on the walk's current path: seen again, a cycle
	out      []string
}

// visit adds module m (needed by from; "" when asked for) and its dependencies.
func (o *loadOrder) visit(m, from string) error {
	if o.done[m] {
		return nil
	}
	if _, ok := o.paths[m]; !ok {
		if o.builtin[m] {
			o.done[m] = true
			return nil
		}
		if from != "" {
			return fmt.Errorf("module %s (needed by %s) is not in modules.dep", m, from)
		}
		return fmt.Errorf("module %s is neither in modules.dep nor built in", m)
	}
	if o.visiting[m] {
		return fmt.Errorf("modules.dep: dependency cycle through %s", m)
	}
	o.visiting[m] = true
	// modules.dep lists dependencies nearest last (modprobe loads the list backwards).
	ds := o.deps[m]
	for i := len(ds) - 1; i >= 0; i-- {
		if err := o.visit(ds[i], m); err != nil {
			return err
		}
	}
	o.visiting[m] = false
	o.done[m] = true
	o.out = append(o.out, o.paths[m])
	return nil
}

// inNetns runs fn on an OS thread switched into network namespace ns (a name under /run/netns).
// Sockets fn creates stay in that namespace after the thread switches back.
func inNetns(ns string, fn func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: %w", ns, err)
	}
	defer orig.Close()
	target, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: %w", ns, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: setns: %w", ns, err)
	}
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// Leave the thread locked: the runtime then ends it with this goroutine rather than run
		// other goroutines in the wrong namespace.
		return errors.Join(ferr, fmt.Errorf("netns %s: switching back: %w", ns, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// nsDialer returns a DialContext that opens connections from inside namespace ns.
func nsDialer(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := inNetns(ns, func() error {
			var err error
			conn, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
}
