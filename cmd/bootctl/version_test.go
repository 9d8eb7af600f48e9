package main

import (
	"runtime/debug"
	"testing"
)

// TestDescribeBuild: the toolchain's VCS information wins; without it (-buildvcs=false) the
// Makefile's stamps name the version and commit instead of "(devel), commit unknown".
func TestDescribeBuild(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name            string
		bi              debug.BuildInfo
		version, commit string
		want            string
	}{
		{"vcs", debug.BuildInfo{GoVersion: "go1.26.8", Settings: vcs}, "", "", "(devel), commit abc123 (modified), go1.26.8"},
		{"vcs beats the stamp", debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}, Settings: vcs}, "v0.9", "def", "v1.2.0, commit abc123 (modified)"},
		{"-buildvcs=false, stamped", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, GoVersion: "go1.26.8"}, "v1.3.0-4-gabc123", "abc123", "v1.3.0-4-gabc123, commit abc123, go1.26.8"},
		{"-buildvcs=false, not stamped", debug.BuildInfo{}, "", "", "(devel), commit unknown (built without VCS information, e.g. -buildvcs=false)"},
	} {
		if got := describeBuild(&tc.bi, tc.version, tc.commit); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
