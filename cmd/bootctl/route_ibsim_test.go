package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/topology"
)

// The interop test: ibsim simulates the fabric, OpenSM (through libumad2sim) assigns its LIDs and
// then loads bootctl's dump with its file routing engine, and the diagnostics read the tables
// back from the simulated switches.

// umad2simGlob finds libumad2sim.so in Debian's multiarch library directory.
const umad2simGlob = "/usr/lib/*/umad2sim/libumad2sim.so"

// ibsimEnv is one running ibsim and the environment its clients need.
type ibsimEnv struct {
	dir   string
	env   []string // ibsim's socket and OpenSM's directories
	pre   string   // LD_PRELOAD=libumad2sim.so
	tools map[string]string
}

// needIBTool finds a program in PATH or /usr/sbin (where Debian puts opensm and the diagnostics,
// outside a non-root PATH).
func needIBTool(t *testing.T, name, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); fileExists(p) {
		return p
	}
	return testenv.NeedTool(t, name, pkg)
}

// startIBSim runs ibsim on net until the test ends (stopped by its pid), on a socket of its own.
func startIBSim(t *testing.T, net string) *ibsimEnv {
	t.Helper()
	e := &ibsimEnv{dir: t.TempDir(), tools: map[string]string{}}
	for name, pkg := range map[string]string{"ibsim": "ibsim-utils", "opensm": "opensm", "ibnetdiscover": "infiniband-diags",
		"dump_lfts": "infiniband-diags", "ibtracert": "infiniband-diags"} {
		e.tools[name] = needIBTool(t, name, pkg)
	}
	libs, _ := filepath.Glob(umad2simGlob)
	if len(libs) == 0 {
		testenv.NeedFile(t, umad2simGlob, "libumad2sim0 (with ibsim-utils)")
		return nil
	}
	e.pre = "LD_PRELOAD=" + libs[0]
	for _, d := range []string{"cache", "dumps"} {
		if err := os.Mkdir(filepath.Join(e.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sock := fmt.Sprintf("bfsim%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	e.env = append(os.Environ(), "IBSIM_SOCKNAME="+sock, "OSM_CACHE_DIR="+filepath.Join(e.dir, "cache"), "OSM_TMP_DIR="+e.dir)
	cmd := exec.Command(e.tools["ibsim"], "-s", "-n", net)
	cmd.Env = e.env
	cmd.Dir = e.dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		var log strings.Builder
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "Network simulator ready") {
				ready <- ""
				for sc.Scan() { // drain, so ibsim never blocks on its output
				}
				return
			}
		}
		ready <- log.String()
	}()
	select {
	case msg := <-ready:
		if msg != "" {
			t.Fatalf("ibsim %s exited:\n%s", net, msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("ibsim %s: not ready after 10 s", net)
	}
	return e
}

// run runs a tool against the simulated fabric (libumad2sim preloaded) and returns its stdout.
func (e *ibsimEnv) run(t *testing.T, tool string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.tools[tool], args...)
	cmd.Env = append(e.env, e.pre)
	cmd.Dir = e.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// opensmOnce runs one OpenSM sweep; with a dump, its file engine loads the tables from it.
func (e *ibsimEnv) opensmOnce(t *testing.T, dump string) {
	t.Helper()
	log := filepath.Join(e.dir, "opensm.log")
	// Long MAD timeouts: ibsim answers slowly on a loaded machine, and a sweep that gives up on a
	// switch leaves it unrouted.
	args := []string{"-o", "-f", log, "-D", "0x43", "--dump_files_dir", filepath.Join(e.dir, "dumps"), "-t", "1000", "--retries", "7"}
	if dump != "" {
		args = append(args, "-R", "file", "-U", dump)
	}
	_ = os.Remove(log)
	e.run(t, "opensm", args...)
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// OpenSM falls back to its default engine when the file engine fails: make sure it did not.
	if dump != "" && !bytes.Contains(data, []byte("file tables configured on all switches")) {
		t.Fatalf("OpenSM did not load %s with its file engine; its log:\n%s", dump, lastLines(data, 30))
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

var (
	lftSwitch = regexp.MustCompile(` guid 0x([0-9a-fA-F]+)`)
	lftEntry  = regexp.MustCompile(`^0x([0-9a-fA-F]{4}) (\d{3}) [#:]`)
)

// lftEntries reads "switch GUID -> LID -> port" from an LFT dump in OpenSM's layout or from
// dump_lfts (ibroute's layout).
func lftEntries(t *testing.T, text string) map[uint64]map[int]int {
	t.Helper()
	m := map[uint64]map[int]int{}
	var cur map[int]int
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "Unicast lids") {
			g := lftSwitch.FindStringSubmatch(line)
			if g == nil {
				t.Fatalf("switch line %q", line)
			}
			guid, _ := strconv.ParseUint(g[1], 16, 64)
			cur = map[int]int{}
			m[guid] = cur
			continue
		}
		if e := lftEntry.FindStringSubmatch(line); e != nil && cur != nil {
			lid, _ := strconv.ParseInt(e[1], 16, 32)
			port, _ := strconv.Atoi(e[2])
			cur[int(lid)] = port
		}
	}
	return m
}

// ibsimCase is one fabric of the interop test and the engines routed on it.
type ibsimCase struct {
	name   string
	spec   string
	faults string // file content, "" for none
	routes []ibsimRoute
}

// ibsimRoute routes the fabric one way: the topology given to bootctl (the ibnetdiscover output,
// the spec, or the net file) and where its LIDs come from.
type ibsimRoute struct {
	engine, topo, lids string // topo, lids: "disc", "spec", "net", "guid2lid" or ""
}

func TestRouteIBSimOpenSM(t *testing.T) {
	if testing.Short() {
		t.Skip("the ibsim/OpenSM interop test takes about a minute")
	}
	cases := []ibsimCase{
		{name: "2-level", spec: "pgft:2;4,4;1,4;1,1", routes: []ibsimRoute{
			{"dmodc", "disc", ""}, {"dmodk", "spec", "disc"}, {"minhop", "disc", ""}, {"updn", "disc", ""},
			{"dmodc", "net", "guid2lid"}, {"minhop", "net", "saquery"},
		}},
		{name: "3-level", spec: "pgft:3;4,4,4;1,4,4;1,1,1", routes: []ibsimRoute{
			{"dmodc", "disc", ""}, {"dmodk", "spec", "disc"}, {"minhop", "disc", ""}, {"updn", "disc", ""},
		}},
		{name: "degraded", spec: "pgft:3;4,4,4;1,4,4;1,1,1", faults: "switch s2-1\nswitch s3-5\nlink s1-0 s2-2\nlink s2-6 s3-10\n", routes: []ibsimRoute{
			{"dmodc", "disc", ""}, {"minhop", "disc", ""}, {"updn", "disc", ""}, {"dmodc", "net", "guid2lid"},
		}},
		// vtftr's failed leaves are absent from the simulated fabric; its second lane is in the
		// .sl/.sl2vl files, which --check reads back (OpenSM's file engine loads the LFTs only).
		{name: "fat2d-failed-leaves", spec: "fat2d:4,2", faults: "switch leaf1-0\nswitch leaf0-1\n", routes: []ibsimRoute{
			{"vtftr", "spec", "disc"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { testIBSimCase(t, tc) })
	}
}

func testIBSimCase(t *testing.T, tc ibsimCase) {
	dir := t.TempDir()
	net := filepath.Join(dir, "fabric.net")
	// The net file is written by a route with the case's first engine (minhop is not deadlock-free
	// on a 2-D fat-tree, and a route that fails its check exits 1).
	args := []string{"route", "-t", tc.spec, "-e", tc.routes[0].engine, "--net", net}
	if tc.faults != "" {
		args = append(args, "--faults", writeFile(t, "faults.txt", tc.faults))
	}
	if code, _, errs := bootctl(t, args...); code != 0 {
		t.Fatalf("route --net: exit %d: %s", code, errs)
	}
	sim := startIBSim(t, net)
	sim.opensmOnce(t, "") // assigns the LIDs (and writes guid2lid)
	files := map[string]string{
		"disc":     filepath.Join(dir, "ibnetdiscover.out"),
		"saquery":  filepath.Join(dir, "saquery.out"),
		"guid2lid": filepath.Join(sim.dir, "cache", "guid2lid"),
		"net":      net,
		"spec":     tc.spec,
	}
	if err := os.WriteFile(files["disc"], []byte(sim.run(t, "ibnetdiscover")), 0o644); err != nil {
		t.Fatal(err)
	}
	fab, err := topology.OpenFabric(files["disc"])
	if err != nil {
		t.Fatal(err)
	}
	writeSAQuery(t, sim, fab, files["saquery"])
	for _, r := range tc.routes {
		t.Run(r.engine+"-"+r.topo+"-"+r.lids, func(t *testing.T) {
			dump := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.dump", r.engine, r.topo, r.lids))
			args := []string{"route", "-t", files[r.topo], "-e", r.engine, "--dump", dump, "--check"}
			if r.tc(tc) {
				args = append(args, "--faults", writeFile(t, "faults.txt", tc.faults))
			}
			if r.lids != "" {
				args = append(args, "--lids", files[r.lids])
			}
			if code, _, errs := bootctl(t, args...); code != 0 {
				t.Fatalf("bootctl %s: exit %d: %s", strings.Join(args, " "), code, errs)
			}
			sim.opensmOnce(t, dump)
			checkLoaded(t, sim, fab, dump)
		})
	}
}

// tc says whether the route needs the faults: the spec is the intact fabric, the ibsim files are
// the degraded one already.
func (r ibsimRoute) tc(c ibsimCase) bool { return r.topo == "spec" && c.faults != "" }

// writeSAQuery asks OpenSM's SA for the NodeRecord of each LID (ibsim answers one record per
// query) and writes them as saquery prints them.
func writeSAQuery(t *testing.T, sim *ibsimEnv, fab *topology.Fabric, path string) {
	t.Helper()
	sim.tools["saquery"] = needIBTool(t, "saquery", "infiniband-diags")
	// saquery needs a running SA: OpenSM in the background for the queries, stopped by pid.
	ctx, cancel := context.WithCancel(context.Background())
	osm := exec.CommandContext(ctx, sim.tools["opensm"], "-f", filepath.Join(sim.dir, "opensm-sa.log"), "--dump_files_dir", filepath.Join(sim.dir, "dumps"))
	osm.Env = append(sim.env, sim.pre)
	osm.Dir = sim.dir // libumad2sim makes its fake sysfs (sys-PID) in the working directory
	if err := osm.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = osm.Wait() }()
	var out strings.Builder
	for v := range topology.VertexID(fab.NumVertices()) {
		lid := strconv.Itoa(fab.LID(v))
		for try := 0; ; try++ {
			ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
			cmd := exec.CommandContext(ctx2, sim.tools["saquery"], "NR", lid)
			cmd.Env = append(sim.env, sim.pre)
			cmd.Dir = sim.dir
			b, err := cmd.Output()
			cancel2()
			if err == nil && bytes.Contains(b, []byte("NodeRecord dump:")) {
				out.Write(b)
				break
			}
			if try == 50 { // OpenSM's SA answers once its first sweep is done
				t.Fatalf("saquery NR %s: %v %s", lid, err, b)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkLoaded compares the tables OpenSM loaded with the dump: OpenSM's own dump of them byte for
// byte, dump_lfts' reading of the switches entry for entry, and ibtracert's paths with the dump's.
func checkLoaded(t *testing.T, sim *ibsimEnv, fab *topology.Fabric, dump string) {
	t.Helper()
	ours, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.ReadFile(filepath.Join(sim.dir, "dumps", "opensm-lfts.dump"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(ours), string(theirs)); diff != "" {
		t.Errorf("OpenSM's opensm-lfts.dump differs from bootctl's dump (-bootctl +opensm):\n%s", diff)
	}
	want := lftEntries(t, string(ours))
	got := lftEntries(t, sim.run(t, "dump_lfts"))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dump_lfts read back other tables (-bootctl +fabric):\n%s", diff)
	}
	tracePaths(t, sim, fab, want)
}

var traceHop = regexp.MustCompile(`^\[(\d+)\] -> (?:switch|ca) port \{0x([0-9a-fA-F]+)\}\[(\d+)\]`)

// tracePaths follows a sample of CA-to-CA paths with ibtracert and checks each hop against the
// dump: the out port is the dump's entry for the destination LID at that switch.
func tracePaths(t *testing.T, sim *ibsimEnv, fab *topology.Fabric, lft map[uint64]map[int]int) {
	t.Helper()
	nodes := fab.Nodes()
	checked := 0
	for i := 0; i < 6 && len(nodes) > 1; i++ {
		src, dst := nodes[(i*7)%len(nodes)], nodes[(i*13+len(nodes)/2+1)%len(nodes)]
		if src == dst {
			continue
		}
		out := sim.run(t, "ibtracert", strconv.Itoa(fab.LID(src)), strconv.Itoa(fab.LID(dst)))
		var hops int
		var prev uint64 // the switch the last hop entered
		for _, line := range strings.Split(out, "\n") {
			h := traceHop.FindStringSubmatch(line)
			if h == nil {
				continue
			}
			port, _ := strconv.Atoi(h[1])
			if prev != 0 {
				checked++
				if p, ok := lft[prev][fab.LID(dst)]; !ok || p != port {
					t.Errorf("ibtracert %s -> %s left switch %#x by port %d; the dump says %d (entry %v)", fab.Desc(src), fab.Desc(dst), prev, port, p, ok)
				}
			}
			prev, _ = strconv.ParseUint(h[2], 16, 64)
			hops++
		}
		if hops < 2 || !strings.Contains(out, fmt.Sprintf("%q", fab.Desc(dst))) {
			t.Errorf("ibtracert %s -> %s did not reach it:\n%s", fab.Desc(src), fab.Desc(dst), out)
		}
	}
	if checked == 0 {
		t.Errorf("ibtracert: no switch hop compared")
	}
}
