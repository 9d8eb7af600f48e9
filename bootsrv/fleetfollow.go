package bootsrv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/nodestate/boltstore"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// MemberOptions configure RunMember. Client, Name and Trust are required.
type MemberOptions struct {
	Client *fleet.Client
	// Name is this server's name among the fleet's servers.
	Name string
	// Local are the settings of this host that the fleet's document leaves to each server.
	Local bootconfig.LocalSettings
	// TTL is the membership's lease; 0 is the fleet client's default.
	TTL time.Duration
	// Trust says which revisions may be applied: signed by a trusted key, and not older than the
	// last one applied.
	Trust *fleet.Trust
	// FleetSecret is the secret the fleet's servers share (FleetOptions.FleetSecret).
	FleetSecret []byte
	// Gatherer and Logger go to each revision's server (Options).
	Gatherer prometheus.Gatherer
	Logger   *zap.Logger
}

// SettingsError says that this host's settings (MemberOptions.Local) do not fit the fleet's
// configuration: waiting for another revision would not help.
type SettingsError struct{ Err error }

func (e *SettingsError) Error() string { return e.Err.Error() }
func (e *SettingsError) Unwrap() error { return e.Err }

// RunMember runs this process as fleet member opts.Name until ctx ends (nil) or its boot server
// fails: it follows the fleet's configuration revisions, and for each one that is trusted it fills
// the local image store from the peers, joins the fleet (once) and serves; a new revision restarts
// the boot server inside the process while the membership stays. A revision that does not work
// here is logged and tried again later, the running one kept; it is an error only when nothing
// runs yet and the cause is this host's settings (a *SettingsError, or the configuration errors
// New returns).
func RunMember(ctx context.Context, opts MemberOptions) error {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	m := &member{opts: opts, log: opts.Logger}
	return m.run(ctx)
}

// member is the state of RunMember.
type member struct {
	opts       MemberOptions
	log        *zap.Logger
	membership *fleet.Membership
	info       MemberInfo    // as published at the join; publish adds the revisions
	checked    *RevisionInfo // the newest revision given, and whether Trust refused it

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
func (m *member) run(ctx context.Context) error {
	fc := m.opts.Client
	revs := fc.WatchConfig(ctx)
	m.done = make(chan error, 1)
	defer m.shutdown(ctx)
	m.log.Info("waiting for the fleet's configuration", zap.String("fleet", fc.Fleet()), zap.String("server", m.opts.Name))
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
// by a trusted key, too far in the future, or older than one applied before, is refused and
// logged; when nothing runs yet (a restart), the revision applied last is served instead, so that
// a forgery in etcd does not silence a restarted server. A revision that does not build here is
// logged and tried again later (m.retry), the previous one running meanwhile; it is an error only
// when nothing runs yet and the cause is this server's own settings.
func (m *member) applyRevision(ctx context.Context, rev fleet.ConfigRevision) error {
	if m.cur != nil && rev.Revision == m.cur.Revision {
		return nil
	}
	err := m.opts.Trust.Check(rev)
	if m.checked == nil || rev.Revision > m.checked.Revision {
		m.checked = revisionInfo(rev, err) // a retry of an older one does not hide the refusal
	}
	if err == nil {
		return m.apply(ctx, rev)
	}
	m.log.Error("configuration revision refused", zap.Int64("revision", rev.Revision), zap.Error(err), zap.Bool("serving", m.running))
	if last, ok := m.opts.Trust.Last(m.opts.Client.Fleet()); ok && m.cur == nil {
		m.log.Warn("serving the configuration revision applied last until a trusted one is current",
			zap.Int64("revision", last.Revision), zap.Int64("number", last.Number))
		return m.apply(ctx, last)
	}
	if m.cur == nil {
		// Nothing trusted to serve: serving the refused revision is what must never happen, and
		// joining without serving would keep the live servers from taking this server's nodes.
		m.log.Error("no trusted configuration revision to serve: this server serves nothing (no DHCP, TFTP or HTTP) "+
			"and stays out of the fleet, so the live servers answer its nodes, until a trusted revision is current "+
			"(bootctl fleet apply -f FILE --sign-key KEY)",
			zap.Int64("refused_revision", rev.Revision), zap.Error(err))
	}
	m.publish(ctx)
	return nil
}

// apply builds and starts the boot server of rev, which Trust passed.
func (m *member) apply(ctx context.Context, rev fleet.ConfigRevision) error {
	srv, err := m.prepare(ctx, rev)
	if err != nil {
		if m.cur == nil && isSettingsError(err) {
			return err // this server's settings do not fit the fleet: nothing to wait for
		}
		m.retry, m.retryWait = &rev, min(max(2*m.retryWait, minRetryWait), maxRetryWait)
		m.log.Error("configuration revision not applied; trying again", zap.Int64("revision", rev.Revision), zap.Error(err),
			zap.Duration("retry_in", m.retryWait), zap.Bool("previous_running", m.running))
		return nil
	}
	if err := m.opts.Trust.Record(rev); err != nil {
		return fmt.Errorf("recording the configuration revision applied: %w", err)
	}
	if m.running {
		m.log.Info("new configuration revision: restarting the boot server", zap.Int64("from", m.cur.Revision), zap.Int64("to", rev.Revision))
		m.stop()
		if err := <-m.done; err != nil {
			m.log.Warn("stopping the previous boot server", zap.Error(err))
		}
	}
	m.cur = &rev
	m.stop = m.start(ctx, srv)
	m.running = true
	m.publish(ctx)
	return nil
}

// publish puts the revision running and the last one checked in this server's member record,
// where bootctl reads them back. Best effort: a failure is logged, and the next revision or
// re-join publishes again.
func (m *member) publish(ctx context.Context) {
	if m.membership == nil {
		return
	}
	info := m.info
	info.Checked = m.checked
	if m.cur != nil {
		info.Running = revisionInfo(*m.cur, nil)
	}
	b, err := json.Marshal(info)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		err = m.membership.SetInfo(pctx, b)
	}
	if err != nil {
		m.log.Warn("publishing the configuration revision in the member record", zap.Error(err))
	}
}

// isSettingsError says whether err comes from this host's settings or the configuration they
// make, rather than from something that may pass.
func isSettingsError(err error) bool {
	var se *SettingsError
	var be *bootconfig.Error
	var te *topology.Error
	var de *boltstore.DamagedError
	return errors.As(err, &se) || errors.As(err, &be) || errors.As(err, &te) || errors.As(err, &de) || errors.Is(err, fs.ErrNotExist)
}

// shutdown stops the running boot server and leaves the fleet.
func (m *member) shutdown(ctx context.Context) {
	if m.running {
		m.stop()
		<-m.done
	}
	if m.membership != nil {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := m.membership.Leave(lctx); err != nil {
			m.log.Warn("leaving the fleet", zap.Error(err))
		}
	}
}

// start runs srv until the returned function is called (or ctx ends); Serve's result goes to done.
// It returns once srv answers with its nodes (or has ended), so that the revision is published as
// running only then: an operator's `bootctl node reboot` sent on seeing it must find the nodes.
func (m *member) start(ctx context.Context, srv *Server) func() {
	sctx, cancel := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() {
		m.done <- srv.Serve(sctx)
		close(ended)
	}()
	select {
	case <-srv.Ready():
	case <-ended:
	}
	return cancel
}

// prepare builds the boot server of one revision: the configuration materialised in the state
// directory, the profiles' blobs fetched from peers, and the membership (joined once).
func (m *member) prepare(ctx context.Context, rev fleet.ConfigRevision) (*Server, error) {
	doc, err := bootconfig.DecodeFleetDoc(rev.Doc)
	if err != nil {
		return nil, fmt.Errorf("fleet configuration revision %d: %w", rev.Revision, err)
	}
	dir := filepath.Join(m.opts.Local.StateDir, "fleet")
	cfg, err := doc.Materialize(dir, m.opts.Name, m.opts.Local)
	if err != nil {
		return nil, fmt.Errorf("fleet configuration revision %d: %w", rev.Revision, err)
	}
	if err := m.fillImages(ctx, doc); err != nil {
		return nil, err
	}
	if err := m.join(ctx, cfg); err != nil {
		return nil, err
	}
	return New(cfg, Options{
		Logger: m.log, Gatherer: m.opts.Gatherer,
		Fleet: &FleetOptions{Client: m.opts.Client, TTL: m.opts.TTL, Membership: m.membership, FleetSecret: m.opts.FleetSecret},
	})
}

// join makes this server a member of the fleet, once, publishing the URL peers and nodes reach it
// at.
func (m *member) join(ctx context.Context, cfg *bootconfig.Config) error {
	if m.membership != nil {
		return nil
	}
	url := cfg.HTTP.URL
	if url == "" {
		_, port, err := net.SplitHostPort(cfg.HTTP.Listen)
		if err != nil || port == "0" {
			return &SettingsError{fmt.Errorf("--http %q: a fleet member needs a fixed port (peers and nodes reach it there), or --url", cfg.HTTP.Listen)}
		}
		url = "http://" + net.JoinHostPort(cfg.Servers[cfg.ServerID].Address, port)
	}
	m.info = MemberInfo{URL: url, Address: cfg.Servers[cfg.ServerID].Address, Joined: time.Now().UTC()}
	info := m.info
	info.Checked = m.checked
	var err error
	if m.membership, err = JoinFleet(ctx, m.opts.Client, m.opts.Name, info, m.opts.TTL); err != nil {
		return err
	}
	m.log.Info("joined the fleet", zap.String("fleet", m.opts.Client.Fleet()), zap.String("server", m.opts.Name), zap.String("url", url))
	return nil
}

// fillImages makes the local image store hold every profile of the revision, fetching missing
// blobs from the live peers by sha256 and checking them before they are used.
func (m *member) fillImages(ctx context.Context, doc *bootconfig.FleetDoc) error {
	st, err := images.Create(m.opts.Local.Images)
	if err != nil {
		return err
	}
	members, _, err := m.opts.Client.Members(ctx)
	if err != nil {
		return err
	}
	var peers []string
	for _, mb := range members {
		if info, ok := DecodeMemberInfo(mb); ok && mb.Name != m.opts.Name && info.URL != "" {
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
		return fmt.Errorf("image store %s: %w (peers: %s)", m.opts.Local.Images, err, strings.Join(peers, ", "))
	}
	return nil
}
