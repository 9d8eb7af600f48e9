package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/urfave/cli/v2"
)

// oneLine reports whether s is one line (a trailing newline aside).
func oneLine(s string) bool { return !strings.Contains(strings.TrimSpace(s), "\n") }

// TestFleetAuthEtcd runs bootctl against an etcd with TLS and client certificates, end to end: fleet
// auth as root makes the users and turns authentication on; then the operator applies and reads
// the fleet, a server cannot apply, and a client without a certificate is refused on one line.
func TestFleetAuthEtcd(t *testing.T) {
	ec := etcdtest.Start(t, etcdtest.Options{TLS: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ep := ec.Endpoints[0]
	as := func(cn string) []string {
		cert, key := ec.ClientCert(t, cn)
		return []string{"--etcd", ep, "--etcd-ca", ec.CAFile, "--etcd-cert", cert, "--etcd-key", key}
	}
	root, admin, bs1 := as("root"), as("admin"), as("bs1")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		code, out, errs := runBootctl(t, ctx, args...)
		t.Logf("bootctl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		return code, out, errs
	}

	code, out, errs := run(append([]string{"fleet", "auth", "--servers", "bs1,bs2", "--operator", "admin", "-o", "json"}, root...)...)
	if code != 0 {
		t.Fatalf("fleet auth: exit %d: %s", code, errs)
	}
	res := decodeJSONOut[fleet.AuthResult](t, out)
	if res.Fleet != "default" || len(res.Roles) != 3 || res.Enabled ||
		res.Roles[0].Name != "bootfabric-default-server-bs1" || res.Roles[2].User != "admin" {
		t.Errorf("fleet auth: %+v", res)
	}
	code, out, errs = run(append([]string{"fleet", "auth", "--servers", "bs1,bs2", "--operator", "admin", "--enable"}, root...)...)
	rows := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		rows[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, w := range []string{
		"fleet default: 3 etcd users and their roles set up; keys below are under /bootfabric/default/",
		"etcd's authentication is on: every request needs a user (certificate common name, or user and password)",
		"bs1 bootfabric-default-server-bs1 * members/bs1 records/* addr/* mac/* events/* eventseq/*",
		"admin bootfabric-default-operator - *",
	} {
		if code != 0 || !rows[w] {
			t.Errorf("fleet auth --enable: exit %d, want the line %q in\n%s%s", code, w, out, errs)
		}
	}

	// The operator applies a signed revision and reads the status.
	file := applyFleetFiles(t, 8)
	signKey := filepath.Join(t.TempDir(), "operator.key")
	if code, _, errs := run("fleet", "keygen", "--out", signKey); code != 0 {
		t.Fatalf("fleet keygen: %s", errs)
	}
	if code, _, errs := run(append([]string{"fleet", "apply", "-f", file, "--sign-key", signKey}, admin...)...); code != 0 {
		t.Fatalf("fleet apply as the operator: exit %d: %s", code, errs)
	}
	code, out, errs = run(append([]string{"fleet", "status", "-o", "json"}, admin...)...)
	// No server runs: the fleet is down (exit 1), and the operator reads its report.
	if st := decodeJSONOut[bootsrv.FleetStatus](t, out); code != 1 || st.Revision == 0 || st.Nodes != 8 || len(st.Servers) != 2 || st.Live != 0 {
		t.Errorf("fleet status as the operator: exit %d, %+v: %s", code, st, errs)
	}
	if code, _, errs := run(append([]string{"status"}, admin...)...); code != 0 {
		t.Errorf("status --etcd as the operator: exit %d: %s", code, errs)
	}

	ca := []string{"--etcd", ep, "--etcd-ca", ec.CAFile}
	for _, tt := range []struct {
		name string
		args []string
		want []string // in stderr, which is one line
	}{
		{"apply as a server", append([]string{"fleet", "apply", "-f", applyFleetFiles(t, 4), "--sign-key", signKey}, bs1...),
			[]string{"etcdserver: permission denied", "user bs1 (the certificate's common name) may not do this"}},
		{"auth as the operator", append([]string{"fleet", "auth", "--servers", "bs3"}, admin...),
			[]string{"permission denied", "this needs etcd's root user"}},
		{"status without a certificate", append([]string{"fleet", "status"}, ca...),
			[]string{"etcd at " + ep, "etcd requires a client certificate and this client has none", "--etcd-cert, --etcd-key"}},
		{"status without TLS", []string{"fleet", "status", "--etcd", ep},
			[]string{"etcd at " + ep, "etcd serves TLS, and this client has no TLS configuration", "--etcd-ca"}},
		{"status --etcd without a certificate", append([]string{"status"}, ca...),
			[]string{"etcd requires a client certificate and this client has none"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runBootctl(t, ctx, tt.args...)
			if code != 1 || !oneLine(errs) {
				t.Errorf("exit %d, want 1 with one line; stdout %q, stderr:\n%s", code, out, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q, want %q", errs, w)
				}
			}
		})
	}
}

// TestFleetAuthBadInput: each wrong flag of fleet auth and of the etcd security flags (in each
// command that has them) exits 2 with one line naming it, before etcd is contacted.
func TestFleetAuthBadInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	// The checks come before the files are parsed, except the CA's: any content does.
	file := func(name, data string, mode os.FileMode) string {
		p := testfix.WriteFile(t, filepath.Join(dir, name), []byte(data))
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cert, key := file("c.crt", "cert", 0o644), file("c.key", "key", 0o600)
	openKey, pw := file("open.key", "key", 0o644), file("pw", "s3cret\n", 0o644)
	pub := filepath.Join(dir, "operator.key")
	if code, _, errs := runBootctl(t, ctx, "fleet", "keygen", "--out", pub); code != 0 {
		t.Fatalf("fleet keygen: %s", errs)
	}
	pub += ".pub"
	// Nothing listens there: a flag check that came after the connection would time out instead.
	noEtcd := []string{"--etcd", "127.0.0.1:1"}
	auth := append([]string{"fleet", "auth"}, noEtcd...)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no users", auth, "fleet auth: give --servers, --operator or both"},
		{"bad server name", append(auth, "--servers", "bs1,a/b"), `--servers: server name "a/b"`},
		{"root as a server", append(auth, "--servers", "root"), "--servers: server name \"root\""},
		{"operator also a server", append(auth, "--servers", "bs1", "--operator", "bs1"), `--operator: operator "bs1" is also a server`},
		{"bad output", append(auth, "--servers", "bs1", "-o", "csv"), "--output"},
		{"bad fleet", append(auth, "--servers", "bs1", "--fleet", "A"), "--fleet:"},
		{"certificate without key", append(auth, "--servers", "bs1", "--etcd-cert", cert), "--etcd-key: required with --etcd-cert"},
		{"key without certificate", append(auth, "--servers", "bs1", "--etcd-key", key), "--etcd-cert: required with --etcd-key"},
		{"key readable by others", append(auth, "--servers", "bs1", "--etcd-cert", cert, "--etcd-key", openKey),
			"--etcd-key: etcd client key " + openKey + ": mode 0644"},
		{"missing CA", append(auth, "--servers", "bs1", "--etcd-ca", dir+"/none.pem"), "--etcd-ca: etcd CA file " + dir + "/none.pem: no such file"},
		{"CA not a certificate", append(auth, "--servers", "bs1", "--etcd-ca", key), "--etcd-ca: etcd CA file " + key + ": no PEM certificate"},
		{"user without password", append(auth, "--servers", "bs1", "--etcd-user", "root"), "--etcd-password-file: required with --etcd-user"},
		{"password without user", append(auth, "--servers", "bs1", "--etcd-password-file", pw), "--etcd-user: required with --etcd-password-file"},
		{"password readable by others", append(auth, "--servers", "bs1", "--etcd-user", "root", "--etcd-password-file", pw),
			"--etcd-password-file: secret file " + pw + ": mode 0644"},
		{"fleet status", append([]string{"fleet", "status", "--etcd-cert", cert}, noEtcd...), "--etcd-key: required"},
		{"fleet apply", append([]string{"fleet", "apply", "-f", applyFleetFiles(t, 4), "--sign-key", pub[:len(pub)-4], "--etcd-key", key}, noEtcd...),
			"--etcd-cert: required"},
		{"status", append([]string{"status", "--etcd-key", openKey, "--etcd-cert", cert}, noEtcd...), "--etcd-key: etcd client key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runBootctl(t, ctx, tt.args...)
			if code != 2 || !oneLine(errs) || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, want 2; stderr %q, want %q (one line); stdout %q", code, errs, tt.want, out)
			}
		})
	}
}

// TestEtcdSecurityFlags: every command that opens a fleet's etcd has the TLS and user flags.
func TestEtcdSecurityFlags(t *testing.T) {
	app := newApp(&env{})
	var want []string
	for _, f := range etcdSecurityFlags() {
		want = append(want, f.Names()[0])
	}
	for _, path := range [][]string{{"fleet", "apply"}, {"fleet", "status"}, {"fleet", "auth"}, {"status"}, {"serve"}} {
		cmds, cmd := app.Commands, (*cli.Command)(nil)
		for _, name := range path {
			cmd = nil
			for _, c := range cmds {
				if c.Name == name {
					cmd = c
				}
			}
			if cmd == nil {
				t.Fatalf("no command %q", strings.Join(path, " "))
			}
			cmds = cmd.Subcommands
		}
		have := map[string]bool{}
		for _, f := range cmd.Flags {
			have[f.Names()[0]] = true
		}
		for _, w := range want {
			if !have[w] {
				t.Errorf("bootctl %s: no --%s", strings.Join(path, " "), w)
			}
		}
	}
}
