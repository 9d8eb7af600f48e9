package main

import (
	"strings"
	"testing"
)

// TestRouteMcastReproducible: route and mcast print the same bytes for the same input, in every
// format: wall-clock times go to the log, and into the result only with --timings.
func TestRouteMcastReproducible(t *testing.T) {
	const pgft = "pgft:3;4,4,8;1,4,4;1,1,1"
	tests := []struct {
		name    string
		args    []string
		timings string // what --timings adds to the output
	}{
		{"route table", []string{"route", "-t", pgft, "--check"}, "compute"},
		{"route json", []string{"route", "-t", pgft, "-o", "json"}, `"compute_seconds"`},
		{"route yaml", []string{"route", "-t", "fat2d:4", "-e", "vtftr", "-o", "yaml"}, "compute_seconds:"},
		{"mcast table", []string{"mcast", "-t", pgft, "-g", "grid2d,random:20:8"}, "hop tables"},
		{"mcast json", []string{"mcast", "-t", pgft, "-o", "json"}, `"hop_table_seconds"`},
		{"mcast yaml", []string{"mcast", "-t", pgft, "-o", "yaml"}, "seconds:"},
		{"mcast csv", []string{"mcast", "-t", "fat2d:4", "-o", "csv"}, "mean_height,seconds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, first, errs := bootctl(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			_, second, _ := bootctl(t, tc.args...)
			if first != second {
				t.Errorf("two runs differ:\n%s\n---\n%s", first, second)
			}
			if strings.Contains(first, tc.timings) || strings.Contains(strings.ToLower(first), "seconds") {
				t.Errorf("output has times without --timings:\n%s", first)
			}
			code, timed, errs := bootctl(t, append(tc.args, "--timings")...)
			if code != 0 || !strings.Contains(timed, tc.timings) {
				t.Errorf("--timings: exit %d, output lacks %q:\n%s%s", code, tc.timings, timed, errs)
			}
		})
	}
}
