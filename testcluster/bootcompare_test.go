package testcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap/zaptest"
)

// The comparison of issue 26: 128 container nodes whose firmware gives up on a file that takes
// longer than its timeout and starts over from DHCP, as PXE ROMs do, booted three ways through
// the same power plant (an exec driver that starts or kills a node's firmware script): all at
// once, a fixed stagger as xCAT does it, and bootctl boot.

// compareMachine is two boards of 64 nodes, each board's boot server behind a 100 Mb/s NIC.
func compareMachine() *topology.Machine {
	return &topology.Machine{
		Name: "compare128",
		Levels: []topology.LevelSpec{
			{Name: "board", Prefix: "b", Count: 2, Uplink: &topology.LinkSpec{Segment: "N2", CapacityMbps: 1000, LatencyUS: 10}},
			{Name: "node", Prefix: "n", Count: 64, Uplink: &topology.LinkSpec{Segment: "N1", CapacityMbps: 1000, LatencyUS: 10}},
		},
		Servers: topology.ServerSpec{Count: 2, NIC: topology.LinkSpec{Segment: "N5", CapacityMbps: 100, LatencyUS: 10}},
	}
}

// compareFiles: iPXE over TFTP, then a 1 MB kernel and a 3 MB initrd over HTTP.
var compareFiles = BootFiles{NBP: debianNBP, Kernel: 1 << 20, Initrd: 3 << 20}

// compareFileTimeout is the firmware's patience with one file: a 3 MB initrd needs 3.2 Mb/s.
const compareFileTimeout = "8"

// firmwareScript is a node's firmware, powered on by its "BMC" (powerScript): retryFirmware, each
// file given up after BF_FILE_TIMEOUT seconds.
const firmwareScript = `ts() { date +%s.%N; }
ip link set lo up
ip link set eth0 up
` + retryFirmware

// powerScript is the nodes' "BMC": on starts the node's firmware in its namespace, in a session
// of its own, off kills that session, status says whether it runs.
const powerScript = `#!/bin/sh
op=$1 node=$2 dir=@DIR@
pidf="$dir/$node.pid"
running() { pid=$(cat "$pidf" 2>/dev/null) && kill -0 "$pid" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$pid/status"; }
start() {
	running && return
	BF_UDHCPC_SCRIPT="$dir/udhcpc.script" BF_ATTEMPTS=@ATTEMPTS@ BF_FILE_TIMEOUT=@TIMEOUT@ setsid ip netns exec "@PREFIX@$node" sh "$dir/firmware.sh" >>"$dir/$node.events" 2>&1 </dev/null &
	echo $! > "$pidf"
}
stop() { if running; then kill -KILL "-$pid"; fi; rm -f "$pidf"; }
case $op in
on) start ;;
off) stop ;;
cycle) stop; start ;;
status) if running; then echo "Chassis Power is on"; else echo "Chassis Power is off"; fi ;;
esac
`

// compareRun is one way of booting, measured at the clients.
type compareRun struct {
	Way      string
	Healthy  int
	Failed   int
	Attempts int // boot attempts of all nodes (1 per node when none retried)
	Makespan float64
	OnSpread float64 // from the first node's power-on to the last node's first power-on
}

type compareSetup struct {
	c                       *Cluster
	plant                   comparePlant
	bin, dir, config, creds string
	templates, nodes        string
	servers, tokens         []string
}

// comparePlant is a test-cluster plant: the machine (its server NICs shaped), the files each
// node fetches, and its firmware's patience with one file and attempts before it gives up.
type comparePlant struct {
	Name     string // lower-case letters and digits: the cluster's name with the process id
	Machine  *topology.Machine
	Files    BootFiles
	Timeout  string // seconds
	Attempts int
}

// comparePlant128 is issue 26's plant.
func comparePlant128() comparePlant {
	return comparePlant{Name: "cmp", Machine: compareMachine(), Files: compareFiles, Timeout: compareFileTimeout, Attempts: 8}
}

func newCompareSetup(b testing.TB, ctx context.Context, p comparePlant) *compareSetup {
	testenv.NeedRoot(b, "to create network namespaces (CI runs as root)")
	for _, tool := range []string{"ip", "tc", "curl", "udhcpc", "setsid"} {
		testenv.NeedTool(b, tool, "")
	}
	testenv.NeedFile(b, debianNBP, "ipxe")
	s := &compareSetup{bin: buildBootctl(b), dir: b.TempDir(), plant: p}
	c, err := Up(ctx, Spec{Name: p.Name + strconv.Itoa(os.Getpid()%10000), Machine: p.Machine, Scale: 1, StateDir: b.TempDir()}, zaptest.NewLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Down(context.Background()) })
	if err := c.StartServers(ctx, ServerOptions{Bootctl: s.bin, Mapping: "bcda", Files: p.Files}); err != nil {
		b.Fatal(err)
	}
	s.c = c
	s.writeFiles(b)
	for _, srv := range c.Servers {
		s.servers = append(s.servers, "http://"+nsForward(b, srv.Namespace, "127.0.0.1:80"))
		s.tokens = append(s.tokens, filepath.Join(c.dir(), "state-"+srv.Name, bootconfig.OperatorTokenFile))
	}
	return s
}

func (s *compareSetup) writeFiles(b testing.TB) {
	prefix := strings.TrimSuffix(s.c.Nodes[0].Namespace, s.c.Nodes[0].Name)
	power := strings.NewReplacer("@DIR@", s.dir, "@PREFIX@", prefix, "@TIMEOUT@", s.plant.Timeout,
		"@ATTEMPTS@", strconv.Itoa(s.plant.Attempts)).Replace(powerScript)
	script := testfix.WriteFile(b, filepath.Join(s.dir, "power.sh"), []byte(power))
	os.Chmod(script, 0o755)
	testfix.WriteFile(b, filepath.Join(s.dir, "firmware.sh"), []byte(firmwareScript))
	udhcpc := testfix.WriteFile(b, filepath.Join(s.dir, "udhcpc.script"), []byte(fleetUdhcpcScript))
	os.Chmod(udhcpc, 0o755)
	s.templates = testfix.WriteFile(b, filepath.Join(s.dir, "exec.yaml"), []byte(fmt.Sprintf(
		"on: %[1]s on {{.Node}}\noff: %[1]s off {{.Node}}\ncycle: %[1]s cycle {{.Node}}\nstatus: %[1]s status {{.Node}}\npxe: /bin/true\n", script)))
	s.creds = filepath.Join(s.dir, "bmc.yaml")
	os.WriteFile(s.creds, []byte("default: {user: none, password: none}\n"), 0o600)
	inv := "name,mac,ip,node,bmc,bmc_driver\n"
	var names []string
	for _, n := range s.c.Nodes {
		inv += fmt.Sprintf("%s,%s,%s,%s,%s-bmc,exec\n", n.Name, n.MAC, n.IP, n.Name, n.Name) // a BMC each, as servers have
		names = append(names, n.Name)
	}
	s.nodes = strings.Join(names, ",")
	testfix.WriteFile(b, filepath.Join(s.dir, "inventory.csv"), []byte(inv))
	mach, _ := s.c.Machine.MarshalYAMLText()
	testfix.WriteFile(b, filepath.Join(s.dir, "machine.yaml"), mach)
	cfg := "servers:\n"
	for _, srv := range s.c.Servers {
		cfg += fmt.Sprintf("  - {name: %s, address: %s}\n", srv.Name, srv.IP)
	}
	// The servers' image store and profile, as an admin's configuration names them: the dry run
	// reads the image size from the profile.
	cfg += fmt.Sprintf("images: %s\nprofile: default\n", filepath.Join(s.c.dir(), "images"))
	s.config = testfix.WriteFile(b, filepath.Join(s.dir, "boot.yaml"), []byte(cfg+"topology: machine.yaml\nmapping: bcda\ninventory: inventory.csv\n"))
}

// reset powers every node off, telling the servers (so that a later bootctl boot does not skip
// the nodes as healthy), forgets the events and lets the servers take the next DISCOVERs for
// new boots.
func (s *compareSetup) reset(b testing.TB, ctx context.Context) {
	args := []string{"power", "off", "all", "--config", s.config, "--credentials", s.creds, "--exec-templates", s.templates, "--fan-out", "256", "--interval", "0s"}
	for _, u := range s.servers {
		args = append(args, "--server", u)
	}
	for _, tok := range s.tokens {
		args = append(args, "--token-file", tok)
	}
	s.bootctl(b, ctx, args...)
	all := make([]int, len(s.c.Nodes))
	for i := range all {
		all[i] = i
		os.Remove(filepath.Join(s.dir, s.c.Nodes[i].Name+".events"))
	}
	if err := s.c.announceReboots(ctx, all); err != nil {
		b.Fatal(err)
	}
}

func (s *compareSetup) bootctl(b testing.TB, ctx context.Context, args ...string) string {
	out, err := exec.CommandContext(ctx, s.bin, args...).Output()
	var ee *exec.ExitError
	if err != nil && !(errorsAs(err, &ee) && ee.ExitCode() == 1) {
		var stderr []byte
		if ee != nil {
			stderr = ee.Stderr
		}
		b.Fatalf("bootctl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// powerOn powers nodes (names) on at once through the same plant bootctl boot uses.
func (s *compareSetup) powerOn(b testing.TB, ctx context.Context, names []string) {
	s.bootctl(b, ctx, "power", "on", strings.Join(names, ","), "--config", s.config, "--credentials", s.creds,
		"--exec-templates", s.templates, "--fan-out", "256", "--interval", "0s")
}

// wait waits until every node's firmware has reported or given up, at most limit.
func (s *compareSetup) wait(b testing.TB, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		done := 0
		for _, n := range s.c.Nodes {
			data, _ := os.ReadFile(filepath.Join(s.dir, n.Name+".events"))
			if strings.Contains(string(data), "reported ") || strings.Contains(string(data), "giveup ") {
				done++
			}
		}
		if done == len(s.c.Nodes) {
			return
		}
		time.Sleep(250 * time.Millisecond) // polls the event files the firmware processes write
	}
}

// measure reads every node's events: healthy and failed nodes, boot attempts, and the makespan
// from the first power-on to the last report.
func (s *compareSetup) measure(b testing.TB, way string) compareRun {
	r := compareRun{Way: way}
	first, last, lastOn := math.Inf(1), 0.0, 0.0
	for _, n := range s.c.Nodes {
		f, err := os.Open(filepath.Join(s.dir, n.Name+".events"))
		if err != nil {
			r.Failed++
			continue
		}
		reported, on := false, math.Inf(1)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 {
				continue
			}
			at, _ := strconv.ParseFloat(fields[1], 64)
			switch fields[0] {
			case "on":
				first, on = min(first, at), min(on, at)
			case "dhcp":
				r.Attempts++
			case "reported":
				reported, last = true, max(last, at)
			}
		}
		f.Close()
		if !math.IsInf(on, 1) {
			lastOn = max(lastOn, on)
		}
		if reported {
			r.Healthy++
		} else {
			r.Failed++
		}
	}
	r.Makespan, r.OnSpread = last-first, lastOn-first
	if r.Healthy == 0 {
		r.Makespan = math.NaN() // no node reported: no makespan
	}
	return r
}

// BenchmarkBootCompare boots the 128 nodes all at once, with fixed staggers, and with bootctl
// boot, and prints the three side by side with bootctl boot's dry-run prediction. Run:
// go test ./integration -run '^$' -bench BootCompare -benchtime 1x -v (as root; about 6 minutes).
func BenchmarkBootCompare(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	s := newCompareSetup(b, ctx, comparePlant128())
	var runs []compareRun
	predicted := s.bootRun(b, ctx, &runs)
	s.reset(b, ctx)
	names := strings.Split(s.nodes, ",")
	s.powerOn(b, ctx, names)
	s.wait(b, 3*time.Minute)
	runs = append(runs, s.report(s.measure(b, "all at once")))
	for _, st := range []struct {
		n int
		t time.Duration
	}{{4, time.Second}, {6, time.Second}, {12, 2 * time.Second}, {8, time.Second}} { // the servers take about 6 nodes/s
		s.reset(b, ctx)
		for i := 0; i < len(names); i += st.n {
			s.powerOn(b, ctx, names[i:min(i+st.n, len(names))])
			if i+st.n < len(names) {
				time.Sleep(st.t)
			}
		}
		s.wait(b, 3*time.Minute)
		runs = append(runs, s.report(s.measure(b, fmt.Sprintf("stagger %d every %v", st.n, st.t))))
	}
	fmt.Printf("%-22s %8s %7s %9s %10s\n", "way", "healthy", "failed", "attempts", "makespan")
	for _, r := range runs {
		fmt.Printf("%-22s %8d %7d %9d %9.1fs\n", r.Way, r.Healthy, r.Failed, r.Attempts, r.Makespan)
	}
	fmt.Printf("bootctl boot --dry-run predicted %.1f s\n", predicted)
}

// report prints one run's figures as soon as it is measured (a run takes up to minutes).
func (s *compareSetup) report(r compareRun) compareRun {
	fmt.Printf("%s: %d healthy, %d failed, %d attempts, makespan %.1f s\n", r.Way, r.Healthy, r.Failed, r.Attempts, r.Makespan)
	return r
}

// bootRun runs bootctl boot on every node (the cluster is fresh: nothing is healthy yet) and
// returns its dry run's predicted makespan.
func (s *compareSetup) bootRun(b *testing.B, ctx context.Context, runs *[]compareRun) float64 {
	// --health-time is the prediction's health time too (and its deadline's base): a container
	// node's script reports health right after its last file, so 1 s, where 10 s was a deadline.
	args := []string{"boot", "all", "--config", s.config, "--credentials", s.creds, "--exec-templates", s.templates,
		"--image-size", "4MiB", "--protocol", "http", "--floor-mbps", "6", "--post", "0s", "--dhcp-time", "300ms", "--health-time", "1s",
		"--fan-out", "64", "--interval", "0s", "--poll", "250ms", "--timeout", "10s"}
	out := s.bootctl(b, ctx, append(args, "--dry-run", "-o", "json")...)
	var plan struct {
		Predicted float64 `json:"predicted_seconds"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		b.Fatal(err)
	}
	live := append(args, "--journal", filepath.Join(s.dir, "run.journal"), "-o", "json")
	for _, u := range s.servers {
		live = append(live, "--server", u)
	}
	for _, t := range s.tokens {
		live = append(live, "--token-file", t)
	}
	s.bootctl(b, ctx, live...)
	s.wait(b, time.Minute)
	*runs = append(*runs, s.report(s.measure(b, "bootctl boot")))
	return plan.Predicted
}
