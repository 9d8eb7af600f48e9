package testenv

import (
	"testing"
)

// recorder is a testing.TB that records how a test ended instead of ending it.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.skipped = true
	if len(args) > 0 {
		r.msg, _ = args[0].(string)
	}
}
func (r *recorder) Fatalf(format string, args ...any) { r.failed = true; r.msg = format }

func TestSkipStrict(t *testing.T) {
	for _, tc := range []struct {
		env                 string
		wantSkip, wantFatal bool
	}{
		{"", true, false},
		{"0", true, false},
		{"1", false, true},
		{"true", false, true},
	} {
		t.Run("env="+tc.env, func(t *testing.T) {
			t.Setenv(NoSkipVar, tc.env)
			r := &recorder{TB: t}
			NeedTool(r, "bootfabric-no-such-tool", "nothing")
			if r.skipped != tc.wantSkip || r.failed != tc.wantFatal {
				t.Errorf("%s=%q: skipped %v failed %v, want %v %v", NoSkipVar, tc.env, r.skipped, r.failed, tc.wantSkip, tc.wantFatal)
			}
		})
	}
}

func TestNeedToolFound(t *testing.T) {
	t.Setenv(NoSkipVar, "1")
	r := &recorder{TB: t}
	if p := NeedTool(r, "sh", "dash"); p == "" || r.failed || r.skipped {
		t.Errorf("NeedTool(sh) = %q, skipped %v failed %v", p, r.skipped, r.failed)
	}
}
