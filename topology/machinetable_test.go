package topology

import (
	"strings"
	"testing"
)

// TestMachineTable: a preset's table has its counts, a row per level and the boot servers' row;
// sunway's cascade switches get theirs.
func TestMachineTable(t *testing.T) {
	for _, tc := range []struct {
		preset string
		want   []string
	}{
		{"mini", []string{"mini: ", "32 nodes, 4 boot servers, 13 switches", "boot server", "cascade switch   2 servers"}},
		{"sunway", []string{"sunway: ", "cabinet", "cascade switch"}},
	} {
		m, err := Load(tc.preset)
		if err != nil {
			t.Fatal(err)
		}
		g, err := m.Build()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := m.WriteTable(&b, g); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		if len(lines) != len(m.Levels)+6+map[bool]int{true: 1}[m.Servers.CascadeUplink != nil] {
			t.Errorf("%s: %d lines:\n%s", tc.preset, len(lines), b.String())
		}
		for _, want := range tc.want {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s:\n%s\nwant %q", tc.preset, b.String(), want)
			}
		}
	}
}
