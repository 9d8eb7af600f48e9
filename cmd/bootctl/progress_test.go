package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With stderr a file that is not a terminal (a script's redirection, a CI log), the commands that
// draw progress bars on a terminal write exactly what they wrote before the bars existed: stdout
// the same bytes as with stderr a plain buffer (the path every other test takes), and stderr only
// the log lines, with no carriage return or escape sequence.
func TestProgressNotOnNonTerminal(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// stable: stdout does not carry wall-clock times, so two runs give the same bytes.
		stable bool
	}{
		{"simulate", []string{"simulate", "-t", "mini", "--batch", "all", "--arrival", "ramp:64"}, true},
		{"plan flow", []string{"plan", "-t", "mini", "--model", "flow"}, true},
		{"report", []string{"report", "-t", "mini", "--out", "-", "-o", "markdown"}, true},
		{"route", []string{"route", "-t", "pgft:3;4,4,8;1,4,4;1,1,1", "--check"}, false},
		{"mcast", []string{"mcast", "-t", "pgft:3;4,4,4;1,4,2;1,1,2", "-g", "grid2d,random:300:5"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, level := range []string{"info", "debug"} {
				args := append([]string{"bootctl", "--log-level", level}, tc.args...)
				var out0, err0 bytes.Buffer
				if code := run(context.Background(), args, &out0, &err0); code != 0 {
					t.Fatalf("%v: exit %d: %s", args, code, err0.String())
				}
				f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
				if err != nil {
					t.Fatal(err)
				}
				if bar := (&env{stderr: f}).progressBar("x", 0, ""); bar != nil {
					t.Fatal("a progress bar on a file that is not a terminal")
				}
				var out bytes.Buffer
				code := run(context.Background(), args, &out, f)
				f.Close()
				stderr, err := os.ReadFile(f.Name())
				if err != nil {
					t.Fatal(err)
				}
				if code != 0 {
					t.Fatalf("%v: exit %d with a file as stderr: %s", args, code, stderr)
				}
				if strings.ContainsAny(string(stderr), "\r\033") {
					t.Errorf("%v: stderr has terminal control characters: %q", args, stderr)
				}
				if tc.stable && !bytes.Equal(out.Bytes(), out0.Bytes()) {
					t.Errorf("%v: stdout differs with a file as stderr:\n%s\nwith a buffer:\n%s", args, out.Bytes(), out0.Bytes())
				}
				// The same log lines, timestamps and durations aside.
				if got, want := logShape(string(stderr)), logShape(err0.String()); got != want {
					t.Errorf("%v: stderr with a file:\n%s\nwith a buffer:\n%s", args, got, want)
				}
			}
		})
	}
}

// logShape keeps each log line's level and message, dropping the timestamp and the fields (which
// hold durations).
func logShape(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.SplitN(line, "\t", 4)
		if len(f) >= 3 {
			line = f[1] + " " + f[2]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
