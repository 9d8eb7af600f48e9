package main

import (
	"bytes"
	"context"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootrun"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/power"

	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/testfix"
)

// bootConfig writes a configuration of two boot servers on the mini machine whose inventory is
// the power fixture's, and an image store whose default profile is a 3 MB kernel and a 1 MB
// initrd.
func (f *powerFixture) bootConfig(t *testing.T) string {
	t.Helper()
	st, err := images.Create(filepath.Join(f.dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	kernel := testfix.WriteFile(t, filepath.Join(f.dir, "vmlinuz"), make([]byte, 3e6))
	initrd := testfix.WriteFile(t, filepath.Join(f.dir, "initrd.img"), make([]byte, 1e6))
	if _, err := st.Add(images.Profile{Name: "default", Kernel: "vmlinuz", Initrd: "initrd.img"},
		map[string]string{"vmlinuz": kernel, "initrd.img": initrd}); err != nil {
		t.Fatal(err)
	}
	return testfix.WriteFile(t, filepath.Join(f.dir, "boot.yaml"), []byte("servers:\n  - {name: bs0, address: 10.0.0.1}\n"+
		"  - {name: bs1, address: 10.0.0.2}\ntopology: mini\nmapping: bcda\ninventory: inv.csv\nimages: images\n"))
}

// TestBootImageSize: without --image-size the model takes the kernel + initrd of the nodes'
// profile in the store and says so; --image-size wins; a profile the store lacks is bad input.
func TestBootImageSize(t *testing.T) {
	f := newPowerFixture(t)
	cfg := f.bootConfig(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		args      []string
		bytes     float64
		fromWords string
	}{
		{"profile", nil, 4e6, "profile default in the image store"},
		{"flag", []string{"--image-size", "20MB"}, 20e6, "--image-size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"boot", "--dry-run", "--config", cfg, "-o", "json", "s0-b0-n[0-3]"}, tc.args...)
			code, out, errs := runBootctl(t, ctx, args...)
			if code != 0 {
				t.Fatalf("dry run: %d %s", code, errs)
			}
			plan := decodeJSONOut[bootrun.Plan](t, out)
			if plan.ImageBytes != tc.bytes || !strings.Contains(plan.ImageFrom, tc.fromWords) {
				t.Errorf("image %v from %q; want %v from %q", plan.ImageBytes, plan.ImageFrom, tc.bytes, tc.fromWords)
			}
		})
	}
	code, table, _ := runBootctl(t, ctx, "boot", "--dry-run", "--config", cfg, "s0-b0-n[0-3]")
	if code != 0 || !strings.Contains(table, "image 4 MB (kernel + initrd) from profile default") {
		t.Errorf("table:\n%s", table)
	}
	noImages := testfix.WriteFile(t, filepath.Join(f.dir, "noimages.yaml"), []byte("servers:\n  - {name: bs0, address: 10.0.0.1}\n"+
		"topology: mini\ninventory: inv.csv\n"))
	code, out, errs := runBootctl(t, ctx, "boot", "--dry-run", "--config", noImages, "-o", "json", "s0-b0-n0")
	if plan := decodeJSONOut[bootrun.Plan](t, out); code != 0 || plan.ImageBytes != 50e6 || !strings.Contains(plan.ImageFrom, "names no image store") {
		t.Errorf("no store named: exit %d %s, image %v from %q", code, errs, plan.ImageBytes, plan.ImageFrom)
	}
	noProfile := testfix.WriteFile(t, filepath.Join(f.dir, "other.yaml"), []byte("servers:\n  - {name: bs0, address: 10.0.0.1}\n"+
		"topology: mini\ninventory: inv.csv\nimages: images\nprofile: gpu\n"))
	wantBadInput(t, ctx, []string{"boot", "--dry-run", "--config", noProfile, "s0-b0-n0"}, `node s0-b0-n0: profile "gpu"`)
	noStore := testfix.WriteFile(t, filepath.Join(f.dir, "nostore.yaml"), []byte("servers:\n  - {name: bs0, address: 10.0.0.1}\n"+
		"topology: mini\ninventory: inv.csv\nimages: missing\n"))
	wantBadInput(t, ctx, []string{"boot", "--dry-run", "--config", noStore, "s0-b0-n0"}, "no image store")
}

// TestBootDryRun predicts a run: the same twice, byte for byte, with every node in the schedule
// and the caps of a 400 MB image on mini's 100 Mb/s links.
func TestBootDryRun(t *testing.T) {
	f := newPowerFixture(t)
	cfg := f.bootConfig(t)
	ctx := context.Background()
	args := []string{"boot", "--dry-run", "--config", cfg, "--image-size", "400MB", "--post", "5s", "-o", "json", "s0-b0-n[0-3]"}
	code, out, errs := runBootctl(t, ctx, args...)
	if code != 0 {
		t.Fatalf("dry run: %d %s", code, errs)
	}
	_, again, _ := runBootctl(t, ctx, args...)
	if out != again {
		t.Error("two dry runs differ")
	}
	plan := decodeJSONOut[bootrun.Plan](t, out)
	if plan.Nodes != 4 || len(plan.Schedule) != 4 || len(plan.Caps) == 0 || plan.PeakInFlight != plan.Caps[0].Nodes {
		t.Fatalf("plan %+v", plan)
	}
	// One board, one server link: 400 MB at the floor of 53 Mb/s (files in 60 s) fit one node at
	// a time in a 100 Mb/s link, so the nodes power on one after another.
	for i := 1; i < len(plan.Schedule); i++ {
		if plan.Schedule[i].PowerOn < plan.Schedule[i-1].Files {
			t.Errorf("node %s powered on at %.1f s, before %s had its files (%.1f s)", plan.Schedule[i].Node,
				plan.Schedule[i].PowerOn, plan.Schedule[i-1].Node, plan.Schedule[i-1].Files)
		}
	}
	code, table, _ := runBootctl(t, ctx, append(args[:len(args)-3], "s0-b0-n[0-3]")...)
	if code != 0 || !strings.Contains(table, "predicted makespan") || !strings.Contains(table, "N5 bs0>cascade0") {
		t.Errorf("table:\n%s", table)
	}
}

// TestBootBadInput: every bad flag, node, file or inventory row is one line, exit 2, and no BMC
// is asked.
func TestBootBadInput(t *testing.T) {
	f := newPowerFixture(t)
	cfg := f.bootConfig(t)
	open := filepath.Join(f.dir, "open.yaml")
	os.WriteFile(open, []byte("default: {user: a, password: b}\n"), 0o644)
	os.Chmod(open, 0o644)
	testfix.WriteFile(t, filepath.Join(f.dir, "bad.csv"), []byte("name,mac,bmc,bmc_driver\ns0-b0-n0,52:54:00:00:00:01,10.1.0.1,redfsh\n"))
	badCfg := testfix.WriteFile(t, filepath.Join(f.dir, "badcfg.yaml"), []byte("servers:\n  - {name: bs0, address: 10.0.0.1}\ntopology: mini\ninventory: bad.csv\n"))
	journal := filepath.Join(f.dir, "run.journal")
	token := testfix.WriteFile(t, filepath.Join(f.dir, "operator.token"), []byte("0123456789abcdef0123456789abcdef\n"))
	os.Chmod(token, 0o600)
	live := func(creds string, more ...string) []string {
		return append([]string{"boot", "--config", cfg, "--credentials", creds, "--exec-templates", f.templates,
			"--journal", journal, "--server", "http://127.0.0.1:9", "--token-file", token}, more...)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown node", live(f.creds, "s0-b0-n0,s9-b0-n0"), `NODES: "s9-b0-n0": not in the inventory`},
		{"bad range", live(f.creds, "s0-b0-n[3-1]"), "runs backwards"},
		{"no bmc", live(f.creds, "s0-b0-n[0-3]"), "inv.csv:5: node s0-b0-n3 has no bmc"},
		{"credentials readable by others", live(open, "s0-b0-n0"), "mode 0644 lets others read it"},
		{"driver misspelt", []string{"boot", "--config", badCfg, "--dry-run", "s0-b0-n0"}, `bad.csv:2: bmc_driver: "redfsh" is not a driver`},
		{"no journal", []string{"boot", "--config", cfg, "--credentials", f.creds, "--server", "http://127.0.0.1:9", "s0-b0-n0"}, "give --journal FILE"},
		{"no config", []string{"boot", "--dry-run", "s0-b0-n0"}, "--config: required"},
		{"no nodes", []string{"boot", "--dry-run", "--config", cfg}, "give the NODES"},
		{"unknown group", []string{"boot", "--dry-run", "--config", cfg, "--group", "gpu"}, `in group "gpu"`},
		{"empty argument", []string{"boot", "--dry-run", "--config", cfg, ""}, "NODES: argument 1 is empty"},
		{"bad floor", live(f.creds, "--floor-mbps", "-1", "s0-b0-n0"), "floor -1 Mb/s"},
		{"bad attempts", live(f.creds, "--max-attempts", "0", "s0-b0-n0"), "--max-attempts must be at least 1"},
		{"bad protocol", live(f.creds, "--protocol", "nfs", "s0-b0-n0"), `--protocol: "nfs": want http or tftp`},
		{"bad factor", live(f.creds, "--deadline-factor", "0", "s0-b0-n0"), "--deadline-factor: 0"},
		// Without the token no node could be armed: refused before any BMC is asked (the
		// fixture's exec driver logs every call, checked below).
		{"no token", []string{"boot", "--config", cfg, "--credentials", f.creds, "--exec-templates", f.templates,
			"--journal", journal, "--server", "http://127.0.0.1:9", "s0-b0-n0"}, "--token-file: required"},
		{"bad on-failure", live(f.creds, "--on-failure", "panic", "s0-b0-n0"), `--on-failure: "panic": want backoff or pause`},
		{"negative patience", live(f.creds, "--patience", "-1s", "s0-b0-n0"), "--patience not negative"},
		{"resume without a journal", live(f.creds, "--resume", "s0-b0-n0"), "run.journal: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantBadInput(t, ctx, tc.args, tc.want) })
	}
	if c := f.calls(t); c != "" {
		t.Errorf("a BMC was asked after bad input:\n%s", c)
	}
	if _, err := os.Stat(journal); err == nil {
		t.Error("a journal was left by a run refused for bad input")
	}
}

// tickPlant is boot servers and machines in one for a live run: a machine powered on asks for
// its address after post, then reaches each next state a tick later.
type tickPlant struct {
	mu         sync.Mutex
	states     map[string]bootrun.NodeState
	post, tick time.Duration
	wg         sync.WaitGroup
}

func (p *tickPlant) States(context.Context) (map[string]bootrun.NodeState, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.states), nil
}

func (p *tickPlant) ArmReboot(context.Context, string, string) error { return nil }

func (p *tickPlant) boot(name string) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		time.Sleep(p.post)
		for _, s := range []nodestate.State{nodestate.Discover, nodestate.NBP, nodestate.Kernel, nodestate.Initrd, nodestate.Healthy} {
			p.mu.Lock()
			p.states[name] = bootrun.NodeState{State: s, Attempt: 1}
			p.mu.Unlock()
			time.Sleep(p.tick)
		}
	}()
}

type tickBMC struct {
	p    *tickPlant
	name string
}

func (b tickBMC) On(context.Context) error                      { b.p.boot(b.name); return nil }
func (b tickBMC) Cycle(context.Context) error                   { b.p.boot(b.name); return nil }
func (b tickBMC) Off(context.Context) error                     { return nil }
func (b tickBMC) Status(context.Context) (power.State, error)   { return power.On, nil }
func (b tickBMC) PXENext(context.Context, power.BootMode) error { return nil }

// TestBootCalibrate: a live run of the mini machine's four nodes writes its journal; the dry
// run calibrated by it predicts that run's makespan closer than the uncalibrated one, and says
// what it fitted. A damaged journal, one of version 1 and one of too few nodes are bad input.
func TestBootCalibrate(t *testing.T) {
	f := newPowerFixture(t)
	cfg := f.bootConfig(t)
	names := []string{"s0-b0-n0", "s0-b0-n1", "s0-b0-n2", "s0-b0-n3"}
	plant := &tickPlant{states: map[string]bootrun.NodeState{}, post: 300 * time.Millisecond, tick: 100 * time.Millisecond}
	defer plant.wg.Wait()
	nodes := make([]bootrun.Node, len(names))
	targets := make([]power.Target, len(names))
	for i, n := range names {
		nodes[i] = bootrun.Node{Name: n, Resources: []int32{0}}
		targets[i] = power.Target{Node: n, BMC: "bmc-" + n, Controller: tickBMC{plant, n}}
	}
	ctl, err := bootrun.New(bootrun.Config{Caps: []int{2}, Expect: bootrun.Expect{Power: 5, Firmware: 5, Transfer: 5, Health: 5}, MaxAttempts: 1}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(f.dir, "run.journal")
	live := &bootrun.Live{Controller: ctl, Names: names, Power: targets, Servers: plant, Poll: 10 * time.Millisecond, PowerOpts: power.RunOptions{FanOut: 4}}
	if live.Journal, err = bootrun.CreateJournal(journal, names); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	recs, err := live.Run(ctx)
	live.Journal.Close()
	if err != nil {
		t.Fatal(err)
	}
	measured := bootrun.ResultOf(recs, nil, "").MakespanSeconds
	predict := func(more ...string) bootrun.Plan {
		t.Helper()
		code, out, errs := runBootctl(t, ctx, append([]string{"boot", "--dry-run", "--config", cfg, "-o", "json", "s0-b0-n[0-3]"}, more...)...)
		if code != 0 {
			t.Fatalf("dry run %v: %d %s", more, code, errs)
		}
		return decodeJSONOut[bootrun.Plan](t, out)
	}
	plain, cal := predict(), predict("--calibrate", journal)
	t.Logf("measured makespan %.3f s; predicted %.3f s uncalibrated, %.3f s calibrated (model %+v)", measured, plain.PredictedSeconds, cal.PredictedSeconds, cal.Model)
	if math.Abs(cal.PredictedSeconds-measured) >= math.Abs(plain.PredictedSeconds-measured) {
		t.Errorf("calibrated prediction %.3f s no closer to the measured %.3f s than the uncalibrated %.3f s", cal.PredictedSeconds, measured, plain.PredictedSeconds)
	}
	if c := cal.Calibration; c == nil || c.Nodes != 4 || c.Post.Samples != 4 || cal.Model.PostSeconds != bootrun.Round3(c.Post.Median) ||
		c.Post.Median < 0.2 || c.Health.Median < 0.05 || c.MakespanSeconds > measured || c.MakespanSeconds < measured-0.5 {
		t.Errorf("calibration %+v, model %+v", c, cal.Model)
	}
	// A flag given wins over the fit.
	if p := predict("--calibrate", journal, "--post", "7s"); p.Model.PostSeconds != 7 {
		t.Errorf("--post 7s with --calibrate: model %+v", p.Model)
	}
	// Uncalibrated, the dry run names the times it assumed; a dry run with the --journal of the
	// run it repeats is calibrated by it, as with --calibrate.
	if !slices.Equal(plain.Model.Assumed, []string{"post", "dhcp", "health"}) || cal.Model.Assumed != nil {
		t.Errorf("assumed: uncalibrated %v, calibrated %v", plain.Model.Assumed, cal.Model.Assumed)
	}
	if p := predict("--post", "7s", "--health-time", "2s"); !slices.Equal(p.Model.Assumed, []string{"dhcp"}) || p.Model.HealthSeconds != 2 {
		t.Errorf("--post and --health-time given: model %+v", p.Model)
	}
	if p := predict("--journal", journal); p.PredictedSeconds != cal.PredictedSeconds || p.Calibration == nil || p.Model.NotCalibrated != "" {
		t.Errorf("dry run with --journal: predicted %.3f s, model %+v; want %.3f s as with --calibrate", p.PredictedSeconds, p.Model, cal.PredictedSeconds)
	}
	if p := predict("--journal", filepath.Join(f.dir, "next.journal")); p.PredictedSeconds != plain.PredictedSeconds || p.Calibration != nil {
		t.Errorf("dry run with a --journal not written yet: predicted %.3f s, want %.3f s", p.PredictedSeconds, plain.PredictedSeconds)
	}
	code, table, _ := runBootctl(t, ctx, "boot", "--dry-run", "--config", cfg, "--calibrate", journal, "s0-b0-n[0-3]")
	if code != 0 || !strings.Contains(table, "calibrated from 1 journal(s), 4 node boots") || !strings.Contains(table, "health") {
		t.Errorf("table:\n%s", table)
	}

	// simulate takes the DHCP and health times it shares with boot from the same journal.
	type simOut struct {
		Calibration *bootrun.Calibration `json:"calibration"`
		Runs        []struct {
			Result struct {
				BatchSeconds float64 `json:"batch_seconds"`
			} `json:"result"`
		} `json:"runs"`
	}
	simulate := func(more ...string) simOut {
		t.Helper()
		code, out, errs := simCtl(t, append([]string{"--topology", "mini", "--batch", "4", "--files", "image=4MB:none", "-o", "json"}, more...)...)
		if code != 0 {
			t.Fatalf("simulate %v: %d %s", more, code, errs)
		}
		return decodeJSONOut[simOut](t, out)
	}
	simPlain, simCal, simGiven := simulate(), simulate("--calibrate", journal), simulate("--calibrate", journal, "--dhcp-time", "1s", "--health", "100ms")
	t.Logf("simulate: %.3f s uncalibrated, %.3f s calibrated", simPlain.Runs[0].Result.BatchSeconds, simCal.Runs[0].Result.BatchSeconds)
	// The fitted DHCP time (about 0.1 s) replaces the default 1 s; flags given win.
	if simCal.Calibration == nil || simCal.Calibration.Nodes != 4 || simPlain.Calibration != nil ||
		!(simCal.Runs[0].Result.BatchSeconds < simPlain.Runs[0].Result.BatchSeconds-0.5) ||
		simGiven.Runs[0].Result.BatchSeconds != simPlain.Runs[0].Result.BatchSeconds {
		t.Errorf("simulate: plain %+v, calibrated %+v, flags given %+v", simPlain, simCal, simGiven)
	}
	wantBadInput(t, ctx, []string{"simulate", "--topology", "mini", "--calibrate", filepath.Join(f.dir, "nope.journal")}, "--calibrate: journal: open")

	torn, _ := os.ReadFile(journal)
	damaged := testfix.WriteFile(t, filepath.Join(f.dir, "damaged.journal"), append(slices.Clone(torn[:bytes.IndexByte(torn, '\n')+1]), "{not json\n{}\n"...))
	v1 := testfix.WriteFile(t, filepath.Join(f.dir, "v1.journal"), []byte(`{"nodes":["s0-b0-n0"]}`+"\n"))
	few := testfix.WriteFile(t, filepath.Join(f.dir, "few.journal"), []byte(`{"version":2,"nodes":["s0-b0-n0"]}`+"\n"))
	// A --journal that cannot calibrate leaves the dry run uncalibrated and says why.
	if p := predict("--journal", few); p.Calibration != nil || !strings.Contains(p.Model.NotCalibrated, "a calibration needs at least 3") {
		t.Errorf("dry run with --journal of too few nodes: model %+v", p.Model)
	}
	code, table, _ = runBootctl(t, ctx, "boot", "--dry-run", "--config", cfg, "s0-b0-n[0-3]")
	if code != 0 || !strings.Contains(table, "assumed, not measured: post, dhcp, health") {
		t.Errorf("uncalibrated table:\n%s", table)
	}
	for _, tc := range []struct{ name, journal, want string }{
		{"damaged", damaged, "damaged.journal:2"},
		{"version 1", v1, "format version 1 records no phase times"},
		{"too few nodes", few, "0 nodes booted to healthy in all; a calibration needs at least 3"},
		{"missing", filepath.Join(f.dir, "nope.journal"), "nope.journal: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantBadInput(t, ctx, []string{"boot", "--dry-run", "--config", cfg, "--calibrate", tc.journal, "s0-b0-n0"}, tc.want)
		})
	}
}
