package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportOutputFlag: report takes -o/--output like every command (--format stays an alias),
// --out defaults to report.html for HTML and to stdout for the other formats, and an --out extension that is not the format's is
// refused before any work, leaving nothing behind.
func TestReportOutputFlag(t *testing.T) {
	quick := []string{"report", "-t", "mini", "--batch", "1", "--flow=false"}
	tests := []struct {
		name   string
		args   []string
		code   int
		want   string // in stdout (exit 0) or stderr
		file   string // written in the working directory
		starts string // the file's first bytes
	}{
		{"-o json to stdout", []string{"-o", "json", "--out", "-"}, 0, "{\n  \"machine\": {", "", ""},
		{"--format alias", []string{"--format", "markdown", "--out", "-"}, 0, "# Boot capacity report: mini", "", ""},
		{"--output before the command", []string{"--output=csv", "--out", "-"}, 0, "scenario,batch,nodes,algo,", "", ""},
		{"-o json goes to stdout", []string{"-o", "json"}, 0, "{\n  \"machine\": {", "", ""},
		{"-o csv goes to stdout", []string{"-o", "csv"}, 0, "scenario,batch,nodes,algo,", "", ""},
		{"-o json --out FILE", []string{"-o", "json", "--out", "r.json"}, 0, "", "r.json", "{"},
		{"default is html", nil, 0, "", "report.html", "<!DOCTYPE html>"},
		{"extension gives the format", []string{"--out", "r.MD"}, 0, "", "r.MD", "# Boot capacity report"},
		{"extension and format agree", []string{"-o", "markdown", "--out", "r.markdown"}, 0, "", "r.markdown", "# Boot"},
		{"unknown extension", []string{"--out", "r.pdf"}, 2, `--out r.pdf: .pdf is not a report format's extension (.html, .md, .csv, .json)`, "", ""},
		{"extension of another format", []string{"-o", "json", "--out", "r.html"}, 2, `--out r.html: the extension says html but --output is json`, "", ""},
		{"unsupported format", []string{"-o", "yaml"}, 2, `--output: "yaml" is not one of html, markdown, csv, json`, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			code, out, errs := bootctl(t, append(append([]string{}, quick...), tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errs)
			}
			got := out
			if code != 0 {
				got = errs
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("%q lacks %q", got, tc.want)
			}
			names := reportDirNames(t, dir)
			if tc.file == "" {
				if len(names) != 0 {
					t.Errorf("left %v behind", names)
				}
				return
			}
			text, err := os.ReadFile(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatalf("%v (directory has %v)", err, names)
			}
			if !strings.HasPrefix(string(text), tc.starts) {
				t.Errorf("%s starts %.40q, want %q", tc.file, text, tc.starts)
			}
		})
	}
}
