package testcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/internal/ipmisim"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap/zaptest"
)

// bootRunMachine is one board of six nodes behind one boot server: four QEMU VMs, a node whose
// BMC does not answer and one whose BMC refuses the password.
func bootRunMachine() *topology.Machine {
	return &topology.Machine{
		Name: "bootrun6",
		Levels: []topology.LevelSpec{
			{Name: "board", Prefix: "b", Count: 1},
			{Name: "node", Prefix: "n", Count: 6, Uplink: &topology.LinkSpec{Segment: "N1", CapacityMbps: 1000, LatencyUS: 10}},
		},
		Servers: topology.ServerSpec{Count: 1, NIC: topology.LinkSpec{Segment: "N5", CapacityMbps: 1000, LatencyUS: 10}},
	}
}

// nsForward forwards TCP connections to a loopback port of the host to addr inside namespace
// ns, so that a command run on the host reaches a boot server's API as if from the server's
// own host (its operator API answers that host only). It returns the host address.
func nsForward(t testing.TB, ns, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	dial := nsDialer(ns)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s, err := dial(context.Background(), "tcp", addr)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { io.Copy(s, c); s.(*net.TCPConn).CloseWrite() }()
				io.Copy(c, s)
			}()
		}
	}()
	return ln.Addr().String()
}

// shellQuote joins argv for sh, each word single-quoted.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// bootRunSetup is the cluster of TestBootRunIPMI with its BMCs and the files bootctl reads.
type bootRunSetup struct {
	c       *Cluster
	bin     string
	bmcs    []*ipmisim.BMC // nil for the node whose BMC does not answer
	config  string
	creds   string
	server  string // the boot server's API, forwarded to the host
	token   string
	journal string
}

func newBootRunSetup(t *testing.T, ctx context.Context) *bootRunSetup {
	testenv.NeedRoot(t, "to create network namespaces and taps (CI runs as root)")
	if err := CheckQEMUHost(QEMUOptions{}); err != nil {
		testenv.Skip(t, "%v (scripts/test installs the packages)", err)
	}
	testenv.NeedFile(t, debianNBP, "ipxe")
	s := &bootRunSetup{bin: buildBootctl(t)}
	log := zaptest.NewLogger(t)
	c, err := Up(ctx, Spec{Name: "br" + strconv.Itoa(os.Getpid()%100000), Machine: bootRunMachine(), Scale: 1, StateDir: t.TempDir()}, log)
	if err != nil {
		t.Fatal(err)
	}
	downAtCleanup(t, c)
	if err := c.StartQEMUServers(ctx, ServerOptions{Bootctl: s.bin, Mapping: "ncda", Files: BootFiles{NBP: debianNBP}}, VMImage{}); err != nil {
		t.Fatal(err)
	}
	s.c = c
	// These VMs are started by their BMCs' chassis scripts, with no supervisor that could start
	// one again under TCG when KVM fails it (BootVMs does): they run under TCG unless KVM is asked
	// for by name.
	accel := "tcg"
	if v, _ := accelRequest(""); v == "kvm" {
		accel, _ = testAccel(t, ctx, c, log)
	}
	opt := QEMUOptions{Accel: accel}
	opt.defaults(c)
	s.bmcs = make([]*ipmisim.BMC, len(c.Nodes))
	for i := 0; i < 4; i++ {
		if err := c.attachTap(ctx, i); err != nil {
			t.Fatal(err)
		}
		argv := append([]string{"ip", "netns", "exec", c.Nodes[i].Namespace, opt.QEMU}, qemuArgs(opt, c.Nodes[i].MAC, vmTap, "")...)
		s.bmcs[i] = ipmisim.Start(t, ipmisim.Options{Machine: "exec " + shellQuote(argv)})
	}
	s.bmcs[5] = ipmisim.Start(t, ipmisim.Options{Password: "not-what-we-send"})
	s.writeFiles(t)
	s.server = "http://" + nsForward(t, c.Servers[0].Namespace, "127.0.0.1:80")
	s.token = filepath.Join(c.dir(), "state-"+c.Servers[0].Name, bootconfig.OperatorTokenFile)
	return s
}

// writeFiles writes the credentials, the inventory with the BMC columns and the configuration
// bootctl boot reads.
func (s *bootRunSetup) writeFiles(t *testing.T) {
	dir := t.TempDir()
	s.creds = testfix.WriteFile(t, filepath.Join(dir, "bmc.yaml"), []byte("default: {user: admin, password: ipmisim-secret}\n"))
	if err := os.Chmod(s.creds, 0o600); err != nil {
		t.Fatal(err)
	}
	inv := "name,mac,ip,node,bmc,bmc_driver\n"
	for i, n := range s.c.Nodes {
		bmc := "127.0.0.1:" + strconv.Itoa(testfix.FreePort(t)) // nothing answers there
		if s.bmcs[i] != nil {
			bmc = s.bmcs[i].Addr()
		}
		inv += fmt.Sprintf("%s,%s,%s,%s,%s,ipmi\n", n.Name, n.MAC, n.IP, n.Name, bmc)
	}
	testfix.WriteFile(t, filepath.Join(dir, "inventory.csv"), []byte(inv))
	mach, err := s.c.Machine.MarshalYAMLText()
	if err != nil {
		t.Fatal(err)
	}
	testfix.WriteFile(t, filepath.Join(dir, "machine.yaml"), mach)
	cfg := fmt.Sprintf("servers:\n  - {name: %s, address: %s}\ntopology: machine.yaml\nmapping: ncda\ninventory: inventory.csv\n", s.c.Servers[0].Name, s.c.Servers[0].IP)
	s.config = testfix.WriteFile(t, filepath.Join(dir, "boot.yaml"), []byte(cfg))
	s.journal = filepath.Join(dir, "run.journal")
}

func (s *bootRunSetup) bootArgs(extra ...string) []string {
	return append([]string{"boot", "all", "--config", s.config, "--server", s.server, "--token-file", s.token,
		"--credentials", s.creds, "--journal", s.journal, "--max-in-flight", "2", "--post", "10s", "--health-time", "30s",
		"--deadline-factor", "2", "--max-attempts", "2", "--timeout", "5s", "--interval", "0s", "--poll", "500ms"}, extra...)
}

// healthyAt returns when each healthy node became healthy, from the server's API.
func (s *bootRunSetup) healthyAt(t *testing.T) map[string]time.Time {
	h, _ := s.serverTimes(t)
	return h
}

// TestBootRunIPMI: bootctl boot powers four QEMU VMs on over IPMI RMCP+ (ipmi_sim BMCs whose
// machine is the VM) with PXE next boot, at most two at a time; it is killed with SIGKILL once a
// node is healthy and resumed; every VM ends healthy, none powered again after it was healthy;
// the BMC that does not answer and the one that refuses the password are classified and the run
// goes on; power status and power off agree with QEMU's own state. Then two healthy nodes are
// powered off with the server told, and a new `boot all` boots those two and skips the others.
func TestBootRunIPMI(t *testing.T) {
	vmLane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	s := newBootRunSetup(t, ctx)
	first := exec.CommandContext(ctx, s.bin, s.bootArgs("-o", "json")...)
	first.Stderr = testWriter{t, "boot 1: "}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	testfix.WaitFor(t, "a first node healthy", 4*time.Minute, func() bool { return len(s.healthyAt(t)) > 0 })
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	t.Logf("killed the run with %d node(s) healthy", len(s.healthyAt(t)))

	second := exec.CommandContext(ctx, s.bin, s.bootArgs("--resume", "-o", "json")...)
	second.Stderr = testWriter{t, "boot 2: "}
	out, err := second.Output()
	var ee *exec.ExitError
	if err != nil && !(errorsAs(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	s.checkRun(t, out)
	s.checkPower(t, ctx)
	s.checkPowerOffThenBoot(t, ctx)
}

// checkPowerOffThenBoot: `power off` of two healthy nodes with --server tells the server, which
// shows them pending and powered off; a new `boot all` boots those two to healthy in a new attempt
// and skips the two still healthy, saying why (issue 37: power off all then boot all booted
// nothing: the server kept them healthy).
func (s *bootRunSetup) checkPowerOffThenBoot(t *testing.T, ctx context.Context) {
	before := s.nodeStates(t)
	a, b := s.c.Nodes[0].Name, s.c.Nodes[1].Name
	out, err := exec.CommandContext(ctx, s.bin, "power", "off", a+","+b, "--config", s.config, "--credentials", s.creds,
		"--server", s.server, "--token-file", s.token, "-o", "json").Output()
	if err != nil || !strings.Contains(string(out), `"told": 2`) {
		t.Fatalf("power off with --server: %v\n%s", err, out)
	}
	now := s.nodeStates(t)
	for _, n := range []string{a, b} {
		if now[n].State != nodestate.Pending || !now[n].PoweredOff {
			t.Errorf("node %s after power off: %v, powered off %v; want pending and powered off", n, now[n].State, now[n].PoweredOff)
		}
	}
	s.journal += ".again"
	run := exec.CommandContext(ctx, s.bin, s.bootArgs("-o", "json")...)
	run.Stderr = testWriter{t, "boot 3: "}
	var stdout strings.Builder
	run.Stdout = &stdout
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	s.checkStatusMidRun(t, ctx, a)
	err = run.Wait()
	out = []byte(stdout.String())
	var ee *exec.ExitError
	if err != nil && !(errorsAs(err, &ee) && ee.ExitCode() == 1) { // 1: the two bad BMCs fail again
		t.Fatalf("boot after power off: %v\n%s", err, out)
	}
	var res struct {
		Skipped       int    `json:"skipped"`
		SkippedReason string `json:"skipped_reason"`
		Records       []struct {
			Name, Phase string
			Skipped     bool
		} `json:"nodes_detail"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("run record: %v\n%s", err, out)
	}
	if res.Skipped != 2 || !strings.Contains(res.SkippedReason, "--reboot-healthy") {
		t.Errorf("skipped %d (%q), want the 2 nodes still healthy", res.Skipped, res.SkippedReason)
	}
	after := s.nodeStates(t)
	for i, r := range res.Records[:4] {
		wantSkip := i >= 2
		if r.Phase != "healthy" || r.Skipped != wantSkip {
			t.Errorf("node %s: %s skipped %v, want healthy skipped %v", r.Name, r.Phase, r.Skipped, wantSkip)
		}
	}
	s.checkPageCurve(t, ctx, filepath.Base(s.journal), len(res.Records)-res.Skipped)
	for _, n := range []string{a, b} {
		if after[n].State != nodestate.Healthy || after[n].Attempt <= before[n].Attempt || after[n].PoweredOff {
			t.Errorf("node %s on the server: %v attempt %d (before %d) powered off %v; want healthy in a new attempt",
				n, after[n].State, after[n].Attempt, before[n].Attempt, after[n].PoweredOff)
		}
	}
}

// checkPageCurve: the run told the server its prediction, and the boot page's curve is the run's:
// its name, the predicted times of the nodes it booted (not of the skipped ones), and the two
// nodes it brought to healthy since its start.
func (s *bootRunSetup) checkPageCurve(t *testing.T, ctx context.Context, run string, booted int) {
	req, err := http.NewRequestWithContext(ctx, "GET", s.server+"/ui/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev bootsrv.WebEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.View == nil {
			t.Fatalf("the page's first event: %v\n%s", err, data)
		}
		c := ev.View.Curve
		if c.Run != run || len(c.Prediction) != booted || c.Nodes != booted || len(c.Healthy) != 2 {
			t.Errorf("the page's curve: run %q, %d predicted of %d nodes, %d healthy; want run %q, %d predicted and nodes, 2 healthy",
				c.Run, len(c.Prediction), c.Nodes, len(c.Healthy), run, booted)
		}
		return
	}
	t.Fatalf("the page's event stream ended before an event: %v", sc.Err())
}

// nodeStates reads every node's status from the server, by name.
func (s *bootRunSetup) nodeStates(t *testing.T) map[string]nodestate.NodeStatus {
	resp, err := http.Get(s.server + "/api/v1/nodes")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var nodes bootapi.NodesResponse
	if err := json.NewDecoder(resp.Body).Decode(&nodes); err != nil {
		t.Fatal(err)
	}
	out := map[string]nodestate.NodeStatus{}
	for _, n := range nodes.Nodes {
		out[n.Name] = n
	}
	return out
}

// checkStatusMidRun: boot status, while the run goes on, reads from its journal node past
// powering (the journal had only power actions: every node showed powering) and the run's start.
func (s *bootRunSetup) checkStatusMidRun(t *testing.T, ctx context.Context, node string) {
	var st struct {
		Records []struct{ Name, Phase string } `json:"nodes_detail"`
		Events  []struct{ Run string }         `json:"run_events"`
	}
	testfix.WaitFor(t, "boot status to show "+node+" past powering", 4*time.Minute, func() bool {
		out, err := exec.CommandContext(ctx, s.bin, "boot", "status", "--journal", s.journal, "-o", "json").Output()
		if err != nil || json.Unmarshal(out, &st) != nil {
			t.Logf("boot status: %v\n%s", err, out)
			return false
		}
		for _, r := range st.Records {
			if r.Name == node && r.Phase != "queued" && r.Phase != "powering" {
				return true
			}
		}
		return false
	})
	if len(st.Events) == 0 || st.Events[0].Run != "started" {
		t.Errorf("boot status mid-run: run events %+v, want started first", st.Events)
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*target = e
	return ok
}

// checkRun checks the resumed run's record and the BMCs' logs.
func (s *bootRunSetup) checkRun(t *testing.T, out []byte) {
	var run struct {
		Healthy, Failed int
		Records         []struct {
			Name     string
			Phase    string
			Class    string
			Failures []string
		} `json:"nodes_detail"`
	}
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("run record: %v\n%s", err, out)
	}
	t.Logf("run record: %s", out)
	want := map[string]string{s.c.Nodes[4].Name: "bmc-unreachable", s.c.Nodes[5].Name: "bmc-auth"}
	for i, r := range run.Records {
		switch {
		case i < 4 && r.Phase != "healthy":
			t.Errorf("node %s: %s %s, want healthy", r.Name, r.Phase, r.Class)
		case i >= 4 && (r.Phase != "failed" || r.Class != want[r.Name]):
			t.Errorf("node %s: %s %q, want failed %q", r.Name, r.Phase, r.Class, want[r.Name])
		}
	}
	healthy, filesIn := s.serverTimes(t)
	on := map[int]time.Time{}
	for i := 0; i < 4; i++ {
		at, ok := healthy[s.c.Nodes[i].Name]
		if !ok {
			t.Errorf("node %s not healthy on the server", s.c.Nodes[i].Name)
			continue
		}
		for _, c := range s.bmcs[i].Calls() {
			if c.String() != "set power 1" {
				continue
			}
			if c.Time.After(at) {
				t.Errorf("node %s powered on at %v, after it was healthy at %v", s.c.Nodes[i].Name, c.Time, at)
			}
			if _, seen := on[i]; !seen {
				on[i] = c.Time
			}
		}
		if s.bmcs[i].Boot() != "pxe" {
			t.Errorf("node %s: boot device %q, want pxe", s.c.Nodes[i].Name, s.bmcs[i].Boot())
		}
	}
	// In flight: powered on, files not yet in. Never more than 2, and so in at least 2 rounds.
	for i, ti := range on {
		flying := 1
		for j, tj := range on {
			if j != i && !tj.After(ti) && filesIn[s.c.Nodes[j].Name].After(ti) {
				flying++
			}
		}
		if flying > 2 {
			t.Errorf("node %s powered on at %v with %d nodes in flight, max 2", s.c.Nodes[i].Name, ti, flying)
		}
	}
}

// serverTimes returns when each healthy node became healthy and when its boot files were in
// (the initrd sent, or its kernel's DHCP request), from the server's API.
func (s *bootRunSetup) serverTimes(t *testing.T) (healthy, filesIn map[string]time.Time) {
	resp, err := http.Get(s.server + "/api/v1/nodes")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var nodes bootapi.NodesResponse
	if err := json.NewDecoder(resp.Body).Decode(&nodes); err != nil {
		t.Fatal(err)
	}
	healthy, filesIn = map[string]time.Time{}, map[string]time.Time{}
	for _, n := range nodes.Nodes {
		if n.State != nodestate.Healthy {
			continue
		}
		healthy[n.Name] = n.Times[nodestate.Healthy]
		in := n.Times[nodestate.Booted]
		if t, ok := n.Times[nodestate.Initrd]; ok && t.Before(in) {
			in = t
		}
		filesIn[n.Name] = in
	}
	return healthy, filesIn
}

// checkPower checks that bootctl power status and off agree with the VMs' processes.
func (s *bootRunSetup) checkPower(t *testing.T, ctx context.Context) {
	node := s.c.Nodes[0].Name
	power := func(op string) string {
		out, err := exec.CommandContext(ctx, s.bin, "power", op, node, "--config", s.config, "--credentials", s.creds, "-o", "json").Output()
		if err != nil {
			t.Fatalf("power %s: %v\n%s", op, err, out)
		}
		return string(out)
	}
	testfix.WaitFor(t, "the healthy VM to power itself off", 30*time.Second, func() bool { return s.bmcs[0].MachinePid() == 0 })
	if got := power("status"); !strings.Contains(got, `"state": "off"`) {
		t.Errorf("power status of a VM that exited: %s", got)
	}
	power("on")
	if s.bmcs[0].MachinePid() == 0 {
		t.Fatal("power on started no VM")
	}
	if got := power("status"); !strings.Contains(got, `"state": "on"`) {
		t.Errorf("power status of a running VM: %s", got)
	}
	power("off")
	if pid := s.bmcs[0].MachinePid(); pid != 0 {
		t.Errorf("power off left the VM running (pid %d)", pid)
	}
}

// testWriter logs a command's output lines in the test's log.
type testWriter struct {
	t      *testing.T
	prefix string
}

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(w.prefix + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
