package tftpd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/pin/tftp/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Defaults for zero Config fields.
const (
	// DefaultMaxBlockSize fits one DATA packet in a 1500-byte Ethernet frame
	// (1500 - 20 IP - 8 UDP - 4 TFTP); it is what UEFI firmware asks for.
	DefaultMaxBlockSize = 1468
	DefaultMaxTransfers = 512
	DefaultTimeout      = 3 * time.Second
	DefaultRetries      = 5
	// DefaultMaxClientTimeout: firmware asks for 1-5 s when it asks at
	// all; 255 s (the RFC 2349 maximum) would let a silent client hold a
	// slot for 21 minutes over its retries.
	DefaultMaxClientTimeout = 5 * time.Second
	// DefaultMaxTransferTime lets a 1 GB image through lock-step at 2 MB/s.
	DefaultMaxTransferTime = 10 * time.Minute
	// DefaultMaxTransfersPerClient: a node fetches one file at a time (two
	// with the UEFI tsize probe); a relay or NAT in front of many may need
	// more.
	DefaultMaxTransfersPerClient = 16
)

// Limits of the blksize option (RFC 2348) as pin/tftp applies them.
const (
	minBlockCap = 513 // pin/tftp ignores a cap of 512 or less
	maxBlockCap = 65464
)

// Config configures a Server. Root is required; zero values elsewhere take
// the defaults above.
type Config struct {
	// Root is what the server serves. For a directory use
	// (*os.Root).FS, which also confines symbolic links; os.DirFS does not.
	Root fs.FS
	// MaxBlockSize caps the negotiated blksize (513..65464). The default,
	// 1468, fits a 1500-byte MTU; lower it for smaller MTUs (a bigger block
	// is still delivered, in IP fragments).
	MaxBlockSize int
	// MaxTransfers bounds concurrent read transfers; requests beyond it are
	// refused at once with a TFTP error, never queued.
	MaxTransfers int
	// Timeout is how long the server waits for each ACK before sending
	// again; Retries is how many times it sends before giving up.
	Timeout time.Duration
	Retries int
	// MaxClientTimeout is the longest per-try timeout a client may ask for
	// with the timeout option (RFC 2349, 1..255 s); a larger request is
	// left out of the OACK and the server's Timeout applies. Default 5 s.
	MaxClientTimeout time.Duration
	// MaxTransferTime bounds how long one transfer may hold its slot,
	// however steadily the client acknowledges. Default 10 min.
	MaxTransferTime time.Duration
	// MaxTransfersPerClient bounds the transfers one client address may
	// run at once, so that one host cannot take every slot. Default 16.
	MaxTransfersPerClient int
	// Known says whether a client address is one of the server's nodes
	// (a boot server knows them from DHCP and its inventory). Addresses it
	// does not know share MaxUnknownTransfers slots, so that one host with
	// many addresses cannot take the slots the nodes need. Nil: every
	// address is known.
	Known func(addr netip.Addr) bool
	// MaxUnknownTransfers bounds the transfers of all the addresses Known
	// does not know together. Default MaxTransfers/4 (at least 1).
	MaxUnknownTransfers int
	// Anticipate, when 2 or more, makes the server send that many DATA
	// blocks before waiting for their ACKs on transfers that did not ask
	// for windowsize (pin/tftp's SetAnticipate, at most 60). It is not
	// RFC 7440 windowsize, which clients that ask for it get anyway:
	// nothing is negotiated, the client still ACKs every block, and a lost
	// block costs a timeout and a resend of the whole window. Off (0) by
	// default: lock-step is what every firmware expects; enable it only
	// for clients known to tolerate it. Retransmissions are not counted in
	// this mode, and pin/tftp runs these transfers with the slot limits
	// (MaxTransfers, MaxTransfersPerClient) but not the others: it ignores
	// the timeout option and MaxTransferTime, does not notice ICMP port
	// unreachable, and Serve waits up to Timeout x Retries for them.
	Anticipate uint
	// Observer is told about each read transfer (boot state). May be nil.
	Observer Observer
	// Registerer receives the server's metrics. May be nil.
	Registerer prometheus.Registerer
	// Logger may be nil. Every line about a request carries the fields
	// described on NodeName; give the Logger the server's own (name) with
	// Logger.With.
	Logger *zap.Logger
	// NodeName names the node at a client address, for the "node" field of
	// the log lines about its requests (a boot server knows it from DHCP).
	// It is called only when a line is logged, and must be safe for
	// concurrent use. Nil: no "node" field.
	NodeName func(addr netip.Addr) (string, bool)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server is a read-only TFTP server. Create it with New and run it with
// Serve or ListenAndServe, once.
type Server struct {
	root     fs.FS
	blockCap int
	timeout  time.Duration
	retries  int
	antic    uint

	maxClientTimeout time.Duration
	maxTransferTime  time.Duration
	perClient        int
	known            func(netip.Addr) bool
	maxUnknown       int
	obs              Observer
	log              *zap.Logger
	nodeName         func(netip.Addr) (string, bool)
	now              func() time.Time
	m                *metrics

	slots    chan struct{} // one token per running transfer
	threads  chan struct{} // one token per lock-step transfer blocking a thread (lockstep.go)
	stopping chan struct{} // closed when Serve's context ends
	served   chan struct{} // closed by the first Serve call

	mu      sync.Mutex
	stats   map[netip.AddrPort]*tftp.TransferStats // running pin/tftp transfers; filled by the library hook
	clients map[netip.Addr]int                     // running transfers per client address
	unknown int                                    // running transfers of addresses Known does not know
	conns   map[*net.UDPConn]struct{}              // sockets of running transfers of our own (see stop)
	peers   map[netip.AddrPort]struct{}            // client ports (TIDs) with a transfer of our own running

	transfers sync.WaitGroup // transfers of our own (see front)
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Server{
		root:     cfg.Root,
		blockCap: cfg.MaxBlockSize,
		timeout:  cfg.Timeout,
		retries:  cfg.Retries,
		antic:    cfg.Anticipate,

		maxClientTimeout: cfg.MaxClientTimeout,
		maxTransferTime:  cfg.MaxTransferTime,
		perClient:        cfg.MaxTransfersPerClient,
		known:            cfg.Known,
		maxUnknown:       cfg.MaxUnknownTransfers,
		clients:          make(map[netip.Addr]int),
		conns:            make(map[*net.UDPConn]struct{}),
		peers:            make(map[netip.AddrPort]struct{}),
		obs:              cfg.Observer,
		log:              cfg.Logger,
		nodeName:         cfg.NodeName,
		now:              cfg.Now,
		m:                m,
		slots:            make(chan struct{}, cfg.MaxTransfers),
		threads:          make(chan struct{}, lockStepThreads),
		stopping:         make(chan struct{}),
		served:           make(chan struct{}),
		stats:            make(map[netip.AddrPort]*tftp.TransferStats),
	}, nil
}

// withDefaults checks cfg and returns it with every zero field set to its
// default.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Root == nil {
		return cfg, errors.New("tftpd: Config.Root is nil")
	}
	if cfg.MaxBlockSize == 0 {
		cfg.MaxBlockSize = DefaultMaxBlockSize
	}
	if cfg.MaxBlockSize < minBlockCap || cfg.MaxBlockSize > maxBlockCap {
		return cfg, fmt.Errorf("tftpd: Config.MaxBlockSize %d out of range %d..%d", cfg.MaxBlockSize, minBlockCap, maxBlockCap)
	}
	if cfg.MaxTransfers == 0 {
		cfg.MaxTransfers = DefaultMaxTransfers
	}
	if cfg.MaxTransfers < 0 {
		return cfg, fmt.Errorf("tftpd: Config.MaxTransfers %d is negative", cfg.MaxTransfers)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Retries <= 0 {
		cfg.Retries = DefaultRetries
	}
	if err := limitDefaults(&cfg); err != nil {
		return cfg, err
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg, nil
}

// limitDefaults checks the anti-abuse limits of cfg and fills the
// defaults of zero ones.
func limitDefaults(cfg *Config) error {
	if cfg.MaxClientTimeout < 0 || cfg.MaxTransferTime < 0 || cfg.MaxTransfersPerClient < 0 {
		return fmt.Errorf("tftpd: Config.MaxClientTimeout (%v), MaxTransferTime (%v) and MaxTransfersPerClient (%d) must not be negative",
			cfg.MaxClientTimeout, cfg.MaxTransferTime, cfg.MaxTransfersPerClient)
	}
	if cfg.MaxClientTimeout == 0 {
		cfg.MaxClientTimeout = DefaultMaxClientTimeout
	}
	if cfg.MaxTransferTime == 0 {
		cfg.MaxTransferTime = DefaultMaxTransferTime
	}
	if cfg.MaxTransfersPerClient == 0 {
		cfg.MaxTransfersPerClient = DefaultMaxTransfersPerClient
	}
	if cfg.MaxUnknownTransfers < 0 {
		return fmt.Errorf("tftpd: Config.MaxUnknownTransfers %d is negative", cfg.MaxUnknownTransfers)
	}
	if cfg.MaxUnknownTransfers == 0 {
		cfg.MaxUnknownTransfers = max(cfg.MaxTransfers/4, 1)
	}
	return nil
}

// Active returns the number of read transfers in progress.
func (s *Server) Active() int { return len(s.slots) }

// ListenAndServe binds addr ("host:port", UDP) and serves until ctx ends.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return fmt.Errorf("tftpd: resolving listen address %q: %w", addr, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return fmt.Errorf("tftpd: listening on %q: %w", addr, err)
	}
	return s.Serve(ctx, conn)
}

// Serve serves requests arriving on conn until ctx ends, then stops taking
// requests, makes running transfers fail at their next block, waits for
// them and returns nil. Serve owns conn and closes it. Each transfer
// answers from its own ephemeral port, as TFTP requires.
func (s *Server) Serve(ctx context.Context, conn *net.UDPConn) error {
	select {
	case <-s.served:
		conn.Close()
		return errors.New("tftpd: Serve called twice")
	default:
		close(s.served)
	}
	fc, err := newFront(s, conn)
	if err != nil {
		conn.Close()
		return err
	}
	lib := tftp.NewServer(s.handleRead, s.handleWrite)
	lib.SetHook(hook{s})
	lib.SetBlockSize(s.blockCap)
	// pin/tftp's MTU clamp needs the *net.UDPConn that front hides; without
	// it the library would clamp every block to 512 bytes.
	lib.SetBlockSizeNegotiation(false)
	lib.SetTimeout(s.timeout)
	lib.SetRetries(s.retries)
	if s.antic >= 2 {
		lib.SetAnticipate(s.antic)
	}
	s.log.Info("tftp serving", zap.Stringer("addr", conn.LocalAddr()),
		zap.Int("max_blksize", s.blockCap), zap.Int("max_transfers", cap(s.slots)), zap.Uint("anticipate", s.antic))

	errc := make(chan error, 1)
	go func() { errc <- lib.Serve(fc) }()
	select {
	case <-ctx.Done():
	case err = <-errc:
		errc = nil
	}
	s.stop()
	lib.Shutdown() // closes conn, waits for pin/tftp's transfers
	if errc != nil {
		<-errc
	}
	conn.Close() // Shutdown misses conn if it ran before lib.Serve stored it
	s.transfers.Wait()
	s.log.Info("tftp stopped", zap.Stringer("addr", conn.LocalAddr()))
	if err != nil {
		return fmt.Errorf("tftpd: serving on %s: %w", conn.LocalAddr(), err)
	}
	return nil
}

var (
	errBusy     = errors.New("server busy")
	errWrite    = errors.New("write requests are refused: read-only server")
	errShutdown = errors.New("server shutting down")
	errNotFile  = errors.New("not a regular file")
)

// handleWrite refuses every write request; pin/tftp sends the ERROR packet.
func (s *Server) handleWrite(filename string, wt io.WriterTo) error {
	remote := netip.AddrPort{}
	if ra, ok := wt.(interface{ RemoteAddr() net.UDPAddr }); ok {
		a := ra.RemoteAddr()
		remote = a.AddrPort()
	}
	s.m.transfers.WithLabelValues(string(OutcomeRefused)).Inc()
	s.logRequest(zap.InfoLevel, "tftp write refused", s.requestLog(remote, filename, nil))
	return errWrite
}

// handleRead runs one lock-step transfer in pin/tftp's goroutine for it.
func (s *Server) handleRead(filename string, rf io.ReaderFrom) error {
	ot, _ := rf.(tftp.OutgoingTransfer)
	var remote netip.AddrPort
	if ot != nil {
		a := ot.RemoteAddr()
		remote = a.AddrPort()
		remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	}
	// A refusal returned here is sent by pin/tftp as an ERROR packet; once
	// ReadFrom has run, pin/tftp has already sent one, so nil is returned
	// to keep it from sending another.
	return s.serveRead(s.requestLog(remote, filename, nil), func(r io.Reader, size int64) (sendStats, error) {
		if ot != nil {
			ot.SetSize(size)
		}
		s.mu.Lock()
		s.stats[remote] = nil // let the hook record this transfer's stats
		s.mu.Unlock()
		_, err := rf.ReadFrom(r)
		s.mu.Lock()
		st := s.stats[remote]
		delete(s.stats, remote)
		s.mu.Unlock()
		var out sendStats
		if st != nil {
			out.blockSize, _ = strconv.Atoi(st.Opts["blksize"])
			out.retransmissions = retransmissions(*st, err == nil)
		}
		return out, err
	})
}

// sendStats is what an engine reports of a transfer it ran.
type sendStats struct {
	blockSize       int // 0: the default, 512
	windowSize      int // 0: lock-step
	retransmissions int
}

// serveRead is one read transfer, whichever engine moves its blocks: the
// transfer limit, path resolution, opening the file and reporting are
// here, and send runs the protocol over the open file. rl names the
// request. The error returned is a refusal for the engine to send to the
// client before any protocol ran; once send has run it is nil, whatever
// the outcome.
func (s *Server) serveRead(rl requestLog, send func(r io.Reader, size int64) (sendStats, error)) error {
	start := s.now()
	remote := rl.remote
	res := TransferResult{
		TransferInfo: TransferInfo{Remote: remote, Filename: rl.filename},
		Size:         -1,
		BlockSize:    defaultBlockSize,
		WindowSize:   1,
	}
	finish := func(o Outcome, err error) error {
		res.Outcome, res.Err, res.Duration = o, err, s.now().Sub(start)
		s.m.done(res)
		s.obs.OnTransferDone(res)
		s.logDone(res, rl)
		return err
	}

	unknown, err := s.acquire(remote.Addr())
	if err != nil {
		s.obs.OnTransferStart(res.TransferInfo)
		return finish(OutcomeRefused, err)
	}
	defer s.release(remote.Addr(), unknown)
	s.m.active.Inc()
	defer s.m.active.Dec()

	p, err := Resolve(rl.filename)
	if err != nil {
		s.obs.OnTransferStart(res.TransferInfo)
		return finish(OutcomeRefused, err)
	}
	res.Path = p
	s.obs.OnTransferStart(res.TransferInfo)

	f, size, err := s.open(p)
	if err != nil {
		return finish(OutcomeNotFound, err)
	}
	defer f.Close()
	res.Size = size

	cr := &countingReader{r: bufferedFile(f), stop: s.stopping}
	st, err := send(cr, size)
	res.Bytes = cr.n
	if st.blockSize > 0 {
		res.BlockSize = st.blockSize
	}
	if st.windowSize > 0 {
		res.WindowSize = st.windowSize
	}
	res.Retransmissions = st.retransmissions
	if err == nil {
		finish(OutcomeOK, nil)
		return nil
	}
	finish(classify(err, cr.n), err)
	return nil
}

// acquire takes a transfer slot for a client, or says why not; unknown says whether it counts
// among the addresses Known does not know (release needs it: Known may change its answer).
func (s *Server) acquire(client netip.Addr) (unknown bool, err error) {
	select {
	case s.slots <- struct{}{}:
	default:
		return false, fmt.Errorf("%w: %d transfers running, limit reached; retry later", errBusy, cap(s.slots))
	}
	// Known is asked outside mu: a boot server's takes its own lock.
	unknown = s.known != nil && !s.known(client)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.clients[client]; n >= s.perClient {
		<-s.slots
		return false, fmt.Errorf("%w: %d transfers from %s running, per-client limit reached; retry later", errBusy, n, client)
	}
	if unknown && s.unknown >= s.maxUnknown {
		<-s.slots
		return false, fmt.Errorf("%w: %d transfers from addresses that are no node of this server running, their limit reached; retry later", errBusy, s.unknown)
	}
	s.clients[client]++
	if unknown {
		s.unknown++
	}
	return unknown, nil
}

// release gives back client's slot; unknown is what acquire found.
func (s *Server) release(client netip.Addr, unknown bool) {
	s.mu.Lock()
	if s.clients[client]--; s.clients[client] <= 0 {
		delete(s.clients, client)
	}
	if unknown {
		s.unknown--
	}
	s.mu.Unlock()
	<-s.slots
}

// open stats before opening so that a FIFO or device in the root cannot
// block the transfer goroutine in open(2).
func (s *Server) open(p string) (fs.File, int64, error) {
	fi, err := fs.Stat(s.root, p)
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s: %w", p, errNotFile)
	}
	f, err := s.root.Open(p)
	if err != nil {
		return nil, 0, err
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %w", p, errNotFile)
	}
	return f, fi.Size(), nil
}

// logDone logs the end of transfer r of request rl: at debug level when
// it went as it should, else at info level with the error.
func (s *Server) logDone(r TransferResult, rl requestLog) {
	level, msg, errField := zap.DebugLevel, "tftp transfer done", zap.Skip()
	if r.Outcome != OutcomeOK && r.Outcome != OutcomeProbe {
		level, msg, errField = zap.InfoLevel, "tftp transfer failed", zap.Error(r.Err)
	}
	ce := s.log.Check(level, msg)
	if ce == nil {
		return
	}
	ce.Write(rl.fields(zap.String("path", r.Path),
		zap.String("outcome", string(r.Outcome)), zap.Int64("bytes", r.Bytes), zap.Int("blksize", r.BlockSize), zap.Int("windowsize", r.WindowSize),
		zap.Duration("duration", r.Duration), zap.Int("retransmissions", r.Retransmissions), errField)...)
}

// clientError matches the error pin/tftp returns when the client sends an
// ERROR packet; block 0 means right after the OACK, before any data.
var clientError = regexp.MustCompile(`^sending block (\d+): code=(\d+)`)

// classify names the outcome of a failed ReadFrom. bytes is how much of
// the file had been read.
func classify(err error, bytes int64) Outcome {
	if errors.Is(err, errShutdown) {
		return OutcomeError
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return OutcomeTimeout
	}
	if errors.Is(err, errGone) {
		return OutcomeAborted
	}
	var pe *peerError
	if errors.As(err, &pe) {
		if pe.block == 0 && bytes == 0 {
			return OutcomeProbe
		}
		return OutcomeAborted
	}
	if m := clientError.FindStringSubmatch(err.Error()); m != nil {
		if m[1] == "0" && bytes == 0 {
			return OutcomeProbe
		}
		return OutcomeAborted
	}
	return OutcomeError
}

// retransmissions derives resends from pin/tftp's counters: every
// datagram sent but not acknowledged was sent again, except the last one
// of a failed transfer.
func retransmissions(st tftp.TransferStats, ok bool) int {
	r := st.DatagramsSent - st.DatagramsAcked
	if !ok {
		r--
	}
	return max(r, 0)
}

// hook receives pin/tftp's per-transfer statistics. The library calls it in
// the transfer goroutine inside ReadFrom, so handleRead finds the entry
// right after ReadFrom returns. Calls without a remote address come from
// the accept loop: malformed or unexpected datagrams. Statistics of
// transfers handleRead is not waiting for (refused before ReadFrom) are
// dropped so the map cannot grow.
type hook struct{ s *Server }

func (h hook) OnSuccess(st tftp.TransferStats) { h.record(st) }

func (h hook) OnFailure(st tftp.TransferStats, err error) {
	if st.RemoteAddr == nil {
		select {
		case <-h.s.stopping:
			return // the request loop's read failing as Serve closes the socket
		default:
		}
		h.s.m.badRequests.Inc()
		h.s.log.Debug("tftp bad request dropped", zap.Error(err))
		return
	}
	h.record(st)
}

func (h hook) record(st tftp.TransferStats) {
	a, ok := netip.AddrFromSlice(st.RemoteAddr)
	if !ok {
		return
	}
	key := netip.AddrPortFrom(a.Unmap(), uint16(st.Tid))
	h.s.mu.Lock()
	if _, running := h.s.stats[key]; running {
		h.s.stats[key] = &st
	}
	h.s.mu.Unlock()
}

// countingReader counts file bytes handed to the library and fails the
// transfer at its next block once the server is stopping.
type countingReader struct {
	r    io.Reader
	n    int64
	stop <-chan struct{}
}

func (c *countingReader) Read(p []byte) (int, error) {
	select {
	case <-c.stop:
		return 0, errShutdown
	default:
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
