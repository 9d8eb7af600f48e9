package units

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		err  string
	}{
		{"50MB", 50e6, ""},
		{"70KiB", 70 << 10, ""},
		{"1.25 GB", 1.25e9, ""},
		{"3B", 3, ""},
		{"50", 0, "want a number and a unit"},
		{"50Mb", 0, `unknown unit "Mb"`},
		{"50mb", 0, `unknown unit "mb"`},
		{"0MB", 0, "must be positive"},
		{"-5MB", 0, "want a number and a unit"},
		{"", 0, "want a number and a unit"},
		{"1000TB", 1e15, ""},
		{"1001TB", 0, "larger than the 1 PB (10^15 bytes) limit"},
		{"99999999999999999999TB", 0, "larger than the 1 PB (10^15 bytes) limit"},
		{"1" + strings.Repeat("0", 400) + "B", 0, "larger than the 1 PB (10^15 bytes) limit"},
	}
	for _, tc := range tests {
		got, err := ParseSize(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSize(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[float64]string{50e6: "50 MB", 70e3: "70 KB", 999: "999 B", 2.5e9: "2.5 GB"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%v) = %q, want %q", in, got, want)
		}
	}
}
