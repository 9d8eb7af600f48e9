package bootsrv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"go.uber.org/zap/zaptest"
)

// TestCheckInterfaces: an interface dhcp.interfaces names that this host lacks is one error
// naming the file, line and field, from Check and from New, and New writes no state file first;
// with DHCP off, or an interface the host has, nothing is said.
func TestCheckInterfaces(t *testing.T) {
	for _, tc := range []struct {
		name, dhcp, want string
	}{
		{"missing", `{mode: reservation, interfaces: [lo, bf-nosuch0], listen: "127.0.0.1:0", subnet: 0.0.0.0/0}`,
			`serve.yaml:12: dhcp.interfaces[1]: this host has no interface "bf-nosuch0" (it has: lo`},
		{"present", `{mode: reservation, interfaces: [lo], listen: "127.0.0.1:0", subnet: 0.0.0.0/0}`, ""},
		{"dhcp off", `{mode: "off", interfaces: [bf-nosuch0]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			testfix.WriteFile(t, f.cfgPath, []byte(testfix.ServeYAML("0s", tc.dhcp)))
			cfg, err := bootconfig.LoadConfig(f.cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			_, checkErr := Check(cfg)
			s, newErr := New(cfg, Options{Logger: zaptest.NewLogger(t)})
			if newErr == nil {
				s.Close()
			}
			for what, err := range map[string]error{"Check": checkErr, "New": newErr} {
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("%s: %v", what, err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Errorf("%s: %v, want %q", what, err, tc.want)
				}
			}
			if _, err := os.Stat(filepath.Join(f.dir, "state")); tc.want != "" && !os.IsNotExist(err) {
				t.Errorf("New wrote the state directory before refusing the configuration (%v)", err)
			}
		})
	}
}
