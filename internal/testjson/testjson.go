// Package testjson reads the events of `go test -json` and writes what `go test` without -json
// and -v prints (each package's ok or FAIL line, build errors, a failed test's output in full),
// while it records how long each top-level test ran, so that a test run can say where its time
// went without printing every passing test's log.
package testjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Event is one line of `go test -json` (cmd/test2json's TestEvent, with the build events of
// `go test -json` since Go 1.24).
type Event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build-output and build-fail events
	Test       string
	Elapsed    float64
	Output     string
}

// Result is how a top-level test ended and how long it ran.
type Result struct {
	Package string
	Test    string
	Action  string // pass, fail or skip
	Seconds float64
	// Parallel is set when the test paused for t.Parallel: its time overlapped other tests'.
	Parallel bool
}

// Package is how a package's test binary ended and how long it ran.
type Package struct {
	Name    string
	Action  string
	Seconds float64
}

// Summary is what a run's events said about the tests' times.
type Summary struct {
	Tests    []Result
	Packages []Package
}

type testKey struct{ pkg, test string }

// Filter turns a stream of events into go test's plain output. A package's output is held until
// its end, as go test does without -v: a top-level test that failed has its output (its
// subtests' with it, in the order it came) written when it ends; a package that passed or has no
// tests gets its summary line alone; a package that failed gets what remains (the output of a
// test that never ended, a timeout's panic) and its FAIL lines.
type Filter struct {
	w io.Writer
	// Verbose writes every output line at once, as `go test -v` does.
	verbose  bool
	held     map[string][]heldLine // by package, in the order the lines came
	parallel map[testKey]bool
	started  map[testKey]time.Time // top-level tests running, by when they started
	sum      Summary
}

// heldLine is a line of output and the top-level test it belongs to ("": the package's own).
type heldLine struct {
	test, text string
}

// NewFilter returns a Filter writing to w; verbose writes every test's output, as -v does.
func NewFilter(w io.Writer, verbose bool) *Filter {
	return &Filter{w: w, verbose: verbose, held: map[string][]heldLine{}, parallel: map[testKey]bool{}, started: map[testKey]time.Time{}}
}

// Copy reads events from r until its end, writes the plain output to w and returns the summary.
// A line that is not an event (a tool's own message) is written as it is.
func Copy(w io.Writer, r io.Reader, verbose bool) (Summary, error) {
	f := NewFilter(w, verbose)
	sc := bufio.NewScanner(r)
	// A test's output line can be long (a serial log in one t.Log call is split by lines, but a
	// JSON document logged whole is not).
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if err := f.Line(sc.Bytes()); err != nil {
			return f.sum, err
		}
	}
	if err := sc.Err(); err != nil {
		return f.sum, fmt.Errorf("reading go test -json output: %w", err)
	}
	return f.sum, f.Close()
}

// Line handles one line of go test -json's output.
func (f *Filter) Line(line []byte) error {
	var ev Event
	if len(bytes.TrimSpace(line)) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Action == "" {
		return f.write(string(line) + "\n")
	}
	return f.Event(ev)
}

// Event handles one event.
func (f *Filter) Event(ev Event) error {
	switch ev.Action {
	case "build-output":
		return f.write(ev.Output)
	case "output":
		return f.output(ev)
	case "run":
		if !strings.Contains(ev.Test, "/") {
			f.started[testKey{ev.Package, ev.Test}] = ev.Time
		}
	case "pause":
		f.parallel[testKey{ev.Package, top(ev.Test)}] = true
	case "pass", "fail", "skip":
		if ev.Test == "" {
			return f.endPackage(ev)
		}
		return f.end(ev)
	}
	return nil
}

// endPackage records how a package's test binary ended, with the tests it left running (a
// timeout's or a crash's) as failed after the time they ran, and writes their output.
func (f *Filter) endPackage(ev Event) error {
	f.sum.Packages = append(f.sum.Packages, Package{Name: ev.Package, Action: ev.Action, Seconds: ev.Elapsed})
	var cut []Result
	for k, at := range f.started {
		if k.pkg == ev.Package {
			cut = append(cut, Result{Package: k.pkg, Test: k.test, Action: "fail", Seconds: ev.Time.Sub(at).Seconds(), Parallel: f.parallel[k]})
			delete(f.started, k)
			delete(f.parallel, k)
		}
	}
	sort.Slice(cut, func(i, j int) bool { return cut[i].Test < cut[j].Test })
	f.sum.Tests = append(f.sum.Tests, cut...)
	return f.flush(ev.Package, ev.Action == "fail")
}

// output writes or holds an output event.
func (f *Filter) output(ev Event) error {
	if f.verbose {
		return f.write(ev.Output)
	}
	f.held[ev.Package] = append(f.held[ev.Package], heldLine{top(ev.Test), ev.Output})
	return nil
}

// end records a top-level test's result and writes its output when it failed.
func (f *Filter) end(ev Event) error {
	if strings.Contains(ev.Test, "/") {
		return nil // a subtest: its lines stay with its top-level test's
	}
	k := testKey{ev.Package, ev.Test}
	f.sum.Tests = append(f.sum.Tests, Result{Package: ev.Package, Test: ev.Test, Action: ev.Action, Seconds: ev.Elapsed, Parallel: f.parallel[k]})
	delete(f.parallel, k)
	delete(f.started, k)
	var mine strings.Builder
	rest := f.held[ev.Package][:0]
	for _, l := range f.held[ev.Package] {
		if l.test == ev.Test {
			mine.WriteString(l.text)
		} else {
			rest = append(rest, l)
		}
	}
	f.held[ev.Package] = rest
	if ev.Action != "fail" {
		return nil
	}
	return f.write(mine.String())
}

// flush writes what is held for package pkg: all of it when the package failed (or never said how
// it ended), else its last line of its own, the ok or "no test files" summary.
func (f *Filter) flush(pkg string, failed bool) error {
	lines := f.held[pkg]
	delete(f.held, pkg)
	if !failed {
		for i := len(lines) - 1; i >= 0; i-- {
			if lines[i].test == "" {
				return f.write(lines[i].text)
			}
		}
		return nil
	}
	var out strings.Builder
	for _, l := range lines {
		out.WriteString(l.text)
	}
	return f.write(out.String())
}

// Close writes whatever is still held: the output of packages whose end never came.
func (f *Filter) Close() error {
	pkgs := make([]string, 0, len(f.held))
	for pkg := range f.held {
		pkgs = append(pkgs, pkg)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		if err := f.flush(pkg, true); err != nil {
			return err
		}
	}
	return nil
}

// Summary returns what the events so far said.
func (f *Filter) Summary() Summary { return f.sum }

func (f *Filter) write(s string) error {
	if s == "" {
		return nil
	}
	if _, err := io.WriteString(f.w, s); err != nil {
		return fmt.Errorf("writing test output: %w", err)
	}
	return nil
}

// top is the top-level test of a test or subtest name.
func top(test string) string {
	name, _, _ := strings.Cut(test, "/")
	return name
}

// Slowest returns package pkg's n longest top-level tests, longest first.
func (s Summary) Slowest(pkg string, n int) []Result {
	var out []Result
	for _, r := range s.Tests {
		if r.Package == pkg {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Seconds > out[j].Seconds })
	return out[:min(n, len(out))]
}

// Package returns how package pkg's test binary ended, and whether it was seen.
func (s Summary) Package(pkg string) (Package, bool) {
	for _, p := range s.Packages {
		if p.Name == pkg {
			return p, true
		}
	}
	return Package{}, false
}

// WriteSlowest writes a table of package pkg's n slowest tests: seconds, result, name, and
// "parallel" for a test whose time overlapped others'. It writes nothing when pkg ran no test.
func (s Summary) WriteSlowest(w io.Writer, pkg string, n int) error {
	slow := s.Slowest(pkg, n)
	if len(slow) == 0 {
		return nil
	}
	var b strings.Builder
	head := fmt.Sprintf("the %d slowest tests of %s", len(slow), pkg)
	if p, ok := s.Package(pkg); ok {
		head += fmt.Sprintf(" (the package took %.0f s)", p.Seconds)
	}
	b.WriteString(head + ":\n")
	for _, r := range slow {
		note := ""
		if r.Parallel {
			note = "  (parallel)"
		}
		fmt.Fprintf(&b, "%8.1f s  %-4s  %s%s\n", r.Seconds, r.Action, r.Test, note)
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("writing the slowest tests: %w", err)
	}
	return nil
}
