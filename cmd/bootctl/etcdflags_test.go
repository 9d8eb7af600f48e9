package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// TestEtcdFlagOneParser: --etcd is one flag with one parser in every command: repeated and
// comma-separated endpoints are all kept, in order (serve once kept only the last --etcd).
func TestEtcdFlagOneParser(t *testing.T) {
	var got []string
	app := &cli.App{Flags: []cli.Flag{fleetEtcdFlag()}, Action: func(c *cli.Context) error {
		got = etcdEndpoints(c)
		return nil
	}}
	if err := app.Run([]string{"x", "--etcd", "a:1, b:2", "--etcd", "c:3"}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "a:1 b:2 c:3" {
		t.Fatalf("endpoints %q, want a:1 b:2 c:3", got)
	}
}

// TestEtcdFlagsOfTheOtherMode: a flag that the mode chosen would ignore is refused with one line
// naming it, exit 2: the fleet's flags without --etcd, the single server's with it.
func TestEtcdFlagsOfTheOtherMode(t *testing.T) {
	cfg := newServeFiles(t, "off").config
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"serve --config with --config-key", []string{"serve", "--config", cfg, "--config-key", "k.pub"}, "--config-key (or $BOOTCTL_CONFIG_KEY): applies to a fleet"},
		{"serve --check with --fleet-secret", []string{"serve", "--check", "--config", cfg, "--fleet-secret", "s"}, "--fleet-secret (or $BOOTCTL_FLEET_SECRET): applies to a fleet"},
		{"serve --config with --etcd-ca", []string{"serve", "--config", cfg, "--etcd-ca", "ca.pem"}, "--etcd-ca (or $BOOTCTL_ETCD_CA): applies to a fleet"},
		{"serve --config with --name", []string{"serve", "--config", cfg, "--name", "bs0"}, "--name (or $BOOTCTL_NAME): applies to a fleet"},
		{"serve --etcd with --recover", []string{"serve", "--etcd", "127.0.0.1:1", "--name", "bs0", "--recover"}, "--recover: a fleet member keeps node states in etcd"},
		{"serve --etcd with --node-secret-file", []string{"serve", "--etcd", "127.0.0.1:1", "--name", "bs0", "--node-secret-file", "x"}, "--node-secret-file: a fleet member derives"},
		{"status --server with --fleet", []string{"status", "--server", "http://127.0.0.1:1", "--fleet", "f1"}, "--fleet (or $BOOTCTL_FLEET): applies to a fleet"},
		{"status --server with --etcd-user", []string{"status", "--server", "http://127.0.0.1:1", "--etcd-user", "u"}, "--etcd-user (or $BOOTCTL_ETCD_USER): applies to a fleet"},
		{"node list --config with --etcd-cert", []string{"node", "list", "--config", cfg, "--etcd-cert", "c.pem"}, "--etcd-cert (or $BOOTCTL_ETCD_CERT): applies to a fleet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			code, _, errs := runBootctl(t, ctx, tt.args...)
			if code != 2 || !strings.Contains(errs, tt.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Fatalf("exit %d, stderr %q; want 2 and one line with %q", code, errs, tt.want)
			}
		})
	}
}
