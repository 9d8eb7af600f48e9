package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/images"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

// fleetServeFlags are serve's flags for a fleet member: everything else comes from etcd.
func fleetServeFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "etcd", EnvVars: []string{"BOOTCTL_ETCD"},
			Usage: "run as a member of a fleet: its etcd endpoints, comma-separated (then --config is not used)"},
		&cli.StringFlag{Name: "name", EnvVars: []string{"BOOTCTL_NAME"}, Usage: "with --etcd: this server's name in the fleet's servers"},
		&cli.StringFlag{Name: "fleet", Value: "default", EnvVars: []string{"BOOTCTL_FLEET"}, Usage: "with --etcd: the fleet's name"},
		&cli.DurationFlag{Name: "lease-ttl", Value: fleet.DefaultTTL, EnvVars: []string{"BOOTCTL_LEASE_TTL"},
			Usage: "with --etcd: membership lease; a dead server's nodes move after about this long"},
		&cli.StringFlag{Name: "config-key", EnvVars: []string{"BOOTCTL_CONFIG_KEY"},
			Usage: "with --etcd: the public keys (PEM, the .pub of bootctl fleet keygen) whose signatures make a configuration revision trusted; others are refused"},
		&cli.StringFlag{Name: "fleet-secret", EnvVars: []string{"BOOTCTL_FLEET_SECRET"},
			Usage: "with --etcd: the secret every server of the fleet shares (the .secret of bootctl fleet keygen, mode 600): it derives the node tokens, " +
				"and a server cut off from etcd believes only peers that prove themselves with it"},
	}, etcdSecurityFlags()...)
}

// fleetDefaults are a fleet member's local settings when no flag gives them.
func fleetDefaults() bootconfig.LocalSettings {
	return bootconfig.LocalSettings{StateDir: "/var/lib/bootfabric/state", Images: "/var/lib/bootfabric/images"}
}

// serveFleet runs this process as fleet member --name: it reads the fleet's configuration from
// etcd, fills the local image store from peers, joins, and serves; a new configuration revision
// restarts the boot server inside the process (the membership stays), and a revision that does
// not work here is logged and the running one kept.
func serveFleet(e *env, c *cli.Context) error {
	ctx := c.Context
	endpoints := splitList(c.String("etcd"))
	name := c.String("name")
	if name == "" {
		return badInput("--name: a fleet member needs its server name (one of the fleet's servers)")
	}
	if c.IsSet("config") {
		return badInput("--config: a fleet member takes its configuration from etcd (bootctl fleet apply); give --etcd or --config, not both")
	}
	if c.IsSet("server-id") {
		return badInput("--server-id: a fleet member is named by --name")
	}
	if err := fleet.ValidFleetName(c.String("fleet")); err != nil {
		return badInput("--fleet: %v", err)
	}
	trusted, secret, err := fleetKeys(c)
	if err != nil {
		return err
	}
	local := fleetDefaults()
	for flag, set := range map[string]func(string){
		"http": func(v string) { local.HTTPListen = v }, "url": func(v string) { local.URL = v },
		"tftp": func(v string) { local.TFTPListen = v }, "dhcp-listen": func(v string) { local.DHCPListen = v },
		"images": func(v string) { local.Images = v }, "ipxe-dir": func(v string) { local.IPXEDir = v },
		"state-dir": func(v string) { local.StateDir = v }, "tftp-root": func(v string) { local.TFTPRoot = v },
	} {
		if c.IsSet(flag) {
			set(c.String(flag))
		}
	}
	for _, f := range []string{"dhcp", "topology", "mapping", "inventory", "profile"} {
		if c.IsSet(f) {
			return badInput("--%s: a fleet-wide setting; change it in fleet.yaml and run bootctl fleet apply", f)
		}
	}
	if c.IsSet("interface") {
		local.Interfaces = c.StringSlice("interface")
	}
	clientReg := prometheus.NewRegistry()
	fc, err := openFleetSecure(ctx, c, fleet.Options{Endpoints: endpoints, Fleet: c.String("fleet"), Log: e.log.Named("etcd"), Registerer: clientReg})
	if err != nil {
		return err
	}
	defer fc.Close()
	trust, err := fleet.OpenTrust(trusted, filepath.Join(local.StateDir, "fleet-applied.json"))
	if err != nil {
		return err
	}
	m := &fleetMember{e: e, fc: fc, name: name, local: local, ttl: c.Duration("lease-ttl"), reg: clientReg, trust: trust, secret: secret}
	return m.run(ctx)
}

// fleetKeys reads --config-key and --fleet-secret, which every fleet member needs.
func fleetKeys(c *cli.Context) ([]ed25519.PublicKey, []byte, error) {
	if c.String("config-key") == "" {
		return nil, nil, badInput("--config-key: a fleet member needs the operator's public key: it applies only configuration revisions signed by it (bootctl fleet keygen)")
	}
	trusted, err := fleet.LoadTrustedKeys(c.String("config-key"))
	if err != nil {
		return nil, nil, badInput("--config-key: %w", err)
	}
	if c.String("fleet-secret") == "" {
		return nil, nil, badInput("--fleet-secret: a fleet member needs the secret the fleet's servers share (bootctl fleet keygen writes it beside the signing key)")
	}
	secret, err := fleet.LoadFleetSecret(c.String("fleet-secret"))
	if err != nil {
		return nil, nil, badInput("--fleet-secret: %w", err)
	}
	return trusted, secret, nil
}

// fleetMember is one `bootctl serve --etcd` process.
type fleetMember struct {
	e     *env
	fc    *fleet.Client
	name  string
	local bootconfig.LocalSettings
	ttl   time.Duration
	reg   *prometheus.Registry

	membership *fleet.Membership
	trust      *fleet.Trust // which revisions may be applied: signed, and not older than the last
	secret     []byte       // the fleet secret (bootsrv.FleetOptions.FleetSecret)

	// A revision that could not be applied for a reason that may pass (a peer restarting while
	// its blobs are fetched) is tried again after retryWait, which doubles up to maxRetryWait.
	retry     *fleet.ConfigRevision
	retryWait time.Duration

	// The boot server of the current revision (cur; nil before the first), while running: stop
	// ends it and its Serve's result comes on done.
	cur     *fleet.ConfigRevision
	running bool
	stop    func()
	done    chan error
}

// Retry bounds for a revision that could not be applied.
const (
	minRetryWait = time.Second
	maxRetryWait = 30 * time.Second
)

// run follows the fleet's configuration revisions until ctx ends or the boot server fails: it
// starts a boot server for the first revision and replaces it with each new one that builds.
func (m *fleetMember) run(ctx context.Context) error {
	revs := m.fc.WatchConfig(ctx)
	m.done = make(chan error, 1)
	defer m.shutdown(ctx)
	m.e.log.Info("waiting for the fleet's configuration", zap.String("fleet", m.fc.Fleet()), zap.String("server", m.name))
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		var rev fleet.ConfigRevision
		select {
		case <-ctx.Done():
			return nil
		case err := <-m.done:
			m.running = false
			return err
		case r, ok := <-revs:
			if !ok {
				return nil
			}
			rev, m.retry, m.retryWait = r, nil, 0
			retry.Stop()
		case <-retry.C:
			rev, m.retry = *m.retry, nil
		}
		if err := m.applyRevision(ctx, rev); err != nil {
			return err
		}
		if m.retry != nil {
			retry.Reset(m.retryWait)
		}
	}
}

// applyRevision replaces the running boot server with one built from rev. A revision not signed
// by a trusted key, or older than one applied before, is refused and logged. A revision that does
// not build here is logged and tried again later (m.retry), the previous one running meanwhile;
// it is an error only when nothing runs yet and the cause is this server's own flags.
func (m *fleetMember) applyRevision(ctx context.Context, rev fleet.ConfigRevision) error {
	log := m.e.log
	if m.cur != nil && rev.Revision == m.cur.Revision {
		return nil
	}
	if err := m.trust.Check(rev); err != nil {
		log.Error("configuration revision refused", zap.Int64("revision", rev.Revision), zap.Error(err), zap.Bool("serving", m.running))
		return nil
	}
	srv, err := m.prepare(ctx, rev)
	if err != nil {
		var bad *badInputError
		if m.cur == nil && errors.As(err, &bad) {
			return err // this server's flags do not fit the fleet: nothing to wait for
		}
		m.retry, m.retryWait = &rev, min(max(2*m.retryWait, minRetryWait), maxRetryWait)
		log.Error("configuration revision not applied; trying again", zap.Int64("revision", rev.Revision), zap.Error(err),
			zap.Duration("retry_in", m.retryWait), zap.Bool("previous_running", m.running))
		return nil
	}
	if err := m.trust.Record(rev); err != nil {
		return fmt.Errorf("recording the configuration revision applied: %w", err)
	}
	if m.running {
		log.Info("new configuration revision: restarting the boot server", zap.Int64("from", m.cur.Revision), zap.Int64("to", rev.Revision))
		m.stop()
		if err := <-m.done; err != nil {
			log.Warn("stopping the previous boot server", zap.Error(err))
		}
	}
	m.cur = &rev
	m.stop = m.start(ctx, srv, m.done)
	m.running = true
	return nil
}

// shutdown stops the running boot server and leaves the fleet.
func (m *fleetMember) shutdown(ctx context.Context) {
	if m.running {
		m.stop()
		<-m.done
	}
	if m.membership != nil {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := m.membership.Leave(lctx); err != nil {
			m.e.log.Warn("leaving the fleet", zap.Error(err))
		}
	}
}

// start runs srv until the returned function is called (or ctx ends); Serve's result goes to done.
func (m *fleetMember) start(ctx context.Context, srv *bootsrv.Server, done chan<- error) func() {
	sctx, cancel := context.WithCancel(ctx)
	go func() { done <- srv.Serve(sctx) }()
	return cancel
}

// prepare builds the boot server of one revision: the configuration materialised in the state
// directory, the profiles' blobs fetched from peers, and the membership (joined once).
func (m *fleetMember) prepare(ctx context.Context, rev fleet.ConfigRevision) (*bootsrv.Server, error) {
	doc, err := bootconfig.DecodeFleetDoc(rev.Doc)
	if err != nil {
		return nil, fmt.Errorf("fleet configuration revision %d: %w", rev.Revision, err)
	}
	dir := filepath.Join(m.local.StateDir, "fleet")
	cfg, err := doc.Materialize(dir, m.name, m.local)
	if err != nil {
		return nil, fmt.Errorf("fleet configuration revision %d: %w", rev.Revision, err)
	}
	if err := m.fillImages(ctx, doc); err != nil {
		return nil, err
	}
	if m.membership == nil {
		url := cfg.HTTP.URL
		if url == "" {
			_, port, err := net.SplitHostPort(cfg.HTTP.Listen)
			if err != nil || port == "0" {
				return nil, badInput("--http %q: a fleet member needs a fixed port (peers and nodes reach it there), or --url", cfg.HTTP.Listen)
			}
			url = "http://" + net.JoinHostPort(cfg.Servers[cfg.ServerID].Address, port)
		}
		info := bootsrv.MemberInfo{URL: url, Address: cfg.Servers[cfg.ServerID].Address}
		if m.membership, err = bootsrv.JoinFleet(ctx, m.fc, m.name, info, m.ttl); err != nil {
			return nil, err
		}
		m.e.log.Info("joined the fleet", zap.String("fleet", m.fc.Fleet()), zap.String("server", m.name), zap.String("url", url))
	}
	srv, err := bootsrv.New(cfg, bootsrv.Options{
		Logger: m.e.log, Gatherer: m.reg,
		Fleet: &bootsrv.FleetOptions{Client: m.fc, TTL: m.ttl, Membership: m.membership, FleetSecret: m.secret},
	})
	if err != nil {
		return nil, configError(err)
	}
	return srv, nil
}

// fillImages makes the local image store hold every profile of the revision, fetching missing
// blobs from the live peers by sha256 and checking them before they are used.
func (m *fleetMember) fillImages(ctx context.Context, doc *bootconfig.FleetDoc) error {
	st, err := images.Create(m.local.Images)
	if err != nil {
		return err
	}
	members, _, err := m.fc.Members(ctx)
	if err != nil {
		return err
	}
	var peers []string
	for _, mb := range members {
		if info, ok := bootsrv.DecodeMemberInfo(mb); ok && mb.Name != m.name && info.URL != "" {
			peers = append(peers, info.URL)
		}
	}
	hc := &http.Client{Timeout: 5 * time.Minute}
	fetch := func(ctx context.Context, sum string, size int64) error {
		if len(peers) == 0 {
			return errors.New("no live peer to fetch it from")
		}
		return images.FetchBlob(ctx, hc, peers, sum, size, st)
	}
	if err := st.ImportProfiles(ctx, doc.Profiles, fetch); err != nil {
		return fmt.Errorf("image store %s: %w (peers: %s)", m.local.Images, err, strings.Join(peers, ", "))
	}
	return nil
}
