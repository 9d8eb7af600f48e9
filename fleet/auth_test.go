package fleet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/bootfabric/bootfabric/internal/etcdtest"
)

// authEtcd is an etcd with TLS and client certificates whose fleet "test" was set up by SetupAuth
// (servers bs1 and bs2, operator admin with a password) and whose authentication is on.
type authEtcd struct {
	e    *etcdtest.Cluster
	root *Client
}

func startAuthEtcd(t *testing.T) *authEtcd {
	t.Helper()
	e := etcdtest.Start(t, etcdtest.Options{TLS: true})
	ae := &authEtcd{e: e}
	ae.root = ae.open(t, "root")
	ctx := ctxFor(t, 30*time.Second)
	if err := ae.root.SetupAuth(ctx, []string{"bs1", "bs2"}, "admin", UserPassword{"admin", "s3cret"}); err != nil {
		t.Fatalf("SetupAuth: %v", err)
	}
	if err := ae.root.EnableAuth(ctx); err != nil {
		t.Fatalf("EnableAuth: %v", err)
	}
	return ae
}

// tlsFor loads a client certificate with common name cn ("" for none) as LoadTLS does.
func (ae *authEtcd) tlsFor(t *testing.T, cn string) func(*Options) {
	t.Helper()
	cert, key := "", ""
	if cn != "" {
		cert, key = ae.e.ClientCert(t, cn)
	}
	cfg, err := LoadTLS(ae.e.CAFile, cert, key)
	if err != nil {
		t.Fatalf("LoadTLS: %v", err)
	}
	return func(o *Options) { o.TLS = cfg }
}

// open opens fleet "test" as the user of a certificate with common name cn.
func (ae *authEtcd) open(t *testing.T, cn string, mod ...func(*Options)) *Client {
	t.Helper()
	return open(t, ae.e.Endpoints, append([]func(*Options){ae.tlsFor(t, cn)}, mod...)...)
}

// tryOpen is Open of fleet "test" that returns the error, with a short dial timeout.
func (ae *authEtcd) tryOpen(t *testing.T, mod ...func(*Options)) (*Client, error) {
	t.Helper()
	opts := Options{Endpoints: ae.e.Endpoints, Fleet: "test", DialTimeout: time.Second, RequestTimeout: 8 * time.Second, Log: testLog(t)}
	for _, f := range mod {
		f(&opts)
	}
	c, err := Open(ctxFor(t, 10*time.Second), opts)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// TestAuthRefused: without a client certificate etcd refuses the connection; with a password
// that is wrong, Open fails; a certificate of a user etcd does not know reads nothing.
func TestAuthRefused(t *testing.T) {
	ae := startAuthEtcd(t)
	ctx := ctxFor(t, 30*time.Second)
	for _, tt := range []struct {
		name string
		mod  []func(*Options)
		want string // in Open's error
	}{
		{"no TLS", nil, "etcd serves TLS, and this client has no TLS configuration"},
		{"TLS without a certificate", []func(*Options){ae.tlsFor(t, "")}, "etcd requires a client certificate and this client has none"},
		{"another CA", []func(*Options){ae.tlsFor(t, "bs1"), func(o *Options) { o.TLS.RootCAs = x509.NewCertPool() }},
			"etcd's certificate is not signed by the CA given"},
		// A password check is bcrypt in etcd: under -race beside the main run it took over 1 s (ci14).
		{"wrong password", []func(*Options){ae.tlsFor(t, "bs1"), func(o *Options) { o.Username, o.Password, o.DialTimeout = "admin", "wrong", 10*time.Second }},
			rpctypes.ErrAuthFailed.Error()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ae.tryOpen(t, tt.mod...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open: %v, want an error with %q", err, tt.want)
			}
		})
	}
	stranger := ae.open(t, "stranger")
	// Users made for certificates have no password at all, not an empty one.
	for _, user := range []string{"bs1", "root"} {
		// etcd 3.4 says "auth: authentication failed, password was given for no password user".
		if _, err := stranger.cli.Authenticate(ctx, user, ""); err == nil || !strings.Contains(err.Error(), "authentication failed") {
			t.Errorf("authenticate as %s with an empty password: %v, want authentication failed", user, err)
		}
	}
	if _, err := stranger.Config(ctx); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("Config as an unknown user: %v, want permission denied", err)
	}
	if _, err := stranger.Join(ctx, "bs1", nil, 0); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("Join as an unknown user: %v, want permission denied", err)
	}
}

// TestAuthServer: a server's certificate lets it do everything a fleet member does, as itself.
func TestAuthServer(t *testing.T) {
	ae := startAuthEtcd(t)
	ctx := ctxFor(t, 60*time.Second)
	admin := ae.open(t, "admin")
	bs1 := ae.open(t, "bs1")

	if _, err := admin.ApplyConfig(ctx, []byte("servers: [bs1, bs2]\n"), testKey); err != nil {
		t.Fatalf("ApplyConfig as the operator: %v", err)
	}
	revs := bs1.WatchConfig(ctx)
	if rev := <-revs; string(rev.Doc) != "servers: [bs1, bs2]\n" {
		t.Fatalf("first configuration watched: %q", rev.Doc)
	}
	m, err := bs1.Join(ctx, "bs1", []byte(`{"url":"http://bs1"}`), 0)
	if err != nil {
		t.Fatalf("Join as bs1: %v", err)
	}
	if _, err := bs1.cli.KeepAliveOnce(ctx, clientv3.LeaseID(m.LeaseID())); err != nil {
		t.Errorf("renewing its lease: %v", err)
	}
	if left, _, err := bs1.LeaseTTL(ctx, m.LeaseID()); err != nil || left <= 0 {
		t.Errorf("LeaseTTL: %v left, %v", left, err)
	}
	if ms, _, err := bs1.Members(ctx); err != nil || !slices.Equal(names(ms), []string{"bs1"}) {
		t.Errorf("Members: %v, %v", names(ms), err)
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{"records (as member)", func() error {
			return bs1.PutRecordsIfMember(ctx, m, "state", map[string][]byte{"n1": []byte("healthy")})
		}},
		{"records (takeover of another server's node)", func() error {
			return bs1.PutRecords(ctx, "state", map[string][]byte{"n2": []byte("booting")})
		}},
		{"read records", func() error {
			recs, err := bs1.Records(ctx, "state")
			if err == nil && len(recs) != 2 {
				return errors.New("not both records")
			}
			return err
		}},
		{"delete records", func() error { return bs1.DeleteRecords(ctx, "state", []string{"n2"}) }},
		{"take through the pool cache", func() error {
			p := bs1.WatchPool(ctx, 0)
			if err := p.Wait(ctx); err != nil {
				return err
			}
			return p.Take(ctx, macN(1), netip.MustParseAddr("192.0.2.1"), time.Now().Add(time.Hour))
		}},
		{"release", func() error { return bs1.Release(ctx, macN(1)) }},
		{"append event", func() error {
			_, err := bs1.AppendEvent(ctx, "takeover", []byte(`{"from":"bs2"}`))
			return err
		}},
		{"trim events", func() error {
			if _, err := bs1.AppendEvent(ctx, "takeover", []byte(`{"from":"bs2"}`)); err != nil {
				return err
			}
			return bs1.TrimEvents(ctx, "takeover", 1)
		}},
		{"read events", func() error {
			evs, err := bs1.Events(ctx, "takeover")
			if err == nil && (len(evs) != 1 || evs[0].Seq != 2) {
				return errors.New("events not trimmed to the last")
			}
			return err
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Errorf("%s as bs1: %v", s.name, err)
		}
	}
	if _, err := admin.ApplyConfig(ctx, []byte("servers: [bs1]\n"), testKey); err != nil {
		t.Fatalf("ApplyConfig as the operator: %v", err)
	}
	if rev := <-revs; string(rev.Doc) != "servers: [bs1]\n" {
		t.Errorf("new configuration watched: %q", rev.Doc)
	}
	// Leave revokes the lease: etcd 3.4 allows it to a user that may write every key attached.
	if err := m.Leave(ctx); err != nil {
		t.Fatalf("Leave as bs1: %v", err)
	}
	if ms, _, err := admin.Members(ctx); err != nil || len(ms) != 0 {
		t.Errorf("Members after Leave: %v, %v", names(ms), err)
	}
	if st := m.Stats(); st.RenewalFailures != 0 {
		t.Errorf("renewal failures: %+v", st)
	}
}

// TestAuthServerLimits: a server cannot change the configuration, act as another server, or reach
// another fleet; the operator can change the configuration.
func TestAuthServerLimits(t *testing.T) {
	ae := startAuthEtcd(t)
	ctx := ctxFor(t, 60*time.Second)
	admin := ae.open(t, "admin")
	bs1, bs2 := ae.open(t, "bs1"), ae.open(t, "bs2")
	m2, err := bs2.Join(ctx, "bs2", nil, 0)
	if err != nil {
		t.Fatalf("Join as bs2: %v", err)
	}
	k := newKeys("test")
	for _, tt := range []struct {
		name string
		do   func() error
	}{
		{"apply config", func() error { _, err := bs1.ApplyConfig(ctx, []byte("x"), testKey); return err }},
		{"join as bs2", func() error { _, err := bs1.Join(ctx, "bs2", nil, 0); return err }},
		{"join as bs3", func() error { _, err := bs1.Join(ctx, "bs3", nil, 0); return err }},
		{"write members/bs2", func() error { _, err := bs1.cli.Put(ctx, k.member("bs2"), "x"); return err }},
		{"delete members/bs2", func() error { _, err := bs1.cli.Delete(ctx, k.member("bs2")); return err }},
		{"delete the members", func() error { _, err := bs1.cli.Delete(ctx, k.membersPrefix(), clientv3.WithPrefix()); return err }},
		{"revoke bs2's lease", func() error { _, err := bs1.cli.Revoke(ctx, clientv3.LeaseID(m2.LeaseID())); return err }},
		{"write config", func() error { _, err := bs1.cli.Put(ctx, k.config(), "x"); return err }},
		{"read another fleet", func() error { _, err := bs1.cli.Get(ctx, "/bootfabric/other/config"); return err }},
		{"write outside the fleets", func() error { _, err := bs1.cli.Put(ctx, "/elsewhere", "x"); return err }},
		{"set up auth", func() error { return bs1.SetupAuth(ctx, []string{"bs1"}, "") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, rpctypes.ErrPermissionDenied) {
				t.Errorf("as bs1: %v, want permission denied", err)
			}
		})
	}
	if _, err := bs1.ApplyConfig(ctx, []byte("x"), testKey); err == nil || !strings.Contains(err.Error(), "user bs1 (the certificate's common name) may not do this") {
		t.Errorf("ApplyConfig as bs1: %v, want an error naming user bs1", err)
	}
	if ms, _, err := admin.Members(ctx); err != nil || !slices.Equal(names(ms), []string{"bs2"}) || ms[0].LeaseID != m2.LeaseID() {
		t.Errorf("bs2's membership after bs1's tries: %+v, %v", ms, err)
	}
	for _, c := range []*Client{admin, ae.open(t, "bs1", func(o *Options) { o.Username, o.Password = "admin", "s3cret" })} {
		if _, err := c.ApplyConfig(ctx, []byte("servers: [bs2]\n"), testKey); err != nil {
			t.Errorf("ApplyConfig as the operator: %v", err)
		}
	}
	if cur, err := bs1.Config(ctx); err != nil || string(cur.Doc) != "servers: [bs2]\n" {
		t.Errorf("configuration read by bs1: %q, %v", cur.Doc, err)
	}
}

// TestAuthSetupIdempotent: SetupAuth run again (with authentication on, as root) leaves the roles
// exactly as AuthRoles says, revoking a permission added under the fleet's prefix and a role the
// user should no longer hold, and refuses a role of that name holding keys outside the prefix.
func TestAuthSetupIdempotent(t *testing.T) {
	ae := startAuthEtcd(t)
	ctx := ctxFor(t, 60*time.Second)
	root := ae.root
	k := newKeys("test")
	// Drift: bs1 may write the configuration, and holds the operator role.
	if _, err := root.cli.RoleGrantPermission(ctx, ServerRole("test", "bs1"), k.config(), "", clientv3.PermissionType(authpb.READWRITE)); err != nil {
		t.Fatal(err)
	}
	if _, err := root.cli.UserGrantRole(ctx, "bs1", OperatorRole("test")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := root.SetupAuth(ctx, []string{"bs1", "bs2"}, "admin"); err != nil {
			t.Fatalf("SetupAuth again: %v", err)
		}
		if err := root.EnableAuth(ctx); err != nil {
			t.Fatalf("EnableAuth again: %v", err)
		}
	}
	roles, err := AuthRoles("test", []string{"bs1", "bs2"}, "admin")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles {
		resp, err := root.cli.RoleGet(ctx, r.Name)
		if err != nil {
			t.Fatalf("RoleGet %s: %v", r.Name, err)
		}
		var want []string
		for _, p := range r.Perms {
			want = append(want, p.etcd().String())
		}
		var got []string
		for _, p := range resp.Perm {
			got = append(got, p.String())
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("role %s:\n got %q\nwant %q", r.Name, got, want)
		}
		user, err := root.cli.UserGet(ctx, r.User)
		if err != nil || !slices.Equal(user.Roles, []string{r.Name}) {
			t.Errorf("user %s: roles %v, %v; want [%s]", r.User, user.Roles, err, r.Name)
		}
	}
	bs1 := ae.open(t, "bs1")
	if _, err := bs1.ApplyConfig(ctx, []byte("x"), testKey); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("ApplyConfig as bs1 after SetupAuth: %v, want permission denied", err)
	}

	// A role of that name with a key outside the fleet is someone else's: refused, not changed.
	if _, err := root.cli.RoleAdd(ctx, ServerRole("test", "bs3")); err != nil {
		t.Fatal(err)
	}
	if _, err := root.cli.RoleGrantPermission(ctx, ServerRole("test", "bs3"), "/other/", "/other0", clientv3.PermissionType(authpb.READ)); err != nil {
		t.Fatal(err)
	}
	err = root.SetupAuth(ctx, []string{"bs3"}, "")
	if err == nil || !strings.Contains(err.Error(), "outside /bootfabric/test/") {
		t.Errorf("SetupAuth with a foreign role: %v", err)
	}
}

// TestAuthRootPassword: SetupAuth creates root with the password given, and once authentication is
// on root works by that password over any client certificate, while the certificate alone does not.
func TestAuthRootPassword(t *testing.T) {
	e := etcdtest.Start(t, etcdtest.Options{TLS: true})
	ae := &authEtcd{e: e}
	ctx := ctxFor(t, 30*time.Second)
	asRoot := func(o *Options) { o.Username, o.Password = RootUser, "r00t" }
	// Before authentication is on, the password is not checked (etcd says auth is not enabled).
	setup := ae.open(t, "bs1", asRoot)
	if err := setup.SetupAuth(ctx, []string{"bs1"}, "admin", UserPassword{RootUser, "r00t"}); err != nil {
		t.Fatalf("SetupAuth: %v", err)
	}
	if err := setup.EnableAuth(ctx); err != nil {
		t.Fatalf("EnableAuth: %v", err)
	}
	if err := ae.open(t, "bs1", asRoot).SetupAuth(ctx, []string{"bs1", "bs2"}, "admin"); err != nil {
		t.Errorf("SetupAuth as root by password: %v", err)
	}
	err := ae.open(t, "bs1").SetupAuth(ctx, []string{"bs1"}, "admin")
	if !errors.Is(err, rpctypes.ErrPermissionDenied) || !strings.Contains(err.Error(), "this needs etcd's root user") {
		t.Errorf("SetupAuth as bs1: %v, want permission denied naming root", err)
	}
}

// TestAuthRoles checks the permissions and the refusals of AuthRoles.
func TestAuthRoles(t *testing.T) {
	roles, err := AuthRoles("lab", []string{"bs1"}, "ops")
	if err != nil {
		t.Fatal(err)
	}
	want := []AuthRole{
		{Name: "bootfabric-lab-server-bs1", User: "bs1", Perms: []AuthPerm{
			{Key: "/bootfabric/lab/", Prefix: true},
			{Key: "/bootfabric/lab/members/bs1", Write: true},
			{Key: "/bootfabric/lab/records/", Prefix: true, Write: true},
			{Key: "/bootfabric/lab/addr/", Prefix: true, Write: true},
			{Key: "/bootfabric/lab/mac/", Prefix: true, Write: true},
			{Key: "/bootfabric/lab/events/", Prefix: true, Write: true},
			{Key: "/bootfabric/lab/eventseq/", Prefix: true, Write: true},
		}},
		{Name: "bootfabric-lab-operator", User: "ops", Perms: []AuthPerm{{Key: "/bootfabric/lab/", Prefix: true, Write: true}}},
	}
	if !slices.EqualFunc(roles, want, func(a, b AuthRole) bool {
		return a.Name == b.Name && a.User == b.User && slices.Equal(a.Perms, b.Perms)
	}) {
		t.Errorf("AuthRoles:\n got %+v\nwant %+v", roles, want)
	}
	for _, tt := range []struct {
		fleet    string
		servers  []string
		operator string
		want     string
	}{
		{"lab", nil, "", "nothing to set up"},
		{"Lab", []string{"bs1"}, "", "fleet name"},
		{"lab", []string{"bs/1"}, "", "server name"},
		{"lab", []string{"root"}, "", "administrator"},
		{"lab", []string{"bs1", "bs1"}, "", "twice"},
		{"lab", []string{"bs1"}, "bs1", "also a server"},
		{"lab", nil, "root", "administrator"},
		{"lab", nil, "a/b", "operator name"},
	} {
		if _, err := AuthRoles(tt.fleet, tt.servers, tt.operator); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("AuthRoles(%q, %q, %q): %v, want %q", tt.fleet, tt.servers, tt.operator, err, tt.want)
		}
	}
}

// TestAuthOpenOptions: Open refuses a user without a password, and an http:// endpoint with TLS.
func TestAuthOpenOptions(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		opts Options
		want string
	}{
		{"user without password", Options{Endpoints: []string{"127.0.0.1:1"}, Fleet: "t", Username: "u"}, "give both or neither"},
		{"password without user", Options{Endpoints: []string{"127.0.0.1:1"}, Fleet: "t", Password: "p"}, "give both or neither"},
		{"http with TLS", Options{Endpoints: []string{"127.0.0.1:2", "http://127.0.0.1:1"}, Fleet: "t", TLS: &tls.Config{}},
			"etcd endpoint http://127.0.0.1:1 is plain http"},
	} {
		if _, err := Open(ctx, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestLoadTLS covers LoadTLS's files: good ones and each way one can be wrong.
func TestLoadTLS(t *testing.T) {
	e := etcdtest.Start(t, etcdtest.Options{TLS: true})
	cert, key := e.ClientCert(t, "bs1")
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // whatever the umask
			t.Fatal(err)
		}
		return p
	}
	keyPEM, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	openKey := write("open.key", string(keyPEM), 0o640)
	notPEM := write("ca.txt", "not a certificate\n", 0o644)
	otherCert, _ := e.ClientCert(t, "bs2")

	cfg, err := LoadTLS(e.CAFile, cert, key)
	if err != nil || cfg.RootCAs == nil || len(cfg.Certificates) != 1 {
		t.Fatalf("LoadTLS: %+v, %v", cfg, err)
	}
	if cfg, err := LoadTLS(e.CAFile, "", ""); err != nil || len(cfg.Certificates) != 0 {
		t.Errorf("LoadTLS without a client certificate: %v", err)
	}
	for _, tt := range []struct {
		name          string
		ca, cert, key string
		path, want    string // the FileError's file, and what its message holds
	}{
		{"missing CA", dir + "/none.pem", cert, key, dir + "/none.pem", "etcd CA file " + dir + "/none.pem: no such file"},
		{"CA not PEM", notPEM, cert, key, notPEM, "no PEM certificate"},
		{"missing certificate", e.CAFile, dir + "/none.crt", key, dir + "/none.crt", "etcd client certificate " + dir + "/none.crt: no such file"},
		{"missing key", e.CAFile, cert, dir + "/none.key", dir + "/none.key", "etcd client key " + dir + "/none.key: no such file"},
		{"key readable by group", e.CAFile, cert, openKey, openKey, "etcd client key " + openKey + ": mode 0640: its group or others may read"},
		{"key of another certificate", e.CAFile, otherCert, key, otherCert, "with key " + key + ": tls: private key does not match"},
		{"certificate without key", e.CAFile, cert, "", cert, "without its key file"},
		{"key without certificate", e.CAFile, "", key, key, "without its certificate file"},
		{"key is a directory", e.CAFile, cert, dir, dir, "not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadTLS(tt.ca, tt.cert, tt.key)
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != tt.path || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadTLS: %v, want a FileError of %s with %q", err, tt.path, tt.want)
			}
		})
	}
}

// TestAuthSecretFile covers ReadSecretFile: one trailing newline trimmed, and the refusals.
func TestAuthSecretFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, data string
		mode       os.FileMode
		want       string
		err        string
	}{
		{"newline", "s3cret\n", 0o600, "s3cret", ""},
		{"crlf", "s3cret\r\n", 0o400, "s3cret", ""},
		{"no newline", "s3cret", 0o600, "s3cret", ""},
		{"two newlines", "s3cret\n\n", 0o600, "s3cret\n", ""},
		{"spaces kept", " s3cret \n", 0o600, " s3cret ", ""},
		{"readable by others", "s3cret\n", 0o604, "", "mode 0604"},
		{"writable by group", "s3cret\n", 0o620, "", "mode 0620"},
		{"empty", "\n", 0o600, "", "empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			if err := os.WriteFile(p, []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tt.mode); err != nil {
				t.Fatal(err)
			}
			got, err := ReadSecretFile(p)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), p) {
					t.Errorf("ReadSecretFile: %q, %v; want an error naming %s with %q", got, err, p, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ReadSecretFile: %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := ReadSecretFile(filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("missing file: %v", err)
	}
}
