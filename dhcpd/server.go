package dhcpd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// ErrPortInUse is returned (wrapped) by Listen and Serve when another process
// already holds the DHCP port. SO_REUSEPORT is deliberately not set: it would
// let a second server start silently and split the traffic.
var ErrPortInUse = errors.New("port already held by another process (another DHCP server or bootctl instance?)")

// Observer is told about every handled request, e.g. to track boot state
// (discover -> offered -> bound). OnDHCP is called from the worker before the
// reply is sent, so that a client's next request is never observed before the
// answer to its previous one; if sending then fails, it is called again with
// OutcomeSendFailed. It must be fast and must not block. kind is the client's (KindOf).
type Observer interface {
	OnDHCP(mac net.HardwareAddr, msgType dhcpv4.MessageType, outcome Outcome, ip net.IP, kind ClientKind)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(mac net.HardwareAddr, msgType dhcpv4.MessageType, outcome Outcome, ip net.IP, kind ClientKind)

// OnDHCP implements Observer.
func (f ObserverFunc) OnDHCP(mac net.HardwareAddr, t dhcpv4.MessageType, o Outcome, ip net.IP, kind ClientKind) {
	f(mac, t, o, ip, kind)
}

// Config configures a Server. The zero value of every field is usable and
// documented on the field; a zero Config is a reservation-mode server on
// 0.0.0.0:67 that answers nobody (no Reservations, no Pool).
type Config struct {
	// Mode: "" or ModeReservation, ModeProxy, ModeOff.
	Mode Mode
	// Interface binds the sockets to one interface (SO_BINDTODEVICE).
	// "": all interfaces.
	Interface string
	// Addr is the listen address. "": "0.0.0.0:67". Port 0 picks a free
	// port (tests).
	Addr string
	// ProxyAddr is the proxyDHCP boot-server listen address, used in
	// ModeProxy only. "": Addr's IP with port 4011.
	ProxyAddr string
	// ServerIP is this server's identity (siaddr, options 54 and 66).
	// Nil: the request's destination address when unicast, else the first
	// IPv4 address of the interface the request arrived on.
	ServerIP net.IP
	// ClientPort is where replies to clients go. 0: 68.
	ClientPort int
	// RelayPort is where replies to a relay (giaddr) go. 0: 67.
	RelayPort int

	// Boot names boot files and URLs; see BootConfig for its defaults.
	Boot BootConfig
	// Reservations says which MACs this server owns. Nil: none (only the
	// Pool answers; in ModeProxy nil means every PXE client).
	Reservations Reservations
	// Pool, if set, gives addresses to MACs without a reservation in
	// ModeReservation. The caller opens and closes it. *Pool (bbolt, one
	// server) is one; a fleet's pool allocates through etcd.
	Pool AddressPool
	// PoolAllowed says which MACs without a reservation may use the Pool.
	// Nil: all of them. With several boot servers, exclude the MACs the
	// mapping assigns to other servers so that only their owner answers.
	PoolAllowed func(mac net.HardwareAddr) bool
	// PoolNetwork gives the mask, router, DNS and domain of Pool leases
	// (its Name and IP are ignored).
	PoolNetwork Reservation
	// Networks are the networks this server hands out addresses on. A
	// relayed request is answered only when its giaddr lies in one of them or
	// in the network of the client's reserved address (IP and Mask), and an
	// INFORM only when its ciaddr does (the reply goes to ciaddr): otherwise
	// any host could make the server send to any address. Nil: only the
	// reserved address's network. Besides, a giaddr must be one host's
	// address outside every subnet the server is attached to (a relay there
	// is a spoofed one: clients there reach the server directly), and an
	// INFORM's ciaddr the client's reserved address or pool lease; other
	// requests are refused and counted (OutcomeRefused, Decision.Reason).
	Networks []netip.Prefix
	// LeaseTime is option 51. 0: the Pool's LeaseTime when a Pool is set,
	// else 1 h.
	LeaseTime time.Duration

	// Workers handling packets. 0: 8.
	Workers int
	// QueueSize is how many packets may wait for a worker; more are dropped
	// (counted as queue_full). 0: 1024. Every message but DISCOVER is served
	// before the DISCOVERs waiting (at most 8 in a row while they wait) and
	// may take the place of the DISCOVER queued last in a full queue: a
	// DISCOVER only starts an exchange that a REQUEST finishes.
	QueueSize int
	// StaleAfter drops a queued request that its client has not repeated for
	// this long: it has given up, and answering is wasted work (counted as
	// stale). A request whose client has moved on (a REQUEST after its
	// DISCOVER, a new xid) is dropped too (superseded). 0: 20 s, longer than
	// the usual retransmit intervals; negative: never stale by age.
	StaleAfter time.Duration
	// ReadBuffer is the socket receive buffer (SO_RCVBUF) in bytes, which
	// absorbs bursts while the reader is descheduled. 0: 4 MiB (forced past
	// net.core.rmem_max when running as root); negative: kernel default.
	ReadBuffer int

	// Logger. Nil: no logging.
	Logger *zap.Logger
	// Registerer for the Prometheus metrics. Nil: metrics are kept but not
	// registered.
	Registerer prometheus.Registerer
	// Observer of handled requests. Nil: none.
	Observer Observer
}

// Server is a DHCPv4 server: sockets, worker pool and de-duplication around
// a Handler.
type Server struct {
	cfg     Config
	handler *Handler
	log     *zap.Logger
	m       *metrics

	mu    sync.Mutex
	conns []*listener

	ifMu    sync.Mutex
	ifAddrs map[int]ifAddr
}

type listener struct {
	pc   *ipv4.PacketConn
	raw  net.PacketConn
	rc   syscall.RawConn // for ioctls in the socket's network namespace
	boot bool            // proxyDHCP boot-server socket (4011)

	// The subnets of the socket's namespace's addresses (localPrefixes),
	// asked at most once per ifCacheTTL.
	attachedMu sync.Mutex
	attached   []netip.Prefix
	attachedAt time.Time
}

type ifAddr struct {
	name    string
	ip      net.IP
	fetched time.Time
}

// ifCacheTTL bounds how long an interface's name and address are trusted.
const ifCacheTTL = 5 * time.Second

// dedupKey identifies a request and its retransmits.
type dedupKey struct {
	mac [16]byte
	xid dhcpv4.TransactionID
	mt  dhcpv4.MessageType
}

type job struct {
	req   *dhcpv4.DHCPv4
	key   dedupKey
	l     *listener
	peer  *net.UDPAddr
	ifidx int
	dst   net.IP
	start time.Time
}

// New checks cfg and builds a Server; it opens no socket.
func New(cfg Config) (*Server, error) {
	switch cfg.Mode {
	case "", ModeReservation, ModeProxy, ModeOff:
	default:
		return nil, fmt.Errorf("dhcpd: config: unknown mode %q (want %s)", cfg.Mode, ModesText())
	}
	if cfg.ServerIP != nil && cfg.ServerIP.To4() == nil {
		return nil, fmt.Errorf("dhcpd: config: server IP %v is not IPv4", cfg.ServerIP)
	}
	if cfg.Addr == "" {
		cfg.Addr = "0.0.0.0:67"
	}
	if cfg.ClientPort == 0 {
		cfg.ClientPort = dhcpv4.ClientPort
	}
	if cfg.RelayPort == 0 {
		cfg.RelayPort = dhcpv4.ServerPort
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 1024
	}
	if cfg.StaleAfter == 0 {
		cfg.StaleAfter = defaultStaleAfter
	}
	if cfg.ReadBuffer == 0 {
		cfg.ReadBuffer = 4 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("dhcpd: register metrics: %w", err)
	}
	return &Server{
		cfg: cfg, handler: NewHandler(cfg), log: cfg.Logger, m: m,
		ifAddrs: map[int]ifAddr{},
	}, nil
}

// Listen opens the sockets (Addr, and ProxyAddr in ModeProxy). It fails with
// an error wrapping ErrPortInUse when the port is taken. Serve calls it when
// it has not been called.
func (s *Server) Listen(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) > 0 {
		return nil
	}
	addrs := []string{s.cfg.Addr}
	if s.cfg.Mode == ModeProxy {
		pa := s.cfg.ProxyAddr
		if pa == "" {
			host, _, err := net.SplitHostPort(s.cfg.Addr)
			if err != nil {
				return fmt.Errorf("dhcpd: listen address %q: %w", s.cfg.Addr, err)
			}
			pa = net.JoinHostPort(host, fmt.Sprint(PXEPort))
		}
		addrs = append(addrs, pa)
	}
	for i, a := range addrs {
		l, err := s.listen(ctx, a, i == 1)
		if err != nil {
			for _, c := range s.conns {
				c.raw.Close()
			}
			s.conns = nil
			return err
		}
		s.conns = append(s.conns, l)
	}
	return nil
}

func (s *Server) listen(ctx context.Context, addr string, boot bool) (*listener, error) {
	iface, rbuf := s.cfg.Interface, s.cfg.ReadBuffer
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			// No SO_REUSEADDR / SO_REUSEPORT: a second server must fail.
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BROADCAST, 1); serr != nil {
				return
			}
			if iface != "" {
				if serr = unix.SetsockoptString(int(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE, iface); serr != nil {
					return
				}
			}
			if rbuf > 0 {
				// FORCE needs CAP_NET_ADMIN; otherwise the kernel caps the
				// size at net.core.rmem_max, which is still better than nothing.
				if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rbuf) != nil {
					_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, rbuf)
				}
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	raw, err := lc.ListenPacket(ctx, "udp4", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("dhcpd: listen on %s (interface %q): %w: %w", addr, iface, ErrPortInUse, err)
		}
		return nil, fmt.Errorf("dhcpd: listen on %s (interface %q): %w", addr, iface, err)
	}
	pc := ipv4.NewPacketConn(raw)
	if err := pc.SetControlMessage(ipv4.FlagInterface|ipv4.FlagDst, true); err != nil {
		raw.Close()
		return nil, fmt.Errorf("dhcpd: enable IP_PKTINFO on %s: %w", addr, err)
	}
	rc, err := raw.(syscall.Conn).SyscallConn()
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("dhcpd: socket of %s: %w", addr, err)
	}
	return &listener{pc: pc, raw: raw, rc: rc, boot: boot}, nil
}

// LocalAddrs returns the bound addresses (after Listen), DHCP port first.
func (s *Server) LocalAddrs() []*net.UDPAddr {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*net.UDPAddr
	for _, c := range s.conns {
		out = append(out, c.raw.LocalAddr().(*net.UDPAddr))
	}
	return out
}

// Serve listens (if Listen was not called) and answers requests until ctx is
// cancelled; then it closes the sockets, lets the workers finish and returns
// nil. Errors are returned only when the sockets cannot be opened or fail.
func (s *Server) Serve(ctx context.Context) error {
	if err := s.Listen(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	conns := s.conns
	s.mu.Unlock()

	// The requests waiting for a worker. A retransmit of one of them is dropped (the copy in the
	// queue will be answered); once a worker takes a request, its retransmits are queued and
	// answered again, as RFC 2131 servers answer retransmits, so a reply lost on the way (a full
	// shaped queue, a descheduled client) costs the client one retransmit interval, never its lease.
	queue := newJobQueue(s.cfg.QueueSize, s.cfg.StaleAfter)
	workers := s.startWorkers(ctx, queue)

	readErr := make(chan error, len(conns))
	var readers sync.WaitGroup
	for _, l := range conns {
		readers.Add(1)
		go func() {
			defer readers.Done()
			readErr <- s.read(ctx, l, queue)
		}()
	}
	s.log.Info("dhcp server started", zap.String("mode", string(s.handler.mode)),
		zap.Stringer("addr", conns[0].raw.LocalAddr()), zap.String("interface", s.cfg.Interface),
		zap.Int("workers", s.cfg.Workers))

	var err error
	select {
	case <-ctx.Done():
	case err = <-readErr:
	}
	for _, l := range conns {
		l.raw.Close()
	}
	readers.Wait()
	queue.close()
	workers.Wait()
	s.mu.Lock()
	s.conns = nil
	s.mu.Unlock()
	s.log.Info("dhcp server stopped")
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// startWorkers starts the workers, which serve queue until it is closed and empty.
func (s *Server) startWorkers(ctx context.Context, queue *jobQueue) *sync.WaitGroup {
	// Queued requests are finished after ctx ends, so workers get a context
	// that is never cancelled.
	wctx := context.WithoutCancel(ctx)
	var workers sync.WaitGroup
	for i := 0; i < s.cfg.Workers; i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				j, ok := queue.pop(wctx, time.Now, s.dropQueued)
				if !ok {
					return
				}
				s.m.queue.Dec()
				s.m.queueWait.WithLabelValues(class(j.key.mt)).Observe(time.Since(j.start).Seconds())
				s.work(wctx, j)
			}
		}()
	}
	return &workers
}

// read receives packets on l (up to readBatch per recvmmsg call) and queues
// them until the socket is closed. Buffers are reused: parsing copies.
func (s *Server) read(ctx context.Context, l *listener, queue *jobQueue) error {
	const readBatch = 32
	msgs := make([]ipv4.Message, readBatch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 1500)}
		msgs[i].OOB = ipv4.NewControlMessage(ipv4.FlagInterface | ipv4.FlagDst)
	}
	for {
		n, err := l.pc.ReadBatch(msgs, 0)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("dhcpd: read on %s: %w", l.raw.LocalAddr(), err)
		}
		start := time.Now()
		for i := 0; i < n; i++ {
			m := &msgs[i]
			var cm ipv4.ControlMessage
			if m.NN > 0 {
				if err := cm.Parse(m.OOB[:m.NN]); err != nil {
					s.log.Debug("bad control message", zap.Error(err))
				}
			}
			s.enqueue(m.Buffers[0][:m.N], &cm, m.Addr, l, start, queue)
		}
	}
}

// enqueue parses one datagram and queues it for a worker unless it is
// malformed, a retransmit of a request still waiting in the queue, or the
// queue is full of requests that go first.
func (s *Server) enqueue(b []byte, cm *ipv4.ControlMessage, peer net.Addr, l *listener, start time.Time, queue *jobQueue) {
	req, err := parse(b)
	if err != nil {
		s.m.drops.WithLabelValues(string(OutcomeMalformed)).Inc()
		s.m.packets.WithLabelValues("unknown", string(OutcomeMalformed)).Inc()
		s.log.Debug("dropping malformed DHCP packet", zap.Any("peer", peer), zap.Int("bytes", len(b)), zap.Error(err))
		return
	}
	j := job{req: req, l: l, start: start}
	j.peer, _ = peer.(*net.UDPAddr)
	if cm != nil {
		j.ifidx, j.dst = cm.IfIndex, cm.Dst
	}
	copy(j.key.mac[:], req.ClientHWAddr)
	j.key.xid, j.key.mt = req.TransactionID, req.MessageType()

	res, displaced := queue.push(j, start)
	switch res {
	case pushQueued:
		if displaced != nil {
			s.drop(displaced.req, OutcomeQueueFull)
		} else {
			s.m.queue.Inc()
		}
	case pushDuplicate:
		s.drop(req, OutcomeDuplicate)
	case pushFull:
		s.drop(req, OutcomeQueueFull)
	}
}

// drop counts a request dropped before a worker handled it.
func (s *Server) drop(req *dhcpv4.DHCPv4, o Outcome) {
	s.count(req, o)
	s.m.drops.WithLabelValues(string(o)).Inc()
}

// dropQueued counts a request the queue skipped because its client no longer waits for the answer.
func (s *Server) dropQueued(d dropped) {
	s.m.queue.Dec()
	s.drop(d.j.req, d.why)
	if ce := s.log.Check(zap.DebugLevel, "dropping queued DHCP request"); ce != nil {
		ce.Write(s.requestFields(d.j, Decision{}, zap.String("outcome", string(d.why)),
			zap.Duration("waited", time.Since(d.j.start)))...)
	}
}

// parse decodes a datagram, refusing what dhcpv4 accepts but no client sends.
func parse(b []byte) (req *dhcpv4.DHCPv4, err error) {
	defer func() {
		// dhcpv4 is well tested, but a server must not die on a packet.
		if r := recover(); r != nil {
			req, err = nil, fmt.Errorf("panic while parsing: %v", r)
		}
	}()
	req, err = dhcpv4.FromBytes(b)
	if err != nil {
		return nil, err
	}
	if req.OpCode != dhcpv4.OpcodeBootRequest {
		return nil, fmt.Errorf("op code %v is not BOOTREQUEST", req.OpCode)
	}
	if l := len(req.ClientHWAddr); l == 0 || l > 16 {
		return nil, fmt.Errorf("hardware address length %d", l)
	}
	if req.MessageType() == dhcpv4.MessageTypeNone {
		return nil, errors.New("no DHCP message type (BOOTP is not served)")
	}
	return req, nil
}

func (s *Server) count(req *dhcpv4.DHCPv4, o Outcome) {
	s.m.packets.WithLabelValues(req.MessageType().String(), string(o)).Inc()
}

// work handles one request on a worker.
func (s *Server) work(ctx context.Context, j job) {
	defer func() {
		if r := recover(); r != nil {
			s.count(j.req, OutcomeError)
			s.m.drops.WithLabelValues(string(OutcomeError)).Inc()
			s.log.Error("panic while handling DHCP request", s.requestFields(j, Decision{}, zap.Any("panic", r))...)
		}
	}()
	sip := s.serverIP(j)
	if sip == nil {
		s.count(j.req, OutcomeError)
		s.m.drops.WithLabelValues(string(OutcomeError)).Inc()
		s.log.Warn("no IPv4 address to answer from", s.requestFields(j, Decision{})...)
		return
	}
	in := Ingress{ServerIP: sip, BootServer: j.l.boot}
	if !unspecified(j.req.GatewayIPAddr) {
		in.Attached = s.attached(j.l) // only a relayed request needs them
	}
	d := s.handler.Handle(ctx, j.req, in)
	if d.Reason != "" {
		s.m.refused.WithLabelValues(d.Reason).Inc()
	}
	if d.Err != nil {
		s.log.Warn("DHCP request failed", s.requestFields(j, d, zap.Error(d.Err))...)
		s.m.drops.WithLabelValues(string(OutcomeError)).Inc()
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.OnDHCP(j.req.ClientHWAddr, j.req.MessageType(), d.Outcome, d.IP, KindOf(j.req, s.cfg.Boot.IPXEUserClass))
	}
	if d.Reply != nil && !s.send(j, d, sip) {
		return
	}
	s.count(j.req, d.Outcome)
	if ce := s.log.Check(zap.DebugLevel, "DHCP request"); ce != nil {
		f := s.requestFields(j, d, zap.String("outcome", string(d.Outcome)), zap.Stringer("ip", d.IP), zap.Stringer("giaddr", j.req.GatewayIPAddr))
		if d.Reason != "" {
			f = append(f, zap.String("reason", d.Reason), zap.Stringer("ciaddr", j.req.ClientIPAddr), zap.Any("peer", j.peer))
		}
		ce.Write(f...)
	}
}

// send sends d's reply to where RFC 2131 says it goes and reports whether it went; a failure is
// counted and told to the observer.
func (s *Server) send(j job, d Decision, sip net.IP) bool {
	rt := RouteReply(j.req, d.Reply, Arrival{Peer: j.peer, IfIndex: j.ifidx, BootServer: j.l.boot}, s.cfg.ClientPort, s.cfg.RelayPort)
	if rt.Delivery == DeliverUnicast {
		rt = s.prepareUnicast(j.l, rt)
	}
	cm := &ipv4.ControlMessage{IfIndex: rt.IfIndex}
	if rt.IfIndex != 0 {
		cm.Src = sip
	}
	if _, err := j.l.pc.WriteTo(d.Reply.ToBytes(), cm, rt.Addr); err != nil {
		if ce := s.log.Check(zap.DebugLevel, "sending DHCP reply failed"); ce != nil {
			ce.Write(s.requestFields(j, d, zap.Stringer("to", rt.Addr), zap.String("delivery", string(rt.Delivery)), zap.Error(err))...)
		}
		s.count(j.req, OutcomeSendFailed)
		s.m.drops.WithLabelValues(string(OutcomeSendFailed)).Inc()
		if s.cfg.Observer != nil {
			s.cfg.Observer.OnDHCP(j.req.ClientHWAddr, j.req.MessageType(), OutcomeSendFailed, d.IP, KindOf(j.req, s.cfg.Boot.IPXEUserClass))
		}
		return false
	}
	s.m.replies.WithLabelValues(string(rt.Delivery)).Inc()
	s.m.latency.Observe(time.Since(j.start).Seconds())
	return true
}

// attached returns the subnets the server is attached to in l's network
// namespace, asked at most once per ifCacheTTL. When they cannot be read the
// check is skipped (the other checks of a giaddr still apply) rather than
// every relayed request refused.
func (s *Server) attached(l *listener) []netip.Prefix {
	l.attachedMu.Lock()
	defer l.attachedMu.Unlock()
	if !l.attachedAt.IsZero() && time.Since(l.attachedAt) < ifCacheTTL {
		return l.attached
	}
	p, err := localPrefixes(l.rc)
	if err != nil {
		s.log.Debug("cannot list the server's addresses; relays inside its subnets are not recognised", zap.Error(err))
	}
	l.attached, l.attachedAt = p, time.Now()
	return p
}

// requestFields are the fields every log line about request j carries, as an operator greps
// for them: the client's MAC, the transaction id, the message type, the interface it came in
// on and the node's name when known (the server's name comes with the Logger), then extra.
// Built only when a line is logged.
func (s *Server) requestFields(j job, d Decision, extra ...zap.Field) []zap.Field {
	f := []zap.Field{zap.Stringer("mac", j.req.ClientHWAddr), zap.String("xid", j.req.TransactionID.String()),
		zap.Stringer("type", j.req.MessageType())}
	if ifc := s.iface(j.l, j.ifidx).name; ifc != "" {
		f = append(f, zap.String("interface", ifc))
	}
	if d.Node != "" {
		f = append(f, zap.String("node", d.Node))
	}
	return append(f, extra...)
}

// serverIP is this server's identity for j: configured, else the unicast
// destination, else the arriving interface's first IPv4 address.
func (s *Server) serverIP(j job) net.IP {
	if s.cfg.ServerIP != nil {
		return s.cfg.ServerIP.To4()
	}
	if d := j.dst.To4(); d != nil && !d.Equal(net.IPv4bcast) && !d.IsUnspecified() && !d.IsMulticast() {
		return d
	}
	return s.iface(j.l, j.ifidx).ip
}

// prepareUnicast installs the neighbour entry a DeliverUnicast route needs;
// when it cannot (no CAP_NET_ADMIN, a full neighbour table, an interface
// that has gone), the reply is broadcast instead, as before unicast existed.
func (s *Server) prepareUnicast(l *listener, rt Route) Route {
	name := s.iface(l, rt.IfIndex).name
	err := setNeighbour(l.rc, name, rt.Addr.IP, rt.HWAddr)
	if err == nil {
		return rt
	}
	s.m.unicastFallbacks.Inc()
	if ce := s.log.Check(zap.DebugLevel, "unicast reply not possible; broadcasting"); ce != nil {
		ce.Write(zap.Stringer("to", rt.Addr), zap.Stringer("mac", rt.HWAddr), zap.Error(err))
	}
	return Route{Delivery: DeliverBroadcast, Addr: &net.UDPAddr{IP: net.IPv4bcast, Port: rt.Addr.Port}, IfIndex: rt.IfIndex}
}

// iface returns the name and first IPv4 address of interface ifidx, asked
// through l's socket so that the answer comes from the socket's network
// namespace (the process's threads may be in another one). Answers are
// cached for ifCacheTTL; a failed lookup gives zero fields.
func (s *Server) iface(l *listener, ifidx int) ifAddr {
	if ifidx == 0 {
		return ifAddr{}
	}
	s.ifMu.Lock()
	defer s.ifMu.Unlock()
	if a, ok := s.ifAddrs[ifidx]; ok && time.Since(a.fetched) < ifCacheTTL {
		return a
	}
	a := ifAddr{fetched: time.Now()}
	_ = l.rc.Control(func(fd uintptr) {
		ifr, err := unix.NewIfreq("")
		if err != nil {
			return
		}
		ifr.SetUint32(uint32(ifidx))
		if unix.IoctlIfreq(int(fd), unix.SIOCGIFNAME, ifr) != nil {
			return
		}
		a.name = ifr.Name()
		if unix.IoctlIfreq(int(fd), unix.SIOCGIFADDR, ifr) != nil {
			return
		}
		if ip, err := ifr.Inet4Addr(); err == nil {
			a.ip = net.IP(ip).To4()
		}
	})
	s.ifAddrs[ifidx] = a
	return a
}
