package power

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeBMC is a Controller that records when it was asked, and fails as told.
type fakeBMC struct {
	mu    sync.Mutex
	state State
	calls []time.Time
	err   error
}

func (f *fakeBMC) act(st State) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, time.Now())
	if f.err != nil {
		return f.err
	}
	if st != "" {
		f.state = st
	}
	return nil
}
func (f *fakeBMC) On(context.Context) error                { return f.act(On) }
func (f *fakeBMC) Off(context.Context) error               { return f.act(Off) }
func (f *fakeBMC) Cycle(context.Context) error             { return f.act(On) }
func (f *fakeBMC) PXENext(context.Context, BootMode) error { return f.act("") }
func (f *fakeBMC) Status(context.Context) (State, error)   { err := f.act(""); return f.state, err }

// TestRun: results in the targets' order, failures classified without stopping the others, and
// nodes sharing a BMC asked at least MinInterval apart.
func TestRun(t *testing.T) {
	shared := &fakeBMC{state: Off}
	down := &fakeBMC{err: &Error{Class: Unreachable, Op: "on", Err: errors.New("no answer")}}
	other := &fakeBMC{state: Off}
	targets := []Target{
		{Node: "n1", BMC: "chassis1", Controller: shared},
		{Node: "n2", BMC: "chassis1", Controller: shared},
		{Node: "n3", BMC: "bmc3", Controller: down},
		{Node: "n4", BMC: "chassis1", Controller: shared},
		{Node: "n5", BMC: "bmc5", Controller: other},
	}
	var progress []int
	start := time.Now()
	res := Run(context.Background(), targets, OpOn, RunOptions{FanOut: 4, MinInterval: 50 * time.Millisecond,
		Progress: func(done, total int) { progress = append(progress, done) }})
	want := []Result{
		{Node: "n1", BMC: "chassis1", Op: OpOn}, {Node: "n2", BMC: "chassis1", Op: OpOn},
		{Node: "n3", BMC: "bmc3", Op: OpOn, Class: Unreachable, Error: "power on: unreachable: no answer"},
		{Node: "n4", BMC: "chassis1", Op: OpOn}, {Node: "n5", BMC: "bmc5", Op: OpOn},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if len(shared.calls) != 3 || other.state != On || len(progress) != 5 || progress[4] != 5 {
		t.Fatalf("calls %d, n5 %v, progress %v", len(shared.calls), other.state, progress)
	}
	// The k-th slot on chassis1 is at least k gaps after the run's start and no call comes before
	// its slot; a call may come late (scheduling), so gaps between calls are not checked.
	calls := slices.Clone(shared.calls)
	slices.SortFunc(calls, func(a, b time.Time) int { return a.Compare(b) })
	for k, at := range calls {
		if d := at.Sub(start); d < time.Duration(k)*50*time.Millisecond {
			t.Errorf("chassis1's action %d came %v after the start, before its slot at %v", k, d, time.Duration(k)*50*time.Millisecond)
		}
	}
	st := Run(context.Background(), targets[4:], OpStatus, RunOptions{})
	if st[0].State != On || st[0].Class != "" {
		t.Errorf("status: %+v", st[0])
	}
}

// TestRunCancelled: nodes not started when ctx ends are reported, classified, not skipped.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := Run(ctx, []Target{{Node: "n1", BMC: "b", Controller: &fakeBMC{}}, {Node: "n2", BMC: "b", Controller: &fakeBMC{}}}, OpOff, RunOptions{FanOut: 1})
	for _, r := range res {
		if r.Class != TimedOut || r.Error == "" {
			t.Errorf("%+v", r)
		}
	}
}

func TestParseOp(t *testing.T) {
	if op, err := ParseOp("cycle"); op != OpCycle || err != nil {
		t.Errorf("cycle: %v %v", op, err)
	}
	if _, err := ParseOp("reboot"); err == nil || !strings.Contains(err.Error(), "want on, off, cycle, status or pxe") {
		t.Errorf("reboot: %v", err)
	}
}

// TestExec runs real commands: the template's words become arguments one by one, the password
// comes in the environment and never in an argument or an error, and the status is read from the
// output's last word.
func TestExec(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := filepath.Join(dir, "bmc.sh")
	os.WriteFile(script, []byte(`#!/bin/sh
printf '%s|' "$@" >> `+log+`
echo "pw=$IPMI_PASSWORD" >> `+log+`
case $1 in
status) echo "Chassis Power is on";;
fail) echo "refused for $BMC_PASSWORD" >&2; exit 3;;
sleep) sleep 5;;
garbled) echo "maybe";;
esac
`), 0o755)
	const pw = "s3cret pass"
	e, err := NewExec(ExecTemplates{On: script + " on {{.Node}} {{.BMC}}", Status: script + " status", PXE: script + " pxe {{.Mode}}",
		Off: script + " fail", Cycle: script + " sleep"}, ExecVars{Node: "node 1", BMC: "10.0.0.1", User: "admin"}, pw)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.On(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Status(ctx); st != On || err != nil {
		t.Errorf("status: %v %v", st, err)
	}
	if err := e.PXENext(ctx, UEFI); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(log)
	if want := "on|node 1|10.0.0.1|pw=" + pw + "\nstatus|pw=" + pw + "\npxe|uefi|pw=" + pw + "\n"; string(got) != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
	err = e.Off(ctx)
	if Classify(err) != Failed || strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "refused for ***") {
		t.Errorf("failing command: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := e.Cycle(tctx); Classify(err) != TimedOut {
		t.Errorf("slow command: %v (%s)", err, Classify(err))
	}
	g, _ := NewExec(ExecTemplates{Status: script + " garbled"}, ExecVars{}, "")
	if _, err := g.Status(ctx); err == nil || !strings.Contains(err.Error(), `"maybe" does not end in on or off`) {
		t.Errorf("garbled status: %v", err)
	}
	if err := g.On(ctx); Classify(err) != Failed || !strings.Contains(err.Error(), "no command template") {
		t.Errorf("no template: %v", err)
	}
	if _, err := NewExec(ExecTemplates{On: "x {{.Nope"}, ExecVars{}, ""); err == nil {
		t.Error("bad template parsed")
	}
}

// TestCredentials: entries by reference; a file others may read is refused; a malformed file
// names its line and never the password it could not read.
func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), mode)
		os.Chmod(p, mode)
		return p
	}
	c, err := LoadCredentials(write("good", "default: {user: admin, password: pw1}\nrack7: {user: root, password: pw2}\n", 0o600))
	if err != nil {
		t.Fatal(err)
	}
	if cr, err := c.Get("rack7"); err != nil || cr.User != "root" || cr.Password != "pw2" || strings.Contains(cr.String(), "pw2") {
		t.Errorf("rack7: %v %v", cr, err)
	}
	if _, err := c.Get("rack9"); err == nil || !strings.Contains(err.Error(), `no entry "rack9" (entries: [default rack7])`) {
		t.Errorf("missing ref: %v", err)
	}
	for _, tc := range []struct {
		name, text string
		mode       os.FileMode
		want       string
	}{
		{"open", "default: {user: a, password: b}\n", 0o644, "mode 0644 lets others read it"},
		{"nouser", "default: {password: hunter2}\n", 0o600, "default: no user"},
		{"badyaml", "default:\n  user: a\n  password: [hunter2\n", 0o600, "want a map of NAME"},
		{"unknownfield", "default: {user: a, pasword: hunter2}\n", 0o600, ":1: want a map"},
	} {
		_, err := LoadCredentials(write(tc.name, tc.text, tc.mode))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: %v, want an error naming the file and %q, without the password", tc.name, err, tc.want)
		}
	}
}

// TestRunNoInterval: NoInterval asks one BMC again at once, and the default spaces its actions.
func TestRunNoInterval(t *testing.T) {
	for _, tc := range []struct {
		gap      time.Duration
		min, max time.Duration
	}{{NoInterval, 0, 1500 * time.Millisecond}, {200 * time.Millisecond, 400 * time.Millisecond, 5 * time.Second}} { // the 1 s default would take 2 s
		targets := make([]Target, 3)
		for i := range targets {
			targets[i] = Target{Node: fmt.Sprint("n", i), BMC: "shared", Controller: nopController{}}
		}
		start := time.Now()
		Run(context.Background(), targets, OpOn, RunOptions{MinInterval: tc.gap})
		if d := time.Since(start); d < tc.min || d > tc.max {
			t.Errorf("gap %v: 3 actions on one BMC took %v, want %v to %v", tc.gap, d, tc.min, tc.max)
		}
	}
}

type nopController struct{}

func (nopController) On(context.Context) error                { return nil }
func (nopController) Off(context.Context) error               { return nil }
func (nopController) Cycle(context.Context) error             { return nil }
func (nopController) Status(context.Context) (State, error)   { return On, nil }
func (nopController) PXENext(context.Context, BootMode) error { return nil }
