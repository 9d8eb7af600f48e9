package testjson

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func copyFile(t *testing.T, name string, verbose bool) (string, Summary) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	sum, err := Copy(&out, f, verbose)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), sum
}

// A failed test's output comes whole, its subtests' with it, and nothing of the tests that passed.
func TestCopyFailedTest(t *testing.T) {
	got, sum := copyFile(t, "fail.json", false)
	want := "=== RUN   TestFail\n    p_test.go:4: before\n=== RUN   TestFail/sub\n    p_test.go:4: bad sub\n--- FAIL: TestFail/sub (0.00s)\n" +
		"=== RUN   TestFail/ok\n    p_test.go:4: fine\n--- PASS: TestFail/ok (0.00s)\n--- FAIL: TestFail (0.00s)\n" +
		"FAIL\nFAIL\ttj/p\t0.112s\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	wantTests := []Result{
		{Package: "tj/p", Test: "TestPass", Action: "pass"},
		{Package: "tj/p", Test: "TestFail", Action: "fail"},
		{Package: "tj/p", Test: "TestHang", Action: "pass"},
		{Package: "tj/p", Test: "TestParA", Action: "pass", Seconds: 0.1, Parallel: true},
		{Package: "tj/p", Test: "TestParB", Action: "pass", Seconds: 0.1, Parallel: true},
	}
	if diff := cmp.Diff(wantTests, sum.Tests); diff != "" {
		t.Errorf("tests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Package{{Name: "tj/p", Action: "fail", Seconds: 0.117}}, sum.Packages); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
}

// A test cut by -timeout never ends: its output, the panic included, comes before the package's
// FAIL line, and it counts as failed after the time it ran.
func TestCopyTimeout(t *testing.T) {
	got, sum := copyFile(t, "hang.json", false)
	if strings.Contains(got, "quiet") {
		t.Errorf("a passing test's log was written:\n%s", got)
	}
	panicAt, failAt := strings.Index(got, "panic: test timed out after 2s"), strings.Index(got, "FAIL\ttj/p\t2.010s")
	if panicAt < 0 || failAt < panicAt || !strings.HasPrefix(got, "=== RUN   TestHang\n    p_test.go:7: hanging\n") {
		t.Errorf("output lacks the hanging test's log and panic before the FAIL line:\n%s", got)
	}
	slow := sum.Slowest("tj/p", 1)
	if len(slow) != 1 || slow[0].Test != "TestHang" || slow[0].Action != "fail" || slow[0].Seconds < 2 || slow[0].Seconds > 2.1 {
		t.Errorf("slowest: %+v, want TestHang failed after 2.0 s", slow)
	}
}

func TestCopyBuildFailure(t *testing.T) {
	got, sum := copyFile(t, "build.json", false)
	want := "# tj/q [tj/q.test]\nq/q.go:2:23: cannot use \"s\" (untyped string constant) as int value in return statement\nFAIL\ttj/q [build failed]\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if p, ok := sum.Package("tj/q"); !ok || p.Action != "fail" {
		t.Errorf("package tj/q: %+v %v, want failed", p, ok)
	}
}

// Verbose writes every event's output as it comes, which is go test -v's transcript.
func TestCopyVerbose(t *testing.T) {
	got, _ := copyFile(t, "fail.json", true)
	for _, want := range []string{"    p_test.go:3: quiet\n--- PASS: TestPass (0.00s)\n", "=== CONT  TestParA\n", "FAIL\ttj/p\t0.112s\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("verbose output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "\n") != 26 {
		t.Errorf("verbose output has %d lines, want the 26 output events'", strings.Count(got, "\n"))
	}
}

// A line that is not an event (go's own messages) passes through; a package that passed or has
// no tests shows its summary line alone, as without -json.
func TestCopyOtherLines(t *testing.T) {
	in := "go: downloading example.com/x v1.0.0\n" +
		`{"Action":"output","Package":"tj/s","Output":"testing: warning: no tests to run\n"}` + "\n" +
		`{"Action":"output","Package":"tj/s","Output":"PASS\n"}` + "\n" +
		`{"Action":"output","Package":"tj/s","Output":"ok  \ttj/s\t0.010s [no tests to run]\n"}` + "\n" +
		`{"Action":"pass","Package":"tj/s","Elapsed":0.03}` + "\n" +
		`{"Action":"output","Package":"tj/r","Output":"?   \ttj/r\t[no test files]\n"}` + "\n" +
		`{"Action":"skip","Package":"tj/r","Elapsed":0}` + "\n" +
		"{not json\n"
	var out strings.Builder
	sum, err := Copy(&out, strings.NewReader(in), false)
	if err != nil {
		t.Fatal(err)
	}
	want := "go: downloading example.com/x v1.0.0\nok  \ttj/s\t0.010s [no tests to run]\n?   \ttj/r\t[no test files]\n{not json\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if len(sum.Tests) != 0 {
		t.Errorf("tests %+v, want none", sum.Tests)
	}
}

func TestWriteSlowest(t *testing.T) {
	sum := Summary{
		Tests: []Result{
			{Package: "a", Test: "TestShort", Action: "pass", Seconds: 1},
			{Package: "a", Test: "TestLong", Action: "fail", Seconds: 300.04},
			{Package: "b", Test: "TestOther", Action: "pass", Seconds: 900},
			{Package: "a", Test: "TestMid", Action: "pass", Seconds: 20, Parallel: true},
		},
		Packages: []Package{{Name: "a", Action: "fail", Seconds: 321.4}},
	}
	var b strings.Builder
	if err := sum.WriteSlowest(&b, "a", 2); err != nil {
		t.Fatal(err)
	}
	want := "the 2 slowest tests of a (the package took 321 s):\n   300.0 s  fail  TestLong\n    20.0 s  pass  TestMid  (parallel)\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	b.Reset()
	if err := sum.WriteSlowest(&b, "none", 15); err != nil || b.Len() != 0 {
		t.Errorf("a package without tests: %q, %v; want nothing", b.String(), err)
	}
}
