package bootsrv

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
)

// TestConfigPoolUnknownMax: dhcp.pool.unknown_max is split among servers as the range is (a fleet
// applies all of it), and refused when negative or without dhcp.pool.unknown.
func TestConfigPoolUnknownMax(t *testing.T) {
	tests := []struct {
		name, pool string
		servers    int
		want       []int // each server's part without a fleet
		fleet      int   // a fleet's: the whole
		err        string
	}{
		{"unset", "{range: 10.0.0.100-10.0.0.199, unknown: true}", 2, []int{-1, -1}, -1, ""},
		{"split", "{range: 10.0.0.100-10.0.0.199, unknown: true, unknown_max: 11}", 2, []int{5, 6}, 11, ""},
		{"fewer than the servers", "{range: 10.0.0.100-10.0.0.199, unknown: true, unknown_max: 2}", 3, []int{0, 1, 1}, 2, ""},
		{"negative", "{range: 10.0.0.100-10.0.0.199, unknown: true, unknown_max: -1}", 1, nil, 0, "dhcp.pool.unknown_max: -1 is negative"},
		{"without unknown", "{range: 10.0.0.100-10.0.0.199, unknown_max: 5}", 1, nil, 0, "dhcp.pool.unknown_max: needs dhcp.pool.unknown: true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for id := 0; id < tc.servers; id++ {
				var b strings.Builder
				fmt.Fprintf(&b, "server_id: %d\nservers:\n", id)
				for i := 0; i < tc.servers; i++ {
					fmt.Fprintf(&b, "  - address: 10.1.0.%d\n", i+1)
				}
				fmt.Fprintf(&b, "topology: mini\ninventory: i.csv\nimages: img\nstate_dir: st\ndhcp:\n  subnet: 10.0.0.0/24\n  pool: %s\n", tc.pool)
				c, err := bootconfig.ParseConfig([]byte(b.String()), "c.yaml")
				if err == nil {
					err = c.Validate()
				}
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("error %v, want %q", err, tc.err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, c.UnknownMax(false))
				if f := c.UnknownMax(true); f != tc.fleet {
					t.Errorf("fleet: %d, want %d", f, tc.fleet)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPoolUnknownMax: dhcp.pool.unknown_max caps the unknown MACs below the room left for the
// inventory, never above it.
func TestPoolUnknownMax(t *testing.T) {
	tests := []struct {
		name  string
		max   int
		bound int
		known []string
	}{
		{"no cap", 0, 17, []string{"127.0.1.18 node29", "127.0.1.19 node30", "127.0.1.20 node31"}},
		{"a cap below the room", 5, 5, []string{"127.0.1.6 node29", "127.0.1.7 node30", "127.0.1.8 node31"}},
		{"a cap above the room", 100, 17, []string{"127.0.1.18 node29", "127.0.1.19 node30", "127.0.1.20 node31"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			testfix.WriteFile(t, filepath.Join(f.dir, "inventory.csv"), []byte(shareInventory(t, "127.0.0", 29, 30, 31)))
			s := f.server(t, func(c *bootconfig.Config) {
				c.DHCP = bootconfig.DHCPConfig{Mode: dhcpd.ModeReservation, Listen: "127.0.0.1:0", Subnet: "127.0.0.0/8",
					Pool: &bootconfig.PoolConfig{Range: "127.0.1.1-127.0.1.20", Lease: bootconfig.Duration(10 * time.Minute), Unknown: true, UnknownMax: tc.max}}
			})
			h := dhcpd.NewHandler(s.dhcpConfig(""))
			ctx := context.Background()
			if n := unknownFlood(ctx, h, 0, 20); n != tc.bound {
				t.Errorf("%d MACs outside the inventory bound, want %d", n, tc.bound)
			}
			var got []string
			for _, i := range []int{29, 30, 31} {
				got = append(got, handlerDORA(ctx, h, net.HardwareAddr{0x52, 0x54, 0, 0, 0, byte(i)}))
			}
			if diff := cmp.Diff(tc.known, got); diff != "" {
				t.Errorf("inventory nodes without an ip (-want +got):\n%s", diff)
			}
		})
	}
}
