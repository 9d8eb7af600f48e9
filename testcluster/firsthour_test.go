package testcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"gopkg.in/yaml.v3"
)

// firstHourHeading is the README section TestFirstHour walks.
const firstHourHeading = "### First hour: one boot server on a real network"

// firstHourShapes are the commands of the First hour's shell block, as subcommands and flag names
// in the README's order. The test runs the README's own lines; this list makes a change of the
// block (a command added, a flag renamed) fail here until the walk is updated with it.
var firstHourShapes = []string{
	"mkdir -p",
	"printf",
	"bootctl image add --store --name --kernel --initrd --cmdline",
	"bootctl image import --store --name --module --kernel --cmdline",
	"bootctl serve --check --config",
	"bootctl node add --mac --config",
	"bootctl node set --profile --config",
	"bootctl node list --config",
	"bootctl serve --config",
	"bootctl status --server --watch",
	"bootctl image add --store --name --kernel --initrd --cmdline",
}

// firstHourCloneVar, set to 1, makes TestFirstHour start from a fresh clone of this repository,
// built by the README's install line with empty Go build and module caches, and log the time from
// the clone to the first healthy VM (docs/serve.md).
const firstHourCloneVar = "BOOTFABRIC_FIRSTHOUR_CLONE"

// TestFirstHour walks README.md's "First hour" as an admin does, on the repository's own files:
// the README's shell block, run line by line with its paths moved under a temporary root, the
// server's address moved to a netns test cluster, and its kernel, initrds and root tarball made
// real; examples/serve/flat.yaml as shipped with the admin's edits; a VM booted while the default
// image is replaced (it finishes, the next boot gets the new one) and one booting the imported
// Debian image, both healthy in `bootctl status --output json`.
func TestFirstHour(t *testing.T) {
	vmLane(t)
	fh := newFirstHour(t)
	cmds := fh.readme()
	for _, cmd := range cmds {
		fh.step(cmd)
	}
	fh.nextBoots()
	fh.status(true)
	fh.mark("done")
	what := "test start"
	if fh.clone {
		what = "clone"
	}
	t.Logf("%s to healthy VM: %.1f s (%s)", what, fh.firstHealthy.Sub(fh.start).Seconds(), strings.Join(fh.marks, ", "))
}

// firstHour is the state of a First hour walk.
type firstHour struct {
	t     *testing.T
	ctx   context.Context
	log   *zap.Logger
	repo  string // the repository whose README and examples are walked
	root  string // the admin's /: /etc/bootfabric and /var/lib/bootfabric move under it
	bin   string // the directory of bootctl
	subst *strings.Replacer
	c     *Cluster
	// v1, v2: the default profile's initrd before and after its replacement (v1 is larger).
	v1, v2     string
	statusLine string // the README's status command, with --output json
	served     bool   // serve is running
	clone      bool
	start      time.Time
	// firstHealthy is when the first VM was healthy; marks say where the time before it went.
	firstHealthy time.Time
	marks        []string
}

func newFirstHour(t *testing.T) *firstHour {
	needQEMUHost(t)
	testenv.NeedFile(t, images.DefaultBusybox, "busybox-static")
	limit := 6 * time.Minute
	fh := &firstHour{t: t, log: zaptest.NewLogger(t), repo: "..", root: t.TempDir(), start: time.Now()}
	fh.clone = os.Getenv(firstHourCloneVar) == "1"
	if fh.clone {
		limit = 45 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	fh.ctx = ctx
	if fh.clone {
		fh.fromClone()
	} else {
		fh.bin = filepath.Dir(buildBootctl(t))
	}
	fh.files()
	return fh
}

// mark notes how long the walk has taken so far, for the clone-to-healthy figure.
func (fh *firstHour) mark(what string) {
	fh.marks = append(fh.marks, fmt.Sprintf("%s at %.1f s", what, time.Since(fh.start).Seconds()))
}

// fromClone clones this repository and builds bootctl as the README's install line from a clone
// does, with empty Go caches (a fresh machine's), its /opt moved under the temporary root.
func (fh *firstHour) fromClone() {
	t := fh.t
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("%s=1 needs a git checkout: %v", firstHourCloneVar, err)
	}
	fh.repo = filepath.Join(t.TempDir(), "bootfabric")
	if out, err := exec.CommandContext(fh.ctx, "git", "clone", "--quiet", "--no-hardlinks", strings.TrimSpace(string(top)), fh.repo).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	fh.mark("cloned")
	readme, err := os.ReadFile(filepath.Join(fh.repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#\s+or from a clone: (make build .*)$`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md: no install line \"or from a clone: make build ...\"")
	}
	install := strings.ReplaceAll(string(m[1]), "/opt/bootfabric", filepath.Join(fh.root, "opt/bootfabric"))
	cache := t.TempDir()
	cmd := exec.CommandContext(fh.ctx, "sh", "-c", install)
	cmd.Dir = fh.repo
	cmd.Env = append(os.Environ(), "GOCACHE="+filepath.Join(cache, "build"), "GOMODCACHE="+filepath.Join(cache, "mod"), "GOFLAGS=-modcacherw")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", install, err, tail(string(out), 20))
	}
	fh.bin = filepath.Join(fh.root, "opt/bootfabric/bin")
	fh.mark("built and installed")
}

// files makes what the README's /srv/node stands for: the two initrds of the default profile
// (the busybox test initramfs with the kernel's network modules; v1 padded, so that its transfer
// takes a while and the two differ in size) and the Debian root tarball; and the substitutions
// that put the README's paths and address on them.
func (fh *firstHour) files() {
	t := fh.t
	k, err := FindKernel("", "")
	if err != nil {
		t.Fatal(err)
	}
	mods, err := ModuleFiles(k.ModulesDir, DefaultVMModules)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fh.v1, fh.v2 = filepath.Join(dir, "initrd.img"), filepath.Join(dir, "initrd-new.img")
	for _, p := range []string{fh.v1, fh.v2} {
		if err := images.WriteInitramfs(p, images.InitramfsConfig{Modules: mods}); err != nil {
			t.Fatal(err)
		}
	}
	appendPadding(t, fh.v1, 8<<20)
	rootfs := cachedDebianRootfs(t, fh.ctx)
	fh.mark("files made")
	fh.subst = strings.NewReplacer(
		"/etc/bootfabric", filepath.Join(fh.root, "etc/bootfabric"),
		"/var/lib/bootfabric", filepath.Join(fh.root, "var/lib/bootfabric"),
		"/srv/node/vmlinuz", k.Image,
		"/srv/node/initrd.img", fh.v1,
		"/srv/node/initrd-new.img", fh.v2,
		"/srv/node/debian.tar", rootfs,
		"console=ttyS0,115200 ...", DefaultVMCmdline,
		"192.168.50.1", "10.213.0.1",
	)
}

// readme reads the First hour's shell block and checks it against firstHourShapes, the
// substitutions and the Debian root's mmdebstrap command.
func (fh *firstHour) readme() []fhCommand {
	t := fh.t
	data, err := os.ReadFile(filepath.Join(fh.repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block, cmds, err := firstHourCommands(string(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, old := range []string{"/etc/bootfabric", "/var/lib/bootfabric", "/srv/node/vmlinuz", "/srv/node/initrd.img",
		"/srv/node/initrd-new.img", "/srv/node/debian.tar", "console=ttyS0,115200 ...", "192.168.50.1"} {
		if !strings.Contains(block, old) {
			t.Errorf("README.md's First hour no longer has %q: update TestFirstHour with it", old)
		}
	}
	mm := "mmdebstrap " + strings.Join(debianRootfsArgs, " ")
	if !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(block, "#", " ")), " "), mm) {
		t.Errorf("README.md's First hour does not say how the Debian root is made (%q), as the test makes it", mm)
	}
	return cmds
}

// step runs one README command the way its place in the walk needs.
func (fh *firstHour) step(cmd fhCommand) {
	line := fh.subst.Replace(cmd.Line)
	switch shape := commandShape(cmd.Line); {
	case shape == "printf":
		fh.run(line)
		fh.up()
	case shape == "bootctl serve --check --config":
		fh.writeConfig(filepath.Join(fh.root, "etc/bootfabric/flat.yaml"))
		fh.check(line, cmd.After)
	case shape == "bootctl serve --config":
		fh.serve(line)
	case shape == "bootctl status --server --watch":
		fh.statusLine = regexp.MustCompile(`--watch \d+`).ReplaceAllString(line, "--output json")
		fh.status(false)
	case shape == "bootctl node list --config":
		fh.run(line)
		fh.nodeList(line + " --output json")
	case strings.HasPrefix(shape, "bootctl image add") && fh.served:
		fh.replaceDuringBoot(line)
	default:
		out := fh.run(line)
		if strings.HasPrefix(shape, "bootctl image import") {
			fh.t.Logf("%s\n%s", cmd.Line, out)
			fh.mark("Debian image imported")
		}
	}
}

// run runs a README line with sh, bootctl first in PATH, in the server's namespace once the
// cluster is up, and fails the test unless it exits 0.
func (fh *firstHour) run(line string) string {
	fh.t.Helper()
	out, err := fh.command(line).CombinedOutput()
	if err != nil {
		fh.t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

func (fh *firstHour) command(line string) *exec.Cmd {
	argv := []string{"sh", "-c", line}
	if fh.c != nil {
		argv = append([]string{"ip", "netns", "exec", fh.c.Servers[0].Namespace}, argv...)
	}
	cmd := exec.CommandContext(fh.ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PATH="+fh.bin+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// up checks the nodes.csv the README wrote against examples/serve/nodes.csv and brings up a
// flat netns cluster of those nodes, its VMs taking their MACs, the server at 10.213.0.1/16.
func (fh *firstHour) up() {
	t := fh.t
	written, err := os.ReadFile(filepath.Join(fh.root, "etc/bootfabric/nodes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join(fh.repo, "examples/serve/nodes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var names, macs []string
	for _, l := range strings.Split(strings.TrimSpace(string(written)), "\n")[1:] {
		if !strings.Contains("\n"+string(example), "\n"+l+"\n") {
			t.Errorf("README's nodes.csv line %q is not in examples/serve/nodes.csv", l)
		}
		name, mac, _ := strings.Cut(l, ",")
		names, macs = append(names, name), append(macs, mac)
	}
	c, err := Up(fh.ctx, Spec{Name: "fh" + fmt.Sprint(os.Getpid()%100000), Machine: topology.Flat(names, 1), Scale: 1, StateDir: t.TempDir()}, fh.log)
	if err != nil {
		t.Fatal(err)
	}
	downAtCleanup(t, c)
	if c.Servers[0].IP != "10.213.0.1" {
		t.Fatalf("the cluster's server is at %s; the walk moves the README's 192.168.50.1 to 10.213.0.1", c.Servers[0].IP)
	}
	for i := range c.Nodes {
		c.Nodes[i].MAC = macs[i]
	}
	fh.c = c
	fh.mark("cluster up")
}

// writeConfig copies examples/serve/flat.yaml to path with the edits the README asks for: the
// server's address, the DHCP interface, subnet, router and pool range. A field the file no longer
// has by that name fails the test.
func (fh *firstHour) writeConfig(path string) {
	t := fh.t
	data, err := os.ReadFile(filepath.Join(fh.repo, "examples/serve/flat.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(fh.subst.Replace(string(data))), &doc); err != nil {
		t.Fatal(err)
	}
	s := fh.c.Servers[0]
	for _, e := range []struct{ path, value string }{
		{"servers.0.address", s.IP},
		{"dhcp.interfaces", "eth0"},
		{"dhcp.subnet", fh.c.bootSubnet()},
		{"dhcp.router", s.IP},
		{"dhcp.pool.range", "10.213.2.100-10.213.2.199"},
	} {
		if err := setYAML(&doc, e.path, e.value); err != nil {
			t.Fatalf("examples/serve/flat.yaml: %v", err)
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	testfix.WriteFile(t, path, out)
	for _, f := range []string{"images", "state_dir"} {
		if v := yamlValue(&doc, f); !strings.HasPrefix(v, fh.root) {
			t.Fatalf("examples/serve/flat.yaml: %s %q is outside the test's root: relocate it in TestFirstHour", f, v)
		}
	}
	fh.c.StateDirs = map[string]string{s.Name: yamlValue(&doc, "state_dir")}
	_, port, _ := strings.Cut(yamlValue(&doc, "http.listen"), ":")
	if _, err := fmt.Sscan(port, &fh.c.HTTPPort); err != nil {
		t.Fatalf("examples/serve/flat.yaml: http.listen %q: %v", yamlValue(&doc, "http.listen"), err)
	}
}

// check runs serve --check and compares its line with the one the README shows after it.
func (fh *firstHour) check(line string, after []string) {
	out := strings.TrimSpace(fh.run(line))
	for _, a := range after {
		if strings.Contains(a, ": ok: ") {
			if want := fh.subst.Replace(a); out != want {
				fh.t.Errorf("%s printed\n%s\nthe README shows\n%s", line, out, want)
			}
			return
		}
	}
	fh.t.Errorf("README.md's First hour shows no \"ok:\" line after serve --check")
}

// serve starts the README's serve line in the server's namespace, stopped by the cluster's Down,
// and waits for its HTTP endpoint.
func (fh *firstHour) serve(line string) {
	t := fh.t
	logPath := filepath.Join(t.TempDir(), "serve.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := fh.command("exec " + line)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := fh.c.AddPid(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", tail(readLog(logPath), 40))
		}
	})
	cl := fh.client()
	testfix.WaitFor(t, "bootctl serve to answer", 30*time.Second, func() bool {
		_, err := cl.Nodes(fh.ctx)
		return err == nil
	})
	fh.served = true
	fh.mark("serving")
}

// client talks to the server's HTTP API from inside its namespace.
func (fh *firstHour) client() *bootapi.Client {
	s := fh.c.Servers[0]
	return &bootapi.Client{BaseURL: "http://" + fh.c.serverAddr(s.IP), HTTP: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: nsDialer(s.Namespace)}}}
}

// status runs the README's status line with --output json; at the end, every node that booted
// must be healthy in it.
func (fh *firstHour) status(end bool) {
	out := fh.run(fh.statusLine)
	var st struct {
		Nodes []nodestate.NodeStatus `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		fh.t.Fatalf("%s: %v\n%s", fh.statusLine, err, out)
	}
	states := map[string]string{}
	for _, n := range st.Nodes {
		states[n.Name] = n.State.String()
	}
	fh.t.Logf("%s: %v", fh.statusLine, states)
	for _, want := range []string{"node01", "node02", "node03"} {
		if _, ok := states[want]; !ok {
			fh.t.Errorf("%s does not list %s", fh.statusLine, want)
		}
		if end && want != "node03" && states[want] != "healthy" {
			fh.t.Errorf("%s: %s is %q, want healthy", fh.statusLine, want, states[want])
		}
	}
}

// nodeList checks node list's JSON: the node the README added, and the profile it set.
func (fh *firstHour) nodeList(line string) {
	out := fh.run(line)
	var nodes []map[string]any
	if err := json.Unmarshal([]byte(out), &nodes); err != nil {
		var wrapped struct {
			Nodes []map[string]any `json:"nodes"`
		}
		if err2 := json.Unmarshal([]byte(out), &wrapped); err2 != nil {
			fh.t.Fatalf("%s: %v\n%s", line, err, out)
		}
		nodes = wrapped.Nodes
	}
	got := map[string]any{}
	for _, n := range nodes {
		got[fmt.Sprint(n["name"])] = n["profile"]
	}
	if _, ok := got["node03"]; !ok || got["node02"] != "debian" || len(got) != 3 {
		fh.t.Errorf("%s: nodes and profiles %v, want node01, node02 on debian, node03", line, got)
	}
}

// vmBoot is the outcome of BootVMs run in the background.
type vmBoot struct {
	rs  []VMResult
	err error
}

// replaceDuringBoot boots node01 and runs the README's replacing image add while it boots (once
// its initrd transfer runs, or it is past it). node01 must reach healthy with the old initrd.
func (fh *firstHour) replaceDuringBoot(line string) {
	t := fh.t
	done := make(chan vmBoot, 1)
	go func() {
		rs, err := BootVMs(fh.ctx, fh.c, 1, QEMUOptions{Log: fh.log, Timeout: 150 * time.Second})
		done <- vmBoot{rs, err}
	}()
	seen, ended := fh.waitMidBoot(done)
	if ended != nil {
		t.Fatalf("node01's boot ended before the image could be replaced (%v): %v", seen, ended.err)
	}
	fh.run(line)
	after := fh.transfer("node01")
	t.Logf("default replaced while node01 was at %s; then its transfer was %+v", seen, after)
	b := <-done
	fh.vmsHealthy(b)
	fh.firstHealthy = time.Now()
	fh.mark("first VM healthy")
	if x := fh.transfer("node01"); x == nil || !strings.Contains(x.File, "initrd") || x.Size != fileSize(t, fh.v1) || x.Outcome != nodestate.TransferDone {
		t.Errorf("node01's boot under way: last transfer %+v, want its initrd (%d bytes, the old one) done", x, fileSize(t, fh.v1))
	}
}

// waitMidBoot waits until node01 is mid-boot: its initrd transfer running, or its state initrd
// or booted. It returns what it saw, or the boot's outcome if the boot ended first.
func (fh *firstHour) waitMidBoot(done chan vmBoot) (string, *vmBoot) {
	cl := fh.client()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case b := <-done:
			return "the end of its boot", &b
		case <-fh.ctx.Done():
			return "the test's deadline", &vmBoot{err: fh.ctx.Err()}
		case <-tick.C:
		}
		p, err := cl.Progress(fh.ctx)
		if err != nil {
			continue
		}
		for _, n := range p.Nodes {
			if n.Name != "node01" {
				continue
			}
			if x := n.Transfer; x != nil && strings.Contains(x.File, "initrd") && x.Outcome == nodestate.TransferRunning {
				return fmt.Sprintf("its initrd transfer, %d of %d bytes", x.Sent, x.Size), nil
			}
			if n.State == nodestate.Initrd || n.State == nodestate.Booted {
				return "state " + string(n.State), nil
			}
		}
	}
}

// transfer is the node's current or last transfer, from the server's progress view.
func (fh *firstHour) transfer(node string) *nodestate.Transfer {
	p, err := fh.client().Progress(fh.ctx)
	if err != nil {
		fh.t.Fatalf("progress: %v", err)
	}
	for _, n := range p.Nodes {
		if n.Name == node {
			return n.Transfer
		}
	}
	return nil
}

// nextBoots boots node01 again (the next boot: the new default initrd) and node02 (the Debian
// image, set by node set) at once, and checks what each got.
func (fh *firstHour) nextBoots() {
	t := fh.t
	rs, err := BootVMs(fh.ctx, fh.c, 2, QEMUOptions{Log: fh.log, MemoryMB: 1024, Timeout: 240 * time.Second})
	fh.vmsHealthy(vmBoot{rs, err})
	if x := fh.transfer("node01"); x == nil || x.Size != fileSize(t, fh.v2) {
		t.Errorf("node01's next boot: last transfer %+v, want the new initrd (%d bytes)", x, fileSize(t, fh.v2))
	}
	if len(rs) == 2 {
		serial := readLog(rs[1].SerialLog)
		if !strings.Contains(serial, "exec /sbin/init") {
			t.Errorf("node02 did not boot the Debian image (no \"exec /sbin/init\" on its console):\n%s", tail(serial, 30))
		}
	}
}

// vmsHealthy fails the test unless every VM of b reported healthy, with their consoles.
func (fh *firstHour) vmsHealthy(b vmBoot) {
	for _, r := range b.rs {
		fh.t.Logf("%s (%s): health %q after %.1f s", r.Node, r.Accel, r.Health, r.Seconds)
		if r.Health != "ok" {
			fh.t.Logf("console of %s:\n%s", r.Node, tail(readLog(r.SerialLog), 40))
		}
	}
	if b.err != nil {
		fh.t.Fatal(b.err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// appendPadding appends an uncompressed newc cpio archive holding one file of n random bytes to
// an initramfs: the kernel unpacks concatenated archives, and the file makes the initrd larger.
func appendPadding(t *testing.T, path string, n int) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entry := func(name string, mode uint32, data []byte) []byte {
		h := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", 1, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
		b := append([]byte(h+name), 0)
		b = append(b, make([]byte, (4-len(b)%4)%4)...)
		b = append(b, data...)
		return append(b, make([]byte, (4-len(data)%4)%4)...)
	}
	w := append(entry("padding", 0o100644, testfix.RandomBytes(n, 38)), entry("TRAILER!!!", 0, nil)...)
	if _, err := f.Write(w); err != nil {
		t.Fatal(err)
	}
}

// firstHourCommands returns the First hour's shell block of a README and its commands, or an
// error when they are not the ones firstHourShapes lists.
func firstHourCommands(readme string) (string, []fhCommand, error) {
	block, err := readmeBlock(readme, firstHourHeading)
	if err != nil {
		return "", nil, err
	}
	cmds := shellCommands(block)
	var shapes []string
	for _, c := range cmds {
		shapes = append(shapes, commandShape(c.Line))
	}
	if got, want := strings.Join(shapes, "\n"), strings.Join(firstHourShapes, "\n"); got != want {
		return "", nil, fmt.Errorf("README.md's First hour runs\n%s\nTestFirstHour walks\n%s\nupdate one or the other", got, want)
	}
	return block, cmds, nil
}

// fhCommand is one command of a README shell block, its continuation lines joined and a trailing
// comment dropped, with the comment lines after it (the output the README shows for it).
type fhCommand struct {
	Line  string
	After []string
}

// readmeBlock returns the first ```sh block after the heading line in a README.
func readmeBlock(readme, heading string) (string, error) {
	i := strings.Index(readme, "\n"+heading+"\n")
	if i < 0 {
		return "", fmt.Errorf("README.md: no section %q", heading)
	}
	rest := readme[i+len(heading)+2:]
	start := strings.Index(rest, "```sh\n")
	if start < 0 {
		return "", fmt.Errorf("README.md: section %q has no sh block", heading)
	}
	rest = rest[start+len("```sh\n"):]
	end := strings.Index(rest, "```")
	if end < 0 {
		return "", fmt.Errorf("README.md: section %q: the sh block does not end", heading)
	}
	return rest[:end], nil
}

// shellCommands splits a shell block into commands.
func shellCommands(block string) []fhCommand {
	var out []fhCommand
	cur := ""
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case cur == "" && strings.HasPrefix(l, "#"):
			if len(out) > 0 {
				out[len(out)-1].After = append(out[len(out)-1].After, strings.TrimSpace(strings.TrimPrefix(l, "#")))
			}
		case l == "":
		case strings.HasSuffix(l, `\`):
			cur += strings.TrimSuffix(l, `\`)
		default:
			out = append(out, fhCommand{Line: strings.TrimSpace(stripComment(cur + l))})
			cur = ""
		}
	}
	return out
}

// stripComment drops a comment (a # after a blank, outside quotes) from a shell line.
func stripComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && i > 0 && (line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// shellWords splits a shell line into words, with single and double quotes.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	var quote rune
	in := false
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// subcommandWord is what a bootctl subcommand looks like; a node name such as node03 is not one.
var subcommandWord = regexp.MustCompile(`^[a-z]+$`)

// commandShape is a command's program, its subcommands (for bootctl: up to two lower-case words
// before the first flag) and its flag names, in order: what the README promises to exist.
func commandShape(line string) string {
	words := shellWords(line)
	if len(words) == 0 {
		return ""
	}
	shape := []string{words[0]}
	for i, w := range words[1:] {
		switch {
		case strings.HasPrefix(w, "-"):
			name, _, _ := strings.Cut(w, "=")
			shape = append(shape, name)
		case words[0] == "bootctl" && i < 2 && len(shape) == i+1 && subcommandWord.MatchString(w):
			shape = append(shape, w)
		}
	}
	return strings.Join(shape, " ")
}

// setYAML sets the scalar at a dotted path (map keys, sequence indexes) of a YAML document, or
// makes the sequence there one item. A missing key or index is an error naming the path.
func setYAML(doc *yaml.Node, path, value string) error {
	n := yamlNode(doc, path)
	switch {
	case n == nil:
		return fmt.Errorf("no field %s", path)
	case n.Kind == yaml.ScalarNode:
		n.Value = value
	case n.Kind == yaml.SequenceNode:
		n.Content = []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}}
	default:
		return fmt.Errorf("field %s is not a value or a list", path)
	}
	return nil
}

// yamlValue is the scalar at a dotted path, "" if there is none.
func yamlValue(doc *yaml.Node, path string) string {
	if n := yamlNode(doc, path); n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

func yamlNode(doc *yaml.Node, path string) *yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	for _, k := range strings.Split(path, ".") {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					next = n.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			var idx int
			if _, err := fmt.Sscan(k, &idx); err == nil && idx >= 0 && idx < len(n.Content) {
				next = n.Content[idx]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// TestShellCommands: the README block parser joins continuation lines, drops trailing comments
// outside quotes, keeps the comment lines after a command, and reads commands' shapes.
func TestShellCommands(t *testing.T) {
	block := "# 1. intro\nmkdir -p /a\nbootctl image add --store /s --name d \\\n    --cmdline \"a # b ...\"   # why\n# out: ok\n# more\n\nbootctl status --server http://x:1 --watch 2   # or open\n"
	for _, tc := range []struct {
		name  string
		i     int
		line  string
		shape string
		after []string
	}{
		{"plain", 0, "mkdir -p /a", "mkdir -p", nil},
		{"continued, quoted #", 1, `bootctl image add --store /s --name d --cmdline "a # b ..."`, "bootctl image add --store --name --cmdline", []string{"out: ok", "more"}},
		{"trailing comment", 2, "bootctl status --server http://x:1 --watch 2", "bootctl status --server --watch", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmds := shellCommands(block)
			if len(cmds) != 3 {
				t.Fatalf("%d commands, want 3: %q", len(cmds), cmds)
			}
			c := cmds[tc.i]
			if c.Line != tc.line || commandShape(c.Line) != tc.shape || strings.Join(c.After, "|") != strings.Join(tc.after, "|") {
				t.Errorf("command %d = %q (shape %q, after %q), want %q (%q, %q)", tc.i, c.Line, commandShape(c.Line), c.After, tc.line, tc.shape, tc.after)
			}
		})
	}
	if got := commandShape("bootctl node add node03 --mac m --config c"); got != "bootctl node add --mac --config" {
		t.Errorf("a node name is not a subcommand: shape %q", got)
	}
}

// TestReadmeFirstHourShapes: README.md's First hour runs the commands TestFirstHour walks (the
// walk itself needs root and QEMU; this check does not).
func TestReadmeFirstHourShapes(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := firstHourCommands(string(data)); err != nil {
		t.Error(err)
	}
}
