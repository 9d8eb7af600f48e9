package bootsrv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/nodestate/boltstore"
	"github.com/bootfabric/bootfabric/tftpd"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
)

// Options are the dependencies of a Server. Zero values: a new registry, time.Now, no logs.
type Options struct {
	Logger *zap.Logger
	// Registry receives every metric (boot states, HTTP, DHCP, TFTP) and is what /metrics shows.
	Registry *prometheus.Registry
	Now      func() time.Time
	// Gatherer adds metrics kept outside the server's registry to /metrics (the fleet's etcd
	// client, which outlives a server reloaded for a new configuration revision). Nil: none.
	Gatherer prometheus.Gatherer
	// Fleet makes the server a member of a fleet sharing etcd (nil: a single server on its own
	// bbolt state files). See FleetOptions.
	Fleet *FleetOptions
	// RecoverState moves a damaged state file aside and starts from the records that can be read
	// from it (bootctl serve --recover); without it a damaged file stops the server at start.
	RecoverState bool
}

// Server is one boot server. Build it with New, open its sockets with Listen and run it with Serve.
type Server struct {
	cfg       *bootconfig.Config
	log       *zap.Logger
	reg       *prometheus.Registry
	auth      *bootconfig.Authority // the home ownership: the static deal, no server dead
	hier      *topology.Hierarchy
	graph     *topology.Graph // the machine's graph: the hierarchy's, and the swarm's peer order
	tracker   *nodestate.Tracker
	store     nodestate.StateStore
	fleet     *fleetRuntime // nil for a single server
	ready     chan struct{} // closed when Serve's endpoints answer (Ready)
	readyOnce sync.Once
	extra     prometheus.Gatherer
	images    *images.Store
	fsys      fs.FS
	files     *confinedFiles // what HTTP serves, confined to ipxe_dir and the image store
	// overlays are the configured overlays, loaded at start (overlay.go).
	overlays []nodeOverlay
	httpm    *httpMetrics

	swarm *swarm   // the tracker of peer delivery (swarm.go)
	runs  runBoard // the latest bootctl boot run's prediction, for the boot page (runcurve.go)

	nodes         nodeAuth // node tokens (nil secret: node_auth off)
	operatorToken []byte

	baseURL string // what nodes use to reach the HTTP endpoint
	urlHost string
	urlPort int

	res      dhcpd.Reservations
	tftp     *tftpd.Server
	tftpRoot *os.Root // tftp.root; nil without one
	dhcp     []*dhcpd.Server
	ras      []*NoRouterAdvertiser // dhcp.ipv6_ra: no-router
	pool     *dhcpd.Pool           // dhcp.pool of a single server (dhcppool.go); nil without one
	addrPool dhcpd.AddressPool     // what DHCP allocates from: pool, or a fleet's etcd pool; nil: none
	stopPool func()                // ends the fleet pool's watch; nil without one
	live     []int                 // servers not in failed_servers, for UnknownOwner

	closeOnce sync.Once
	closeErr  error

	mu       sync.Mutex
	httpLn   net.Listener
	tftpConn *net.UDPConn
}

// New loads everything the configuration names (topology, inventory, image store, saved boot
// states) and builds the server; it opens no socket. It validates cfg first.
func New(cfg *bootconfig.Config, opts Options) (_ *Server, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Everything Check checks comes before the first file New writes (the state files).
	if err := checkInterfaces(cfg); err != nil {
		return nil, err
	}
	s := newServer(cfg, opts)
	algo, err := s.loadMachine()
	if err != nil {
		return nil, err
	}
	if err := s.openImages(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.files.Close()
		}
	}()
	if err := s.loadOverlays(); err != nil {
		return nil, err
	}
	if s.swarm, err = newSwarm(s.graph, s.auth.Inventory(), s.reg, opts.Now); err != nil {
		return nil, err
	}
	tracked, err := s.openStore(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.store.Close()
		}
	}()
	if err := s.openPool(opts.Now); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.closePool()
		}
	}()
	if err := s.newEndpoints(tracked, opts); err != nil {
		return nil, err
	}
	s.log.Info("boot server configured", zap.Int("id", cfg.ServerID), // the logger names the server
		zap.Int("inventory", len(s.auth.Inventory().Nodes)), zap.Int("owned", len(s.auth.Owned())), zap.String("mapping", algo))
	return s, nil
}

// newServer builds the server with its logger and registry, before anything is loaded.
func newServer(cfg *bootconfig.Config, opts Options) *Server {
	s := &Server{cfg: cfg, log: opts.Logger, reg: opts.Registry, extra: opts.Gatherer, ready: make(chan struct{})}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if cfg.ServerID >= 0 && cfg.ServerID < len(cfg.Servers) {
		s.log = s.log.With(zap.String("server", cfg.Servers[cfg.ServerID].Name)) // on every line: fleets log side by side
	}
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return s
}

// loadMachine loads the topology and the inventory, deals the nodes to the servers and checks
// the inventory against the configuration. It returns the mapping's algorithm.
func (s *Server) loadMachine() (algo string, err error) {
	cfg := s.cfg
	m, err := bootconfig.LoadMachine(cfg.Topology, cfg.Inventory, 1)
	if err != nil {
		return "", err
	}
	inv := m.Inventory
	s.graph, s.hier = m.Graph, m.Graph.Hierarchy()
	a, err := bootconfig.AssignServers(s.hier, cfg.Mapping, len(cfg.Servers), cfg.FailedServers, nil)
	if err != nil {
		return "", fmt.Errorf("mapping: %w", err)
	}
	if s.auth, err = bootconfig.NewAuthority(inv, a, cfg.ServerID); err != nil {
		return "", err
	}
	if err := cfg.CheckNodes(s.auth); err != nil {
		return "", err
	}
	if s.res, err = s.auth.Reservations(cfg.DHCP.NetworkOptions()); err != nil {
		return "", fmt.Errorf("reservations: %w", err)
	}
	return a.Algo, nil
}

// openImages opens the image store, the iPXE binaries and what HTTP serves from them, and checks
// that the default profile exists. On success s.files is open; the caller closes it.
func (s *Server) openImages() (err error) {
	cfg := s.cfg
	if s.images, err = images.Open(cfg.Images); err != nil {
		return fmt.Errorf("%s: images: %w", cfg.File(), err)
	}
	// bootctl image add, import and delete rewrite the manifest under a running server: follow it,
	// so that the next request gets the new profile, and say so.
	s.images.Follow(s.storeChanged)
	// A server without its iPXE binaries or its default profile would answer every node and then
	// fail each boot one step later: refuse to start instead, naming what is missing.
	ipxe, err := images.LocateIPXE(cfg.IPXEDir)
	if err != nil {
		return fmt.Errorf("%s: ipxe_dir: %w", cfg.File(), err)
	}
	if err := s.openAuth(ipxe); err != nil {
		return err
	}
	// TFTP opens through the same confined handles as HTTP: a link in ipxe_dir to another file, or
	// one planted in the store, is refused by both.
	s.fsys = s.images.FSOpening(ipxe, s.files)
	if _, err := s.images.Get(cfg.Profile); err != nil {
		s.files.Close()
		return fmt.Errorf("%s: profile %q is not in the image store %s (bootctl image list --store %s): %w", cfg.File(), cfg.Profile, cfg.Images, cfg.Images, err)
	}
	return nil
}

// storeChanged logs what another process changed in the image store, which the server serves
// from the next request on.
func (s *Server) storeChanged(c images.Change, err error) {
	log := s.log.Named("images")
	if err != nil {
		log.Error("image store manifest changed but cannot be read; still serving the profiles read before", zap.Error(err))
		return
	}
	log.Info("image store changed; serving it from the next request on",
		zap.Strings("added", c.Added), zap.Strings("replaced", c.Replaced), zap.Strings("removed", c.Removed))
	for _, n := range c.Removed {
		if n == s.cfg.Profile {
			log.Warn("the default profile was removed from the image store: nodes without a profile of their own cannot boot", zap.String("profile", n))
		}
	}
}

// openStore opens where boot states are kept: the fleet's records in etcd, or this server's
// state files (recovered first when asked). It returns the nodes to track from the start: the
// owned ones, or none in a fleet, where nodes come with ownership. On success s.store is open;
// the caller closes it.
func (s *Server) openStore(opts Options) (tracked []*bootconfig.InventoryNode, err error) {
	tracked = s.auth.Owned()
	if opts.Fleet != nil {
		if s.fleet, err = newFleetRuntime(s, *opts.Fleet); err != nil {
			return nil, err
		}
		s.store, tracked = fleetSaves{s.fleet.store, s.fleet}, nil // the fleet's records; nodes come with ownership
		s.res = fleetReservations{s.fleet}
		if key := opts.Fleet.FleetSecret; len(key) > 0 && s.nodes.secret != nil {
			// One secret for the whole fleet, from the one the operator hands every server;
			// each server's tokens still differ, bound to its name (nodeAuth.token).
			s.nodes = nodeAuth{secret: fleetNodeSecret(key), issuer: s.nodes.issuer}
		}
		return tracked, nil
	}
	if opts.RecoverState {
		if err := s.recoverState(opts.Now); err != nil {
			return nil, err
		}
	}
	if s.store, err = boltstore.Open(s.cfg.StateDir); err != nil {
		return nil, err
	}
	return tracked, nil
}

// newEndpoints builds the boot-state tracker, the URL nodes reach HTTP at, the HTTP metrics and
// the TFTP server.
func (s *Server) newEndpoints(tracked []*bootconfig.InventoryNode, opts Options) (err error) {
	cfg := s.cfg
	srv := cfg.Servers[cfg.ServerID]
	s.tracker, err = nodestate.NewTracker(trackedNodes(tracked), cfg.Profile, nodestate.TrackerOptions{
		Store: s.store, Shared: s.fleet != nil, Flush: time.Duration(*cfg.StateFlush), Now: opts.Now, Registerer: s.reg,
		Logger: s.log.Named("state"), Server: srv.Name, ServerID: cfg.ServerID,
		ResetOnDiscover: cfg.ResetOnDiscover, History: cfg.Health.History, DHCPStartsBoots: cfg.DHCP.Mode != dhcpd.ModeOff,
	})
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(cfg.HTTP.Listen) // Listen sets the bound port
	if err := s.setBaseURL(port); err != nil {
		return err
	}
	if s.httpm, err = newHTTPMetrics(s.reg); err != nil {
		return err
	}
	if cfg.TFTP.Listen != "off" {
		return s.newTFTP(opts)
	}
	return nil
}

// newTFTP builds the TFTP server: the profile store and the iPXE binaries, then tftp.root (opened
// with os.Root, so that links cannot lead out of it) for the names they do not have.
func (s *Server) newTFTP(opts Options) error {
	cfg := s.cfg
	root := s.fsys
	if cfg.TFTP.Root != "" {
		dir, err := os.OpenRoot(cfg.TFTP.Root)
		if err != nil {
			return fmt.Errorf("%s: tftp.root: %w", cfg.File(), err)
		}
		s.tftpRoot = dir
		root = tftpd.Overlay(s.fsys, dir.FS())
	}
	var err error
	s.tftp, err = tftpd.New(tftpd.Config{
		Root: root, MaxBlockSize: cfg.TFTP.MaxBlockSize, MaxTransfers: cfg.TFTP.MaxTransfers,
		MaxTransfersPerClient: cfg.TFTP.MaxTransfersPerClient, Known: s.tftpKnown(),
		Observer: tftpObserver{s}, Registerer: s.reg, Logger: s.log.Named("tftp"), Now: opts.Now,
		NodeName: s.tracker.NameByIP, // "node" on every TFTP log line
	})
	if err != nil {
		s.closeTFTPRoot()
	}
	return err
}

// tftpKnown says which TFTP clients are nodes, for the slots kept for them; every other address
// shares the unknown addresses' quarter (tftpd's MaxUnknownTransfers), so that one host with many
// addresses cannot take every slot. Where this server sees a node's boot begin (its DHCP, in
// reservation or proxy mode), only a node that is booting now counts: the addresses of nodes
// powered off (or booted) are anyone's to take, and about 24 of them filled all 512 slots. With
// DHCP off nothing tells the server a boot began before the node's first download, so any node's
// address counts (its inventory address, or the one its script fetch was last seen from).
func (s *Server) tftpKnown() func(netip.Addr) bool {
	seesBoot := s.cfg.DHCP.Mode != dhcpd.ModeOff
	return func(a netip.Addr) bool {
		name, ok := s.tracker.NameByIP(a)
		if !ok {
			return false
		}
		if !seesBoot {
			return true
		}
		st, _ := s.tracker.State(name)
		return st >= nodestate.Discover && st <= nodestate.Booted
	}
}

// closeTFTPRoot releases tftp.root's directory handle.
func (s *Server) closeTFTPRoot() error {
	if s.tftpRoot == nil {
		return nil
	}
	err := s.tftpRoot.Close()
	s.tftpRoot = nil
	return err
}

// recoverState runs boltstore.Recover on the state directory and says what it did.
func (s *Server) recoverState(now func() time.Time) error {
	t := time.Now()
	if now != nil {
		t = now()
	}
	rec, err := boltstore.Recover(s.cfg.StateDir, t)
	if err != nil {
		return err
	}
	if rec.Damaged == "" {
		s.log.Info("--recover: the state file is sound, nothing to recover", zap.String("state_dir", s.cfg.StateDir))
		return nil
	}
	s.log.Warn("state file was damaged: kept aside, restarted from what could be read",
		zap.String("damaged_copy", rec.Damaged), zap.Int("recovered", rec.Recovered), zap.Int("lost", rec.Lost))
	return nil
}

// Close saves the boot states and closes the state database. Serve calls it when it returns; call
// it when a Server is built but never served. A Server cannot be used after Close.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		err := s.tracker.Stop()
		s.closeErr = errors.Join(err, s.closePool(), s.store.Close(), s.closeTFTPRoot(), s.files.Close())
	})
	return s.closeErr
}

// Authority returns the server's authority (which nodes it answers).
// In a fleet it is the ownership rule's answer for the live set last seen (before the server has
// joined: the home ownership).
func (s *Server) Authority() *bootconfig.Authority {
	if s.fleet != nil {
		if a := s.fleet.cur.Load(); a != nil {
			return a
		}
	}
	return s.auth
}

// Tracker returns the boot-state tracker.
func (s *Server) Tracker() *nodestate.Tracker { return s.tracker }

// Registry returns the metrics registry.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Listen opens the HTTP, TFTP and DHCP sockets, so that a busy port is reported before anything
// runs and ephemeral ports are known (HTTPAddr, TFTPAddr, DHCPAddrs).
func (s *Server) Listen(ctx context.Context) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpLn != nil {
		return nil
	}
	defer func() {
		if err != nil {
			s.closeLocked()
		}
	}()
	var lc net.ListenConfig
	if s.httpLn, err = lc.Listen(ctx, "tcp", s.cfg.HTTP.Listen); err != nil {
		return fmt.Errorf("http: %w", err)
	}
	_, port, _ := net.SplitHostPort(s.httpLn.Addr().String())
	if err := s.setBaseURL(port); err != nil {
		return err
	}
	if s.tftp != nil {
		pc, err := lc.ListenPacket(ctx, "udp4", s.cfg.TFTP.Listen)
		if err != nil {
			return fmt.Errorf("tftp: %w", err)
		}
		s.tftpConn = pc.(*net.UDPConn)
	}
	if s.cfg.DHCP.Mode != dhcpd.ModeOff {
		ifaces := s.cfg.DHCP.Interfaces
		if len(ifaces) == 0 {
			ifaces = []string{""}
		}
		for _, ifc := range ifaces {
			d, err := dhcpd.New(s.dhcpConfig(ifc))
			if err != nil {
				return err
			}
			if err := d.Listen(ctx); err != nil {
				return err
			}
			s.dhcp = append(s.dhcp, d)
		}
	}
	if s.cfg.DHCP.IPv6RA == bootconfig.IPv6RANoRouter {
		s.listenRAs()
	}
	return nil
}

// listenRAs opens the router advertisers of dhcp.ipv6_ra. One that cannot open is logged and
// left out: it only saves the nodes' firmware a wait, and the server serves without it.
func (s *Server) listenRAs() {
	addr := ""
	if id := s.cfg.ServerID; id >= 0 && id < len(s.cfg.Servers) {
		addr = s.cfg.Servers[id].Address
	}
	names, err := raInterfaces(s.cfg.DHCP.Interfaces, addr)
	if err == nil && len(names) == 0 {
		err = fmt.Errorf("no interface holds this server's address %q and dhcp.interfaces names none", addr)
	}
	if err != nil {
		s.log.Warn("no IPv6 router advertisements (dhcp.ipv6_ra): iPXE will wait 13-16 s for a router", zap.Error(err))
		return
	}
	for _, name := range names {
		ra, err := ListenNoRouter(name, 0, s.log)
		if err != nil {
			s.log.Warn("no IPv6 router advertisements (dhcp.ipv6_ra): iPXE will wait 13-16 s for a router", zap.Error(err))
			continue
		}
		s.ras = append(s.ras, ra)
	}
}

// closeLocked closes the sockets opened so far (after a failed Listen).
func (s *Server) closeLocked() {
	if s.httpLn != nil {
		s.httpLn.Close()
		s.httpLn = nil
	}
	if s.tftpConn != nil {
		s.tftpConn.Close()
		s.tftpConn = nil
	}
	for _, ra := range s.ras {
		ra.Close()
	}
	s.ras = nil
	if len(s.dhcp) > 0 {
		// dhcpd closes its sockets when Serve's context ends.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for _, d := range s.dhcp {
			_ = d.Serve(ctx)
		}
		s.dhcp = nil
	}
}

// setBaseURL decides the URL nodes use: http.url, or this server's address and the HTTP port.
// port is the HTTP port.
func (s *Server) setBaseURL(port string) error {
	base := s.cfg.HTTP.URL
	if base == "" {
		base = "http://" + net.JoinHostPort(s.cfg.ServerAddr().String(), port)
	}
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return &bootconfig.Error{File: s.cfg.File(), Field: "http.url", Msg: fmt.Sprintf("%q is not a URL", base)}
	}
	p := u.Port()
	if p == "" {
		p = "80"
		if u.Scheme == "https" {
			p = "443"
		}
	}
	s.urlPort, _ = strconv.Atoi(p)
	s.urlHost, s.baseURL = u.Hostname(), base
	return nil
}

func (s *Server) dhcpConfig(ifc string) dhcpd.Config {
	c := s.cfg.DHCP
	server := net.IP(s.cfg.ServerAddr().AsSlice())
	boot := dhcpd.BootConfig{
		BIOSFile: c.BIOSFile, EFIx64File: c.EFIx64File, EFIArm64File: c.EFIArm64File, IPXEUserClass: c.IPXEUserClass,
		HTTPPort:      s.urlPort,
		IPXEScriptURL: s.baseURL + "/ipxe/{mac}",
		Token:         s.proxyToken,
		HTTPBootURL:   s.baseURL + "/ipxe/bin/{file}",
	}
	dc := dhcpd.Config{
		Mode: c.Mode, Interface: ifc, Addr: c.Listen, ServerIP: server,
		Boot: boot, Reservations: s.res, LeaseTime: time.Duration(c.LeaseTime), Workers: c.Workers,
		Logger: s.log.Named("dhcp"), Registerer: s.reg, Observer: newDHCPObserver(s),
	}
	if p, err := netip.ParsePrefix(c.Subnet); err == nil {
		dc.Networks = []netip.Prefix{p.Masked()} // relays' giaddr and INFORMs' ciaddr must lie in it
	}
	if c.Mode == dhcpd.ModeProxy && s.nodes.secret != nil {
		// The node's address is not this server's to give, so the script URL carries the token.
		dc.Boot.IPXEScriptURL += "?token={token}"
	}
	if s.addrPool != nil {
		dc.Pool, dc.PoolAllowed, dc.PoolNetwork = s.addrPool, s.poolAllowed, c.PoolNetwork()
		if dc.Workers == 0 {
			dc.Workers = poolWorkers
		}
	}
	return dc
}

// HTTPAddr returns the HTTP endpoint's address (after Listen).
func (s *Server) HTTPAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpLn == nil {
		return nil
	}
	return s.httpLn.Addr()
}

// TFTPAddr returns the TFTP endpoint's address (after Listen; nil when TFTP is off).
func (s *Server) TFTPAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tftpConn == nil {
		return nil
	}
	return s.tftpConn.LocalAddr()
}

// DHCPAddrs returns the DHCP sockets' addresses (after Listen).
func (s *Server) DHCPAddrs() []*net.UDPAddr {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*net.UDPAddr
	for _, d := range s.dhcp {
		out = append(out, d.LocalAddrs()...)
	}
	return out
}

// BaseURL returns the URL nodes use to reach the HTTP endpoint (after Listen).
func (s *Server) BaseURL() string { return s.baseURL }

// Ready is closed once Serve's endpoints answer: a fleet server's after it has computed its nodes.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Serve runs the endpoints until ctx ends, then stops them gracefully: HTTP requests in flight get
// up to 5 s, TFTP transfers and queued DHCP requests finish, and the boot states are saved. The
// first endpoint failure stops the others and is returned.
func (s *Server) Serve(ctx context.Context) error {
	if err := s.Listen(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	ln, tconn, dh, ras := s.httpLn, s.tftpConn, s.dhcp, s.ras
	s.mu.Unlock()

	if s.fleet != nil {
		s.reconcileFirst(ctx)
	}
	s.readyOnce.Do(func() { close(s.ready) })
	g := &endpointGroup{errs: make(chan error, 4+len(dh)+len(ras)), cancel: cancel}
	s.serveHTTP(ctx, g, ln)
	if tconn != nil {
		g.run("tftp", func() error { return s.tftp.Serve(ctx, tconn) })
	}
	for _, d := range dh {
		g.run("dhcp", func() error { return d.Serve(ctx) })
	}
	for _, ra := range ras {
		g.run("ipv6 ra", func() error { return ra.Serve(ctx) })
	}
	if s.fleet != nil {
		g.run("fleet", func() error { return s.runFleet(ctx) })
	}
	stateCtx, stopState := context.WithCancel(context.WithoutCancel(ctx))
	stateDone := make(chan error, 1)
	go func() { stateDone <- s.tracker.Run(stateCtx) }()
	attrs := []zap.Field{zap.Stringer("http", ln.Addr()), zap.String("url", s.baseURL), zap.String("dhcp", string(s.cfg.DHCP.Mode))}
	if tconn != nil {
		attrs = append(attrs, zap.Stringer("tftp", tconn.LocalAddr()))
	}
	s.log.Info("boot server running", attrs...)
	g.wg.Wait()
	// The endpoints are done: the tracker's last save now holds their last events.
	stopState()
	if err := <-stateDone; err != nil {
		g.errs <- fmt.Errorf("state: %w", err)
	}
	return s.stopped(g.errs)
}

// endpointGroup runs a server's endpoints, each in its own goroutine; the first to fail cancels
// the others. errs must hold an error from every endpoint and the state saver.
type endpointGroup struct {
	wg     sync.WaitGroup
	errs   chan error
	cancel context.CancelFunc
}

// run starts endpoint name.
func (g *endpointGroup) run(name string, f func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := f(); err != nil {
			g.errs <- fmt.Errorf("%s: %w", name, err)
			g.cancel()
		}
	}()
}

// serveHTTP runs the HTTP endpoint on ln until ctx ends, then gives the requests in flight up to
// 5 s before it closes their connections.
func (s *Server) serveHTTP(ctx context.Context, g *endpointGroup, ln net.Listener) {
	hs := s.httpServer()
	g.run("http", func() error {
		if err := hs.Serve(newLimitListener(ln, s.cfg.HTTP.MaxConnsPerClient, s.httpm.refused)); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.run("http shutdown", func() error {
		<-ctx.Done()
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer scancel()
		if err := hs.Shutdown(sctx); err != nil {
			hs.Close()
		}
		return nil
	})
}

// stopped closes the server after its endpoints and state saver have ended and returns their
// errors (errs, which it closes) with the close's.
func (s *Server) stopped(errs chan error) error {
	close(errs)
	s.mu.Lock()
	s.httpLn, s.tftpConn, s.dhcp = nil, nil, nil
	s.mu.Unlock()
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := s.Close(); err != nil {
		all = append(all, fmt.Errorf("state: %w", err))
	}
	s.log.Info("boot server stopped")
	return errors.Join(all...)
}

// trackedNodes is what a boot-state tracker keeps of nodes.
func trackedNodes(nodes []*bootconfig.InventoryNode) []nodestate.Node {
	out := make([]nodestate.Node, len(nodes))
	for i, n := range nodes {
		out[i] = nodestate.Node{Name: n.Name, MAC: n.MAC, IP: n.IP, Position: n.Position, Profile: n.Profile}
	}
	return out
}
