package main

import (
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestOutputFormats: every command that prints a result takes -o with the formats that suit it,
// and refuses the others naming the supported ones.
func TestOutputFormats(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in stdout, or in the one stderr line when refused
		code int
	}{
		{"route yaml", []string{"route", "-t", "pgft:2;4,4;1,4;1,1", "-o", "yaml"}, "engine: dmodc\n", 0},
		{"route csv refused", []string{"route", "-t", "pgft:2;4,4;1,4;1,1", "-o", "csv"}, `--output: "csv" is not one of table, json, yaml`, 2},
		{"mcast yaml", []string{"mcast", "-t", "pgft:2;4,4;1,4;1,1", "-a", "fulb", "-o", "yaml"}, "results:\n  - algorithm: fulb\n", 0},
		{"mcast csv", []string{"mcast", "-t", "pgft:2;4,4;1,4;1,1", "-a", "fulb", "-o", "csv"}, "algo,max_efi,mean_efi,max_height,mean_height\nfulb,", 0},
		{"topology show yaml", []string{"topology", "show", "mini", "-o", "yaml"}, "name: mini\n", 0},
		{"topology show csv refused", []string{"topology", "show", "mini", "-o", "csv"}, `--output: "csv" is not one of table, yaml, json`, 2},
		{"status xml refused", []string{"status", "-s", "http://127.0.0.1:1", "-o", "xml"}, `--output: "xml" is not one of table, json, yaml, csv`, 2},
		{"cluster status xml refused", []string{"cluster", "status", "-o", "xml"}, `--output: "xml" is not one of table, json, yaml`, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := bootctl(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errs)
			}
			got := out
			if code != 0 {
				got = errs
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("output lacks %q:\n%.600s", tc.want, got)
			}
		})
	}
}

func TestWriteYAMLKeepsJSONNamesAndOrder(t *testing.T) {
	v := struct {
		Zeta  string            `json:"zeta"`
		Alpha []int             `json:"alpha_list"`
		Num   string            `json:"num"`
		Map   map[string]string `json:"map,omitempty"`
	}{"z", []int{1, 2}, "007", map[string]string{"b": "yes", "a": "1"}}
	var b strings.Builder
	if err := writeYAML(&b, v); err != nil {
		t.Fatal(err)
	}
	want := "zeta: z\nalpha_list:\n  - 1\n  - 2\nnum: \"007\"\nmap:\n  a: \"1\"\n  b: \"yes\"\n"
	if b.String() != want {
		t.Errorf("yaml:\n%s\nwant:\n%s", b.String(), want)
	}
	var back map[string]any
	if err := yaml.Unmarshal([]byte(b.String()), &back); err != nil || back["num"] != "007" {
		t.Errorf("round trip: %v %v", back, err)
	}
}

// TestOutputFormatsOfServerAndStore: status and image speak yaml and csv too.
func TestOutputFormatsOfServerAndStore(t *testing.T) {
	f := newServeFiles(t, "off")
	srv, _ := startServer(t, f)
	url := "http://" + srv.HTTPAddr().String()
	store := filepath.Join(f.dir, "images")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"status yaml", []string{"status", "-s", url, "-o", "yaml"}, []string{"summary:\n  server: bs0\n", "nodes:\n  - name: node00\n"}},
		{"status csv", []string{"status", "-s", url, "-o", "csv"}, []string{"node,", ",state,", "\nnode00,", ",52:54:00:00:00:00,"}},
		{"image list yaml", []string{"image", "list", "--store", store, "-o", "yaml"}, []string{"- name: default\n  kernel: vmlinuz\n"}},
		{"image list csv", []string{"image", "list", "--store", store, "-o", "csv"}, []string{"profile,kernel,initrd,files,bytes,kernel_sha256,cmdline,kernel_bytes,initrd_bytes\ndefault,vmlinuz,initrd.img,2,3145738,"}},
		{"image verify yaml", []string{"image", "verify", "--store", store, "-o", "yaml"}, []string{"files: 2\nok: true\nproblems: []\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := bootctl(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%.800s", w, out)
				}
			}
		})
	}
}
