package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInput: bootfetch checks bootctl fetch's flags the same way: each bad one is exit status 2
// and one line naming it; a server that is not there is a failed fetch, exit 1.
func TestBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "root.img")
	base := []string{"bootfetch", "--server", "http://127.0.0.1:1", "--file", "root.cpio.gz", "--node", "node00", "--out", out}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--server", "ftp://x"}, 2, "--server"},
		{[]string{"--seed-for", "5"}, 2, "--seed-for"},
		{[]string{"--seed-for", "-1s"}, 2, "--seed-for"},
		{[]string{"--upload-rate", "fast"}, 2, "--upload-rate"},
		{[]string{"--out", "/nonexistent/dir/f"}, 2, "--out"},
		{[]string{"--node", ""}, 2, "--node"},
		{[]string{"--output", "xml"}, 2, "--output"},
		{[]string{"--serer", "x"}, 2, "did you mean --server"},
		{[]string{"stray"}, 2, "stray"},
		{nil, 1, "metainfo"},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), append(append([]string{}, base...), tc.args...), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want %d and one line naming %s", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"bootfetch", "--out", filepath.Join(t.TempDir(), "f")}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--server is required") {
		t.Errorf("no --server: exit %d, %q", code, stderr.String())
	}
}
