package tftpd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"sync"
	"time"

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

// Limits of Config.MaxBlockSize. RFC 2348 allows blocks of 8..65464 bytes,
// but a cap of 512 or less gains nothing over RFC 1350's 512-byte blocks,
// and below 512 would give clients that ask for blksize smaller blocks than
// clients that do not.
const (
	minBlockCap = 513
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
	stopping chan struct{} // closed when Serve's context ends
	served   chan struct{} // closed by the first Serve call

	mu      sync.Mutex
	clients map[netip.Addr]int          // running transfers per client address
	unknown int                         // running transfers of addresses Known does not know
	conns   map[*net.UDPConn]struct{}   // sockets of running windowed transfers (see stop)
	peers   map[netip.AddrPort]struct{} // client ports (TIDs) with a transfer running

	transfers sync.WaitGroup // running transfers (startTransfer)
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
		stopping:         make(chan struct{}),
		served:           make(chan struct{}),
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

var (
	errBusy     = errors.New("server busy")
	errWrite    = errors.New("write requests are refused: read-only server")
	errShutdown = errors.New("server shutting down")
	errNotFile  = errors.New("not a regular file")
)

// sendStats is what a sender reports of a transfer it ran.
type sendStats struct {
	blockSize       int // 0: the default, 512
	windowSize      int // 0: lock-step
	retransmissions int
}

// serveRead is one read transfer, whichever sender moves its blocks: the
// transfer limit, path resolution, opening the file and reporting are
// here, and send runs the protocol over the open file. rl names the
// request. The error returned is a refusal for the caller to send to the
// client before any protocol ran; once send has run it is nil, whatever
// the outcome.
func (s *Server) serveRead(rl requestLog, send func(r io.Reader, size int64) (sendStats, error)) error {
	unknown, err := s.acquire(rl.remote.Addr())
	if err != nil {
		s.refused(rl, err)
		return err
	}
	return s.serveAdmitted(rl, unknown, send)
}

// newResult is the result of the transfer rl asks for, before it ran.
func newResult(rl requestLog) TransferResult {
	return TransferResult{
		TransferInfo: TransferInfo{Remote: rl.remote, Filename: rl.filename},
		Size:         -1,
		BlockSize:    defaultBlockSize,
		WindowSize:   1,
	}
}

// finish reports transfer res of request rl, which started at start.
func (s *Server) finish(res TransferResult, rl requestLog, start time.Time, o Outcome, err error) {
	res.Outcome, res.Err, res.Duration = o, err, s.now().Sub(start)
	s.m.done(res)
	s.obs.OnTransferDone(res)
	s.logDone(res, rl)
}

// refused reports request rl refused by acquire with err.
func (s *Server) refused(rl requestLog, err error) {
	res := newResult(rl)
	s.obs.OnTransferStart(res.TransferInfo)
	s.finish(res, rl, s.now(), OutcomeRefused, err)
}

// serveAdmitted is serveRead once acquire has given the request a slot
// (unknown is its answer); it releases the slot.
func (s *Server) serveAdmitted(rl requestLog, unknown bool, send func(r io.Reader, size int64) (sendStats, error)) error {
	start := s.now()
	remote := rl.remote
	res := newResult(rl)
	finish := func(o Outcome, err error) error {
		s.finish(res, rl, start, o, err)
		return err
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

// classify names the outcome of a failed send. bytes is how much of
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
	return OutcomeError
}

// countingReader counts file bytes handed to the sender and fails the
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
